"""Quick measurements of the audio path on this machine (``voxwire bench``, ``voxwire info``).

A few seconds in all, for a first look: the figures of record come from the pytest-benchmark
suites in ``benches/`` (benches/RESULTS.md). Each figure here is the median over rounds of the
mean time per 20 ms chunk, in µs; the resampler is compared with python-soxr (``HQ``, its
streaming API) when soxr is installed, timed in the same rounds, alternating.
"""

from __future__ import annotations

import base64
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from voxwire.audio import AudioOutput, PcmRing, Resampler, g711

__all__ = [
    "CONVERSIONS",
    "Row",
    "delta_to_playable",
    "rows",
    "stream_resampler",
]

CONVERSIONS = ((48000, 24000), (24000, 48000), (16000, 24000), (8000, 24000))


@dataclass(frozen=True)
class Row:
    """One line of the table: what, µs per 20 ms chunk (median), and a peer's figure."""

    what: str
    us: float
    peer: str = ""
    peer_us: float | None = None

    @property
    def ratio(self) -> float | None:
        """The peer's time over ours (> 1: voxwire is faster)."""
        return None if self.peer_us is None else self.peer_us / self.us


def _noise(rate_hz: int, seconds: float = 1.0) -> npt.NDArray[np.int16]:
    rng = np.random.default_rng(rate_hz)
    return (rng.standard_normal(int(rate_hz * seconds)) * 3000).astype(np.int16)


def stream_resampler(
    resampler: Callable[[npt.NDArray[np.int16]], npt.NDArray[np.int16]],
    signal: npt.NDArray[np.int16],
    chunk: int,
) -> tuple[int, float]:
    """Feed ``signal`` in chunks; returns (samples produced, seconds taken)."""
    t0 = time.perf_counter()
    produced = sum(len(resampler(signal[i : i + chunk])) for i in range(0, len(signal), chunk))
    return produced, time.perf_counter() - t0


def _median_us(per_round: list[float], chunks: int) -> float:
    return statistics.median(per_round) / chunks * 1e6


def _resampler_row(in_hz: int, out_hz: int, rounds: int) -> Row:
    signal = _noise(in_hz)
    chunk = in_hz // 50
    ours: list[float] = []
    theirs: list[float] = []
    soxr = _soxr()
    for _ in range(rounds):
        ours.append(stream_resampler(Resampler(in_hz, out_hz).process, signal, chunk)[1])
        if soxr is not None:
            stream = soxr.ResampleStream(in_hz, out_hz, 1, dtype="int16", quality="HQ")
            theirs.append(stream_resampler(stream.resample_chunk, signal, chunk)[1])
    what = f"resample {in_hz}->{out_hz} (hq)"
    us = _median_us(ours, 50)
    if soxr is None:
        return Row(what, us, "soxr not installed")
    return Row(what, us, "soxr HQ", _median_us(theirs, 50))


def _soxr() -> Any:
    """python-soxr if installed (the peer; an optional dependency, untyped), else None."""
    try:
        import soxr  # type: ignore[import-untyped]
    except ImportError:
        return None
    return soxr


def _timed_rounds(step: Callable[[], object], per_round: int, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(per_round):
            step()
        times.append(time.perf_counter() - t0)
    return _median_us(times, per_round)


def _ring_row(rounds: int) -> Row:
    ring = PcmRing(24_000)
    chunk = _noise(24_000, 0.02)
    out = np.empty(len(chunk), dtype=np.int16)

    def step() -> None:
        ring.push(chunk)
        ring.pop_into(out)

    return Row("ring push + pop, 20 ms at 24 kHz", _timed_rounds(step, 200, rounds))


def delta_to_playable(ms: int, device_rate_hz: int, n: int = 20_000) -> tuple[float, float]:
    """A received delta's base64 text until its samples are playable in an
    :class:`AudioOutput`'s ring (decode, resample to the device rate, push): p50 and p99 in
    µs over ``n`` deltas (the first tenth is warm-up)."""
    rng = np.random.default_rng(1)
    text = base64.b64encode(rng.integers(-8000, 8000, 24 * ms).astype("<i2").tobytes()).decode()
    out = AudioOutput(device_rate_hz, capacity_ms=2_000)
    drain = np.empty(device_rate_hz * ms // 1000 * 2, dtype=np.int16)
    times = np.empty(n, dtype=np.int64)
    clock = time.perf_counter_ns
    for i in range(n):
        out.ring.pop_into(drain)
        t0 = clock()
        out.push("item_1", 0, base64.b64decode(text))
        times[i] = clock() - t0
    times = times[n // 10 :]  # warm-up
    return float(np.percentile(times, 50)) / 1000, float(np.percentile(times, 99)) / 1000


def _g711_rows(rounds: int) -> Iterator[Row]:
    pcm = _noise(8_000, 0.02)
    for name, encode, decode in (
        ("mu-law", g711.ulaw_encode, g711.ulaw_decode),
        ("A-law", g711.alaw_encode, g711.alaw_decode),
    ):
        coded = encode(pcm)
        encoding = partial(encode, pcm)
        decoding = partial(decode, coded)
        yield Row(f"G.711 {name} encode, 20 ms", _timed_rounds(encoding, 500, rounds))
        yield Row(f"G.711 {name} decode, 20 ms", _timed_rounds(decoding, 500, rounds))


def rows(rounds: int = 15) -> Iterator[Row]:
    """The table, row by row (each measured when asked for)."""
    for in_hz, out_hz in CONVERSIONS:
        yield _resampler_row(in_hz, out_hz, rounds)
    yield _ring_row(rounds)
    for device_rate_hz in (24_000, 48_000):
        p50, p99 = delta_to_playable(20, device_rate_hz, n=3_000)
        what = f"delta -> playable, 20 ms delta, {device_rate_hz // 1000} kHz device"
        yield Row(what, p50, "p99", p99)
    yield from _g711_rows(rounds)


def print_table(rounds: int = 15) -> list[Row]:
    """Print :func:`rows` as they are measured; the rows."""
    print(f"{'measurement':<48}{'us':>9}   {'peer / other':<20}{'us':>9}{'ratio':>8}")
    measured: list[Row] = []
    for row in rows(rounds):
        measured.append(row)
        peer = "" if row.peer_us is None else f"{row.peer_us:>9.2f}"
        ratio = "" if row.ratio is None or row.peer == "p99" else f"{row.ratio:>7.2f}x"
        print(f"{row.what:<48}{row.us:>9.2f}   {row.peer:<20}{peer:>9}{ratio:>8}", flush=True)
    return measured
