"""Client CPU for one minute of full-duplex 24 kHz audio at 48 kHz devices: voxwire vs
openai-agents with its own audio handling, interleaved in one process run (issue 12, "Proof").

No network. Every 20 ms tick, on both sides:

* one server ``response.output_audio.delta`` text frame (20 ms of 24 kHz PCM16, base64) is taken
  in by the SDK's own receive path and the audio it yields goes into a playback buffer at 48 kHz;
* the speaker pulls one 20 ms buffer at 48 kHz (960 samples);
* the microphone gives one 20 ms block at 48 kHz (960 samples), resampled to 24 kHz and cut into
  20 ms frames, each sent through the SDK's own send path down to the JSON text frame that would
  go on the socket.

voxwire: ``RealtimeProtocol.receive_text`` (msgspec decode, base64 included, into a typed event;
the audio ledger counts it) -> ``events_received`` -> ``AudioOutput.push`` (Rust resampler
24 -> 48 kHz, ring, playback clock) -> ``AudioOutput.pull_into``; microphone ``AudioInput``
(Rust resampler 48 -> 24 kHz, 20 ms frames) -> ``send_input_audio`` -> ``data_to_send``.

openai-agents 0.24.0: the frames come out of an in-memory stand-in for the websocket read by
the model's own receive loop (``OpenAIRealtimeWebSocketModel._listen_for_messages``: json.loads,
the raw-event emit, pydantic validation of the server event, ``_handle_audio_delta``: base64
decode, audio tracker, ``RealtimeModelAudioEvent`` to the listeners). The model leaves
device-rate resampling and playback to the application, so the listener is what a user writes:
python-soxr (libsoxr, the usual choice in Python: fast, streaming, HQ by default) 24 -> 48 kHz
into a numpy ring the speaker pulls. Microphone: soxr 48 -> 24 kHz, cut into 20 ms frames, each
sent with the model's own ``send_event(RealtimeModelSendAudio(...))`` (append event built,
base64, ``model_dump_json``) to the stand-in socket, which only collects the text.

CPU is ``time.process_time`` around the minute (setup excluded), rounds alternate A, B, A, B ...
and the figures are medians over rounds.

    PYTHONPATH=python python benches/duplex_vs_openai_agents.py [--rounds 15] [--seconds 60]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see benches/conftest.py
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

import argparse
import asyncio
import base64
import json
import statistics
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from voxwire.audio import AudioInput, AudioOutput
from voxwire.protocol import RealtimeProtocol
from voxwire.protocol.server_events import ResponseOutputAudioDelta

MODEL_RATE_HZ = 24_000
DEVICE_RATE_HZ = 48_000
TICK_MS = 20
DEVICE_BLOCK = DEVICE_RATE_HZ * TICK_MS // 1000  # 960 samples per 20 ms at the devices
MODEL_FRAME = MODEL_RATE_HZ * TICK_MS // 1000  # 480 samples per 20 ms frame on the wire

Pcm = npt.NDArray[np.int16]


@dataclass(frozen=True)
class Workload:
    """The same input for both pipelines: the server's frames and the microphone's samples."""

    server_frames: list[str]
    voice: list[bytes]  # the PCM16 in each server frame, for the audio-only runs
    mic: Pcm

    @property
    def ticks(self) -> int:
        return len(self.server_frames)

    def mic_block(self, tick: int) -> Pcm:
        return self.mic[tick * DEVICE_BLOCK : (tick + 1) * DEVICE_BLOCK]


def make_workload(seconds: float) -> Workload:
    ticks = round(seconds * 1000 / TICK_MS)
    t = np.arange(ticks * MODEL_FRAME) / MODEL_RATE_HZ
    voice = (np.sin(2 * np.pi * 330 * t) * 8000).astype("<i2")
    frames, chunks = [], []
    for tick in range(ticks):
        pcm = voice[tick * MODEL_FRAME : (tick + 1) * MODEL_FRAME].tobytes()
        chunks.append(pcm)
        event = {
            "type": "response.output_audio.delta",
            "event_id": f"event_{tick}",
            "response_id": "resp_1",
            "item_id": "item_1",
            "output_index": 0,
            "content_index": 0,
            "delta": base64.b64encode(pcm).decode(),
        }
        frames.append(json.dumps(event))
    d = np.arange(ticks * DEVICE_BLOCK) / DEVICE_RATE_HZ
    mic = (np.sin(2 * np.pi * 220 * d) * 8000).astype(np.int16)
    return Workload(frames, chunks, mic)


@dataclass
class Tally:
    """What one pipeline did in one run: CPU, and counts to check both did the same work."""

    cpu_s: float = 0.0
    delta_bytes: int = 0  # decoded output audio handed to the application
    speaker_samples: int = 0  # audio samples (not silence) in the buffers the speaker pulled
    frames_sent: int = 0  # text frames that would go on the socket
    sent_chars: int = 0
    resampled_out: int = 0  # 48 kHz samples the output resampler made, after its flush
    frames_after_flush: int = 0  # 20 ms microphone frames, the last partial one padded
    errors: list[str] = field(default_factory=list)


# --- voxwire ------------------------------------------------------------------------------------


def run_voxwire(work: Workload) -> Tally:
    protocol = RealtimeProtocol(beta=False)
    output = AudioOutput(DEVICE_RATE_HZ)
    microphone = AudioInput(DEVICE_RATE_HZ)
    speaker = np.empty(DEVICE_BLOCK, dtype=np.int16)
    sent: list[str] = []
    tally = Tally()
    cpu0 = time.process_time()
    for tick, text in enumerate(work.server_frames):
        protocol.receive_text(text)
        for event in protocol.events_received():
            if isinstance(event, ResponseOutputAudioDelta):
                tally.delta_bytes += len(event.delta)
                output.push(event.item_id, event.content_index, event.delta)
        tally.speaker_samples += output.pull_into(speaker, 0.0)
        for frame in microphone.process(work.mic_block(tick)):
            protocol.send_input_audio(frame)
        sent.extend(protocol.data_to_send())
    tally.cpu_s = time.process_time() - cpu0
    tally.frames_sent, tally.sent_chars = len(sent), sum(map(len, sent))
    _flush_voxwire(output, microphone, tally)
    return tally


def run_voxwire_audio_only(work: Workload) -> Tally:
    """The breakdown: voxwire's audio half alone (PCM in, no protocol, no JSON out)."""
    output = AudioOutput(DEVICE_RATE_HZ)
    microphone = AudioInput(DEVICE_RATE_HZ)
    speaker = np.empty(DEVICE_BLOCK, dtype=np.int16)
    tally = Tally()
    cpu0 = time.process_time()
    for tick, pcm in enumerate(work.voice):
        output.push("item_1", 0, pcm)
        tally.speaker_samples += output.pull_into(speaker, 0.0)
        tally.frames_sent += len(microphone.process(work.mic_block(tick)))
    tally.cpu_s = time.process_time() - cpu0
    tally.delta_bytes = sum(map(len, work.voice))
    _flush_voxwire(output, microphone, tally)
    return tally


