"""Audio I/O figures for benches/RESULTS.md:

1. delta received -> samples playable in the ring: p50 / p99 over many deltas (base64 decode,
   PlaybackSink decode/resample, PlaybackClock push), 20 and 40 ms deltas, 24 and 48 kHz devices;
2. CPU for one minute of full-duplex audio at 48 kHz devices: microphone blocks (10 ms) through
   AudioInput to 24 kHz 20 ms frames, 20 ms assistant deltas through AudioOutput, 10 ms device
   buffers pulled — run as fast as possible, measured with process CPU time.

    PYTHONPATH=python python benches/audio_io.py
"""

from __future__ import annotations

import base64
import time

import numpy as np

from voxwire.audio import AudioInput, AudioOutput
from voxwire.bench import delta_to_playable


def full_duplex_cpu(seconds: int = 60, device_rate_hz: int = 48_000) -> float:
    """CPU seconds to move ``seconds`` of audio each way."""
    frames: list[bytes] = []
    pipeline = AudioInput(device_rate_hz, on_frame=frames.append)
    out = AudioOutput(device_rate_hz, prebuffer_ms=40)
    block = device_rate_hz // 100
    t = np.arange(seconds * device_rate_hz)
    mic = (np.sin(2 * np.pi * 220 * t / device_rate_hz) * 8000).astype(np.int16)
    voice = (np.sin(2 * np.pi * 330 * np.arange(seconds * 24_000) / 24_000) * 8000).astype("<i2")
    deltas = [
        base64.b64encode(voice[i : i + 480].tobytes()).decode() for i in range(0, len(voice), 480)
    ]
    speaker = np.empty(block, dtype=np.int16)
    cpu0 = time.process_time()
    for tick, text in enumerate(deltas):  # one 20 ms tick: one delta, 2 mic blocks, 2 buffers
        out.push("item_1", 0, base64.b64decode(text))
        for half in (0, 1):
            start = (2 * tick + half) * block
            pipeline.process(mic[start : start + block])
            out.pull_into(speaker, 0.0)
        if tick % 50 == 0:
            frames.clear()
    return time.process_time() - cpu0


def main() -> None:
    print("delta -> playable (µs)      p50      p99")
    for device_rate_hz in (24_000, 48_000):
        for ms in (20, 40):
            p50, p99 = delta_to_playable(ms, device_rate_hz)
            print(f"{ms:>3} ms delta, {device_rate_hz} Hz  {p50:7.2f}  {p99:7.2f}")
    runs = sorted(full_duplex_cpu() for _ in range(3))
    print(
        f"full duplex, 60 s each way at 48 kHz devices: CPU {runs[1]:.3f} s (median of 3; "
        f"{runs[1] / 60 * 100:.2f} % of one core)"
    )


if __name__ == "__main__":
    main()
