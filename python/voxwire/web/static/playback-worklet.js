// The speaker side: plays the session's audio and reports how far the listener has heard it.
//
// Each chunk comes with its position in the session's output ring (a RemoteOutput's
// sent_samples before it). Every render quantum notes which ring samples it rendered; the heard
// position is the ring position of the frame rendered `latency` frames ago (the page sets
// `latency` from AudioContext.baseLatency + outputLatency: audio rendered now reaches the ear
// that much later). A new heard position is posted to the page, which acknowledges it to the
// session: that acknowledgement is what moves the session's playback clock.
class VoxwirePlayback extends AudioWorkletProcessor {
  constructor() {
    super();
    this.queue = []; // {start: ring position, pcm: Int16Array}
    this.offset = 0; // samples of queue[0] already rendered
    this.frames = 0; // frames rendered since the start
    this.history = []; // {frame, ring, count}: ring samples rendered from frame `frame` on
    this.latency = 0; // frames between rendering and hearing
    this.reported = -1;
    this.port.onmessage = (event) => this.receive(event.data);
  }

  receive(message) {
    if (message.type === "chunk") {
      const start = new DataView(message.data, 0, 8).getFloat64(0, true);
      this.queue.push({ start, pcm: new Int16Array(message.data, 8) });
    } else if (message.type === "clear") {
      // Interrupted: what is queued is dropped, never heard.
      this.queue = [];
      this.offset = 0;
    } else if (message.type === "latency") {
      this.latency = Math.max(0, Math.round(message.frames));
    }
  }

  render(out) {
    let i = 0;
    let segment = null;
    while (i < out.length && this.queue.length > 0) {
      const chunk = this.queue[0];
      const ring = chunk.start + this.offset;
      if (segment === null || segment.ring + segment.count !== ring) {
        segment = { frame: this.frames + i, ring, count: 0 };
        this.history.push(segment);
      }
      const n = Math.min(out.length - i, chunk.pcm.length - this.offset);
      for (let k = 0; k < n; k++) out[i + k] = chunk.pcm[this.offset + k] / 32768;
      i += n;
      segment.count += n;
      this.offset += n;
      if (this.offset === chunk.pcm.length) {
        this.queue.shift();
        this.offset = 0;
      }
    }
    out.fill(0, i);
    return i;
  }

  heard() {
    // The ring position just after the last sample heard: rendered before frames - latency.
    const target = this.frames - this.latency;
    for (let h = this.history.length - 1; h >= 0; h--) {
      const seg = this.history[h];
      if (seg.frame < target) {
        if (h > 0) this.history.splice(0, h - 1); // older segments can no longer matter
        return seg.ring + Math.min(seg.count, target - seg.frame);
      }
    }
    return null;
  }

  process(inputs, outputs) {
    const out = outputs[0][0];
    const rendered = this.render(out);
    for (let c = 1; c < outputs[0].length; c++) outputs[0][c].set(out);
    this.frames += out.length;
    const heard = this.heard();
    if (heard !== null && heard > this.reported) {
      this.reported = heard;
      this.port.postMessage({ type: "played", position: heard, frame: this.frames, rendered });
    }
    return true;
  }
}

registerProcessor("voxwire-playback", VoxwirePlayback);