def _flush_voxwire(output: AudioOutput, microphone: AudioInput, tally: Tally) -> None:
    """Drain both resamplers (not timed) into the totals, as SoxrDevices.flush."""
    output.end("item_1", 0)
    tally.resampled_out = output.ring.pushed_samples
    tally.frames_after_flush = tally.frames_sent + len(microphone.flush())


# --- openai-agents + the application code it needs ----------------------------------------------


class PlaybackBuffer:
    """The playback buffer an openai-agents user writes: a numpy ring the device callback pulls
    from another thread (hence the lock), silence when it runs dry."""

    def __init__(self, capacity: int) -> None:
        self._buf = np.zeros(capacity, dtype=np.int16)
        self._read = 0
        self._write = 0
        self._lock = threading.Lock()

    def write(self, pcm: Pcm) -> None:
        n, cap = len(pcm), len(self._buf)
        with self._lock:
            if self._write - self._read + n > cap:
                raise OverflowError("playback buffer full")
            start = self._write % cap
            first = min(n, cap - start)
            self._buf[start : start + first] = pcm[:first]
            self._buf[: n - first] = pcm[first:]
            self._write += n

    @property
    def written(self) -> int:
        return self._write

    def pull_into(self, out: Pcm) -> int:
        cap = len(self._buf)
        with self._lock:
            n = min(len(out), self._write - self._read)
            start = self._read % cap
            first = min(n, cap - start)
            out[:first] = self._buf[start : start + first]
            out[first:n] = self._buf[: n - first]
            self._read += n
        out[n:] = 0
        return n


