"""Side-by-side resampler comparison: paired throughput ratios and per-chunk latency.

Run:  OPENBLAS_NUM_THREADS=1 python benches/compare_resamplers.py [--rounds 41] [--markdown]

Streaming: 20 ms int16 chunks through each library's streaming API (1 s of audio per timed
round). Every round times voxwire and the peer back to back on the same chunks, and the ratio
peer_time / voxwire_time of that round is kept; the figure reported is the median of the
paired ratios, so drifts in machine speed hit both sides alike.

Latency of one chunk: how far the newest output sample lags the newest input sample, in ms,
`inputs_in / fs_in - (outputs_out - D) / fs_out`, where D is the delay a library leaves in its
output (voxwire: output_delay(); soxr trims its delay by holding output back, so D = 0 and its
holding back shows up directly). Filter delay plus anything held back, per chunk.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import soxr

from voxwire.audio import Resampler

CONVERSIONS = [
    (48000, 24000),
    (44100, 24000),
    (16000, 24000),
    (24000, 48000),
    (24000, 16000),
    (8000, 24000),
]


def chunks_for(rate_hz: int, seconds: float = 1.0) -> list[np.ndarray]:
    rng = np.random.default_rng(rate_hz)
    n = rate_hz // 50
    t = np.arange(int(rate_hz * seconds)) / rate_hz
    x = 8000 * np.sin(2 * np.pi * 440 * t) + rng.standard_normal(len(t)) * 2000
    xi = x.astype(np.int16)
    return [xi[i : i + n] for i in range(0, len(xi) - n + 1, n)]


def time_stream(process: Callable[[np.ndarray], object], chunks: list[np.ndarray]) -> float:
    t0 = time.perf_counter()
    for c in chunks:
        process(c)
    return (time.perf_counter() - t0) / len(chunks)


def paired(
    a_factory: Callable[[], Callable[[np.ndarray], object]],
    b_factory: Callable[[], Callable[[np.ndarray], object]],
    chunks: list[np.ndarray],
    rounds: int,
) -> tuple[float, float, float]:
    """(median a us/chunk, median b us/chunk, median of b/a) over paired rounds."""
    a_proc, b_proc = a_factory(), b_factory()
    time_stream(a_proc, chunks)  # warm up
    time_stream(b_proc, chunks)
    ta, tb, ratios = [], [], []
    for i in range(rounds):
        # Alternate which goes first so neither always gets the warmer cache.
        if i % 2:
            x = time_stream(a_proc, chunks)
            y = time_stream(b_proc, chunks)
        else:
            y = time_stream(b_proc, chunks)
            x = time_stream(a_proc, chunks)
        ta.append(x)
        tb.append(y)
        ratios.append(y / x)
    return statistics.median(ta) * 1e6, statistics.median(tb) * 1e6, statistics.median(ratios)


def latencies_ms(
    process: Callable[[np.ndarray], np.ndarray],
    chunks: list[np.ndarray],
    in_rate_hz: int,
    out_rate_hz: int,
    delay_out: float,
) -> list[float]:
    consumed = produced = 0
    lat = []
    for c in chunks:
        produced += len(process(c))
        consumed += len(c)
        lat.append((consumed / in_rate_hz - (produced - delay_out) / out_rate_hz) * 1000)
    return lat[5:]  # after start-up


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=41)
    args = ap.parse_args()
    print(
        "| conversion | voxwire hq us/chunk | soxr HQ us/chunk | paired ratio (soxr/voxwire) "
        "| voxwire fast us/chunk | ratio vs soxr HQ "
        "| voxwire latency ms (median / max) | soxr HQ latency ms (median / max) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for a, b in CONVERSIONS:
        chunks = chunks_for(a)

        def vox(q: str = "hq", a: int = a, b: int = b) -> Callable[[np.ndarray], np.ndarray]:
            return Resampler(a, b, q).process

        def sox(a: int = a, b: int = b) -> Callable[[np.ndarray], np.ndarray]:
            return soxr.ResampleStream(a, b, 1, dtype="int16", quality="HQ").resample_chunk

        v_us, s_us, ratio = paired(vox, sox, chunks, args.rounds)
        f_us, _s2_us, ratio_fast = paired(lambda: vox("fast"), sox, chunks, args.rounds)
        r = Resampler(a, b)
        vl = latencies_ms(r.process, chunks, a, b, r.output_delay())
        sl = latencies_ms(sox(), chunks, a, b, 0.0)
        print(
            f"| {a}->{b} | {v_us:.2f} | {s_us:.2f} | {ratio:.2f}x | {f_us:.2f} | {ratio_fast:.2f}x "
            f"| {statistics.median(vl):.2f} / {max(vl):.2f} "
            f"| {statistics.median(sl):.2f} / {max(sl):.2f} |"
        )


if __name__ == "__main__":
    main()
