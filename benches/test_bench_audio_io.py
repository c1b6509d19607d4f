"""Audio I/O path benchmarks: a received delta until its samples are playable in the ring, and
one 20 ms tick of the full-duplex pipeline (microphone frame in, speaker buffers out).

    pytest benches/test_bench_audio_io.py --benchmark-only --benchmark-group-by=group

p50/p99 per delta and CPU for one minute of full-duplex audio: ``python benches/audio_io.py``.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest

from voxwire.audio import AudioInput, AudioOutput

DELTA_MS = (20, 40)
DEVICE_RATES_HZ = (24_000, 48_000)


def delta_b64(ms: int) -> str:
    rng = np.random.default_rng(ms)
    pcm = rng.integers(-8000, 8000, 24 * ms).astype("<i2")
    return base64.b64encode(pcm.tobytes()).decode()


@pytest.mark.parametrize("device_rate_hz", DEVICE_RATES_HZ)
@pytest.mark.parametrize("ms", DELTA_MS)
def test_delta_to_playable(benchmark, ms: int, device_rate_hz: int) -> None:  # type: ignore[no-untyped-def]
    """base64 text of a delta -> decoded -> (resampled) -> in the ring, tagged with its item."""
    benchmark.group = f"delta to playable: {ms} ms delta, {device_rate_hz} Hz device"
    out = AudioOutput(device_rate_hz, capacity_ms=2_000)
    text = delta_b64(ms)
    drain = np.empty(device_rate_hz * ms // 1000 * 2, dtype=np.int16)

    def setup() -> None:
        out.ring.pop_into(drain)  # keep the ring from filling (not timed)

    def one() -> None:
        out.push("item_1", 0, base64.b64decode(text))

    benchmark.pedantic(one, setup=setup, rounds=3000, warmup_rounds=100)


def test_full_duplex_tick_48k(benchmark) -> None:  # type: ignore[no-untyped-def]
    """One 20 ms tick at a 48 kHz device: 2 x 10 ms microphone blocks through AudioInput to
    24 kHz frames, one 20 ms delta into AudioOutput, 2 x 10 ms speaker buffers pulled."""
    benchmark.group = "full duplex tick, 48 kHz devices"
    pipeline = AudioInput(48_000, on_frame=lambda frame: None)
    out = AudioOutput(48_000, prebuffer_ms=0)
    mic = (np.sin(np.arange(480) * 0.05) * 8000).astype(np.int16)
    delta = base64.b64decode(delta_b64(20))
    speaker = np.empty(480, dtype=np.int16)
    out.push("item_1", 0, delta)

    def tick() -> None:
        pipeline.process(mic)
        pipeline.process(mic)
        out.push("item_1", 0, delta)
        out.pull_into(speaker, 0.0)
        out.pull_into(speaker, 0.0)

    benchmark(tick)