class _FakeWebSocket:
    """In-memory stand-in for the model's websocket: yields the server's frames one per tick,
    running ``after_frame`` (the rest of the tick) once the model has handled each; collects
    what the model sends."""

    def __init__(self, frames: list[str], after_frame: Callable[[int], Awaitable[None]]) -> None:
        self._frames = frames
        self._after_frame = after_frame
        self.sent: list[str] = []

    async def _messages(self) -> AsyncIterator[str]:
        for tick, frame in enumerate(self._frames):
            yield frame
            await self._after_frame(tick)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._messages()

    async def send(self, payload: str) -> None:
        self.sent.append(payload)


class SoxrDevices:
    """The device-side audio code an openai-agents user writes for 48 kHz devices: soxr
    24 -> 48 kHz into the playback buffer, soxr 48 -> 24 kHz cut into 20 ms frames."""

    def __init__(self) -> None:
        import soxr  # type: ignore[import-untyped]

        self._up = soxr.ResampleStream(MODEL_RATE_HZ, DEVICE_RATE_HZ, 1, dtype="int16")
        self._down = soxr.ResampleStream(DEVICE_RATE_HZ, MODEL_RATE_HZ, 1, dtype="int16")
        self._playback = PlaybackBuffer(DEVICE_RATE_HZ * 120)
        self._speaker = np.empty(DEVICE_BLOCK, dtype=np.int16)
        self._pending = bytearray()

    def play(self, data: bytes) -> None:
        self._playback.write(self._up.resample_chunk(np.frombuffer(data, dtype="<i2")))

    def speaker_pull(self) -> int:
        return self._playback.pull_into(self._speaker)

    def microphone(self, block: Pcm) -> list[bytes]:
        self._pending.extend(self._down.resample_chunk(block).tobytes())
        frames = []
        while len(self._pending) >= 2 * MODEL_FRAME:
            frames.append(bytes(self._pending[: 2 * MODEL_FRAME]))
            del self._pending[: 2 * MODEL_FRAME]
        return frames

    def flush(self, tally: Tally) -> None:
        """Drain both resamplers (not timed) into the totals: 48 kHz samples made, and
        microphone frames with the last partial one padded."""
        empty = np.zeros(0, dtype=np.int16)
        tally.resampled_out = self._playback.written + len(self._up.resample_chunk(empty, True))
        tail = len(self._pending) // 2 + len(self._down.resample_chunk(empty, last=True))
        tally.frames_after_flush = tally.frames_sent + -(-tail // MODEL_FRAME)


async def _run_openai_agents(work: Workload) -> Tally:
    from agents.realtime.model import RealtimeModelListener
    from agents.realtime.model_events import (
        RealtimeModelAudioEvent,
        RealtimeModelErrorEvent,
        RealtimeModelEvent,
        RealtimeModelExceptionEvent,
    )
    from agents.realtime.model_inputs import RealtimeModelSendAudio
    from agents.realtime.openai_realtime import OpenAIRealtimeWebSocketModel

    tally = Tally()
    devices = SoxrDevices()
    model = OpenAIRealtimeWebSocketModel()

    class Player(RealtimeModelListener):
        async def on_event(self, event: RealtimeModelEvent) -> None:
            if isinstance(event, RealtimeModelAudioEvent):
                tally.delta_bytes += len(event.data)
                devices.play(event.data)
            elif isinstance(event, RealtimeModelErrorEvent | RealtimeModelExceptionEvent):
                tally.errors.append(repr(event))

    async def rest_of_tick(tick: int) -> None:
        tally.speaker_samples += devices.speaker_pull()
        for frame in devices.microphone(work.mic_block(tick)):
            await model.send_event(RealtimeModelSendAudio(audio=frame))

    socket = _FakeWebSocket(work.server_frames, rest_of_tick)
    model.add_listener(Player())
    model._websocket = socket  # type: ignore[assignment]  # the stand-in (no connect)
    cpu0 = time.process_time()
    await model._listen_for_messages()  # type: ignore[no-untyped-call]
    tally.cpu_s = time.process_time() - cpu0
    tally.frames_sent, tally.sent_chars = len(socket.sent), sum(map(len, socket.sent))
    devices.flush(tally)
    return tally


def run_openai_agents(work: Workload) -> Tally:
    return asyncio.run(_run_openai_agents(work))


def run_soxr_audio_only(work: Workload) -> Tally:
    """The breakdown: the user's soxr device code alone (PCM in, no SDK, no JSON out)."""
    devices = SoxrDevices()
    tally = Tally()
    cpu0 = time.process_time()
    for tick, pcm in enumerate(work.voice):
        devices.play(pcm)
        tally.speaker_samples += devices.speaker_pull()
        tally.frames_sent += len(devices.microphone(work.mic_block(tick)))
    tally.cpu_s = time.process_time() - cpu0
    tally.delta_bytes = sum(map(len, work.voice))
    devices.flush(tally)
    return tally


# --- the comparison -----------------------------------------------------------------------------

PIPELINES: dict[str, Callable[[Workload], Tally]] = {
    "voxwire": run_voxwire,
    "openai-agents + soxr": run_openai_agents,
    "voxwire audio only": run_voxwire_audio_only,
    "soxr code only": run_soxr_audio_only,
}
VOXWIRE, PEER = "voxwire", "openai-agents + soxr"


def compare(seconds: float, rounds: int) -> dict[str, list[Tally]]:
    work = make_workload(seconds)
    warm = make_workload(1.0)
    for run in PIPELINES.values():  # imports, pydantic adapters, first-call costs
        run(warm)
    results: dict[str, list[Tally]] = {name: [] for name in PIPELINES}
    names = list(PIPELINES)
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            results[name].append(PIPELINES[name](work))
    return results


def check_same_work(results: dict[str, list[Tally]], ticks: int) -> None:
    """Both pipelines took in the same audio and made the same audio out (every round)."""
    ring_out = 2 * DEVICE_RATE_HZ // 1000  # voxwire's flush adds its filter ring-out (< 2 ms)
    for tallies in results.values():
        for tally in tallies:
            assert tally.errors == [], tally.errors
            assert tally.delta_bytes == ticks * MODEL_FRAME * 2, tally
            assert 0 <= tally.resampled_out - ticks * DEVICE_BLOCK <= ring_out, tally
            assert tally.frames_after_flush in (ticks, ticks + 1), tally
            # Within the minute each side lags by its resampler delay or prebuffer (< 3 ticks).
            assert ticks - 3 <= tally.frames_sent <= ticks, tally
            assert (ticks - 3) * DEVICE_BLOCK <= tally.speaker_samples <= ticks * DEVICE_BLOCK


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    results = compare(args.seconds, args.rounds)
    ticks = round(args.seconds * 1000 / TICK_MS)
    check_same_work(results, ticks)
    minutes = args.seconds / 60
    medians = {n: statistics.median(t.cpu_s for t in ts) / minutes for n, ts in results.items()}
    print(f"{ticks} ticks of {TICK_MS} ms, 48 kHz devices, {args.rounds} rounds interleaved")
    print(f"{'pipeline':<22} {'CPU s/min':>9} {'µs/tick':>8}  spread s/min  frames sent  played")
    for name, tallies in results.items():
        cpus = sorted(t.cpu_s / minutes for t in tallies)
        first = tallies[0]
        print(
            f"{name:<22} {medians[name]:9.3f} {medians[name] * minutes / ticks * 1e6:8.1f}"
            f"  {cpus[0]:.3f}-{cpus[-1]:.3f}  {first.frames_sent:>11}  {first.speaker_samples}"
        )
    vox = [t.cpu_s for t in results[VOXWIRE]]
    peer = [t.cpu_s for t in results[PEER]]
    paired = statistics.median(p / v for p, v in zip(peer, vox, strict=True))
    print(
        f"ratio openai-agents / voxwire: {medians[PEER] / medians[VOXWIRE]:.2f}x"
        f" (median of per-round ratios {paired:.2f}x)"
    )
    for full, audio in ((VOXWIRE, "voxwire audio only"), (PEER, "soxr code only")):
        sdk = medians[full] - medians[audio]
        print(f"{full}: SDK part (full - audio only) {sdk:.3f} s/min")


if __name__ == "__main__":
    main()
