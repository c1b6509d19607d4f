"""Run cancellers over generated scenes and summarise (``python -m benches.aec_eval``).

Every canceller gets the scene's microphone and the reference as its wrapper would read it:
``lead_ms`` ahead of the clocks (20 ms, ``EchoCancelledInput``'s margin; 120 ms with the delay
search, its ``search_lead_ms`` added). LiveKit's APM gets the 20 ms lead too (and finds the
rest itself). 10 ms blocks at 24 kHz, the session's rate; CPU is process time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from benches.aec_eval.generator import RATE_HZ, Scene

from voxwire.audio import EchoCanceller

BLOCK = RATE_HZ // 100
Signal = npt.NDArray[np.float64]
Run = Callable[[Scene], tuple[Signal, float]]


def raw(s: Scene) -> tuple[Signal, float]:
    return s.mic.astype(np.float64), 0.0


def voxwire(lead_ms: float = 20.0, **options: Any) -> Run:
    def run(s: Scene) -> tuple[Signal, float]:
        aec = EchoCanceller(RATE_HZ, **options)
        ref = s.reference(lead_ms)
        out = np.zeros(len(s.mic), dtype=np.int16)
        t0 = time.process_time()
        for i in range(0, len(s.mic), BLOCK):
            out[i : i + BLOCK] = aec.process(s.mic[i : i + BLOCK], ref[i : i + BLOCK])
        cpu = time.process_time() - t0
        lag = aec.latency_samples
        return np.concatenate([out[lag:], np.zeros(lag)]).astype(np.float64), cpu

    return run


def livekit_apm(s: Scene) -> tuple[Signal, float]:
    from benches.aec_rooms import _livekit_lag, _livekit_run

    out, cpu = _livekit_run(s.mic, s.reference(20.0))
    lag = _livekit_lag()
    return np.concatenate([out[lag:], np.zeros(lag)]), cpu


def cancellers(names: list[str] | None = None) -> dict[str, Run]:
    every: dict[str, Run] = {
        "raw microphone": raw,
        "voxwire": voxwire(),
        "voxwire linear filter": voxwire(suppression_db=0.0),
        "voxwire delay_search": voxwire(120.0, delay_search=True),
        "LiveKit APM (AEC3)": livekit_apm,
    }
    if not names:
        return every
    return {k: v for k, v in every.items() if any(n.lower() in k.lower() for n in names)}


def cpu_48k(seconds: float = 60.0) -> dict[str, float]:
    """CPU seconds per minute of audio at 48 kHz, voxwire's canceller and the APM, on the same
    minute of speech (a 48 kHz capture's cost does not depend on its content)."""
    from benches.aec_eval.generator import generate
    from livekit import rtc

    s = generate(0)
    n = int(seconds * 48_000)
    mic = np.resize(np.repeat(s.mic, 2), n)
    ref = np.resize(np.repeat(s.played, 2), n)
    block = 480
    aec = EchoCanceller(48_000)
    t0 = time.process_time()
    for i in range(0, n - block + 1, block):
        aec.process(mic[i : i + block], ref[i : i + block])
    ours = time.process_time() - t0
    apm = rtc.AudioProcessingModule(echo_cancellation=True, high_pass_filter=True)
    apm.set_stream_delay_ms(0)
    t0 = time.process_time()
    for i in range(0, n - block + 1, block):
        apm.process_reverse_stream(rtc.AudioFrame(ref[i : i + block].tobytes(), 48_000, 1, block))
        apm.process_stream(rtc.AudioFrame(mic[i : i + block].tobytes(), 48_000, 1, block))
    theirs = time.process_time() - t0
    scale = 60.0 / seconds
    return {"voxwire": ours * scale, "LiveKit APM (AEC3)": theirs * scale}


def run_all(seeds: list[int], runs: dict[str, Run], progress: bool = True) -> list[dict[str, Any]]:
    from benches.aec_eval.generator import generate
    from benches.aec_eval.metrics import measure

    rows = []
    for k, seed in enumerate(seeds):
        s = generate(seed)
        minutes = len(s.mic) / RATE_HZ / 60
        for name, run in runs.items():
            out, cpu = run(s)
            rows.append(
                {"seed": seed, "canceller": name, **s.meta, **measure(s, out), "cpu": cpu / minutes}
            )
        if progress:
            print(f"  {k + 1}/{len(seeds)} seed {seed}", flush=True)
    return rows


def finite(values: list[float]) -> list[float]:
    return [v for v in values if not math.isnan(v)]
