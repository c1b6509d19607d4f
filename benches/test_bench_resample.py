"""Resampler benchmarks, voxwire side by side with soxr, libsamplerate and scipy.

    pytest benches/test_bench_resample.py --benchmark-only --benchmark-group-by=param:conversion

Streaming: 1 s of audio in 20 ms int16 chunks through each library's streaming API (soxr
ResampleStream, samplerate.Resampler; libsamplerate works in float32, so its conversion is
included). One-shot: 1 s in one call (scipy.signal.resample_poly has no streaming form).
Paired throughput ratios and per-chunk latency: benches/compare_resamplers.py.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import samplerate
import soxr
from scipy import signal

from voxwire.audio import Resampler

CONVERSIONS = [
    "48000->24000",
    "44100->24000",
    "16000->24000",
    "24000->48000",
    "24000->16000",
    "8000->24000",
]


def rates(conversion: str) -> tuple[int, int]:
    a, b = conversion.split("->")
    return int(a), int(b)


def one_second(rate_hz: int) -> np.ndarray:
    rng = np.random.default_rng(rate_hz)
    t = np.arange(rate_hz) / rate_hz
    return (8000 * np.sin(2 * np.pi * 440 * t) + rng.standard_normal(rate_hz) * 2000).astype(
        np.int16
    )


def stream_voxwire(a: int, b: int, quality: str) -> Callable[[np.ndarray], object]:
    return Resampler(a, b, quality).process  # type: ignore[arg-type]


def stream_soxr(a: int, b: int, quality: str) -> Callable[[np.ndarray], object]:
    return soxr.ResampleStream(a, b, 1, dtype="int16", quality=quality).resample_chunk


def stream_samplerate(a: int, b: int, converter: str) -> Callable[[np.ndarray], object]:
    r = samplerate.Resampler(converter, channels=1)
    ratio = b / a
    return lambda c: r.process(c.astype(np.float32) / 32768, ratio)


STREAMERS = {
    "voxwire-fast": lambda a, b: stream_voxwire(a, b, "fast"),
    "voxwire-hq": lambda a, b: stream_voxwire(a, b, "hq"),
    "voxwire-vhq": lambda a, b: stream_voxwire(a, b, "vhq"),
    "soxr-QQ": lambda a, b: stream_soxr(a, b, "QQ"),
    "soxr-LQ": lambda a, b: stream_soxr(a, b, "LQ"),
    "soxr-MQ": lambda a, b: stream_soxr(a, b, "MQ"),
    "soxr-HQ": lambda a, b: stream_soxr(a, b, "HQ"),
    "soxr-VHQ": lambda a, b: stream_soxr(a, b, "VHQ"),
    "libsamplerate-sinc_fastest": lambda a, b: stream_samplerate(a, b, "sinc_fastest"),
    "libsamplerate-sinc_best": lambda a, b: stream_samplerate(a, b, "sinc_best"),
}


@pytest.mark.parametrize("library", list(STREAMERS))
@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_stream_20ms(benchmark, conversion: str, library: str) -> None:  # type: ignore[no-untyped-def]
    a, b = rates(conversion)
    x = one_second(a)
    n = a // 50
    chunks = [x[i : i + n] for i in range(0, a, n)]
    process = STREAMERS[library](a, b)

    def run() -> int:
        return sum(len(process(c)) for c in chunks)  # type: ignore[arg-type]

    produced = benchmark(run)
    # Each library returns about one second of output per second of input.
    assert abs(produced - b) < b * 0.1


def oneshot_voxwire(x: np.ndarray, a: int, b: int) -> np.ndarray:
    r = Resampler(a, b)
    return np.concatenate([r.process(x), r.flush()])


def oneshot_soxr(x: np.ndarray, a: int, b: int) -> np.ndarray:
    return soxr.resample(x, a, b, quality="HQ")


def oneshot_scipy(x: np.ndarray, a: int, b: int) -> np.ndarray:
    g = np.gcd(a, b)
    return signal.resample_poly(x.astype(np.float32), b // g, a // g)


ONESHOT = {
    "voxwire-hq": oneshot_voxwire,
    "soxr-HQ": oneshot_soxr,
    "scipy-resample_poly": oneshot_scipy,
}


@pytest.mark.parametrize("library", list(ONESHOT))
@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_oneshot_1s(benchmark, conversion: str, library: str) -> None:  # type: ignore[no-untyped-def]
    a, b = rates(conversion)
    x = one_second(a)
    y = benchmark(ONESHOT[library], x, a, b)
    assert abs(len(y) - b) < b * 0.1
