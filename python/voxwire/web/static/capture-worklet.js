// The microphone side: the context's input, at the context's rate, as PCM16 frames of
// `frameSamples` samples, posted to the page, which sends them to the Python side (where they
// are resampled to the session's 24 kHz).
class VoxwireCapture extends AudioWorkletProcessor {
  constructor(options) {
    super();
    this.size = options.processorOptions.frameSamples;
    this.frame = new Int16Array(this.size);
    this.filled = 0;
  }

  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (!channel) return true;
    for (let i = 0; i < channel.length; i++) {
      const s = Math.max(-1, Math.min(1, channel[i]));
      this.frame[this.filled++] = s < 0 ? s * 32768 : s * 32767;
      if (this.filled === this.size) {
        this.port.postMessage(this.frame.buffer, [this.frame.buffer]);
        this.frame = new Int16Array(this.size);
        this.filled = 0;
      }
    }
    return true;
  }
}

registerProcessor("voxwire-capture", VoxwireCapture);
