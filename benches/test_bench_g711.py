"""G.711 benchmarks: voxwire.audio.g711 side by side with the standard library's ``audioop``
(Sun's C code; Python <= 3.12 only) on one 20 ms chunk at 8 kHz, the Realtime protocol's
``g711_ulaw`` / ``g711_alaw`` frame.

    pytest benches/test_bench_g711.py --benchmark-only --benchmark-group-by=group
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from types import ModuleType

import numpy as np
import pytest

from voxwire.audio import g711

PCM_20MS = np.random.default_rng(0).integers(-32768, 32768, size=160).astype(np.int16).tobytes()
ULAW_20MS = g711.ulaw_encode(PCM_20MS)
ALAW_20MS = g711.alaw_encode(PCM_20MS)


def audioop() -> ModuleType | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return importlib.import_module("audioop")
        except ImportError:
            return None


def calls(library: str) -> dict[str, Callable[[], object]]:
    if library == "voxwire":
        return {
            "ulaw_encode": lambda: g711.ulaw_encode(PCM_20MS),
            "alaw_encode": lambda: g711.alaw_encode(PCM_20MS),
            "ulaw_decode": lambda: g711.ulaw_decode(ULAW_20MS),
            "alaw_decode": lambda: g711.alaw_decode(ALAW_20MS),
        }
    ao = audioop()
    if ao is None:
        pytest.skip("audioop was removed in Python 3.13")
    # audioop decodes to bytes; wrapping them as int16 is what a caller does next.
    return {
        "ulaw_encode": lambda: ao.lin2ulaw(PCM_20MS, 2),
        "alaw_encode": lambda: ao.lin2alaw(PCM_20MS, 2),
        "ulaw_decode": lambda: np.frombuffer(ao.ulaw2lin(ULAW_20MS, 2), dtype=np.int16),
        "alaw_decode": lambda: np.frombuffer(ao.alaw2lin(ALAW_20MS, 2), dtype=np.int16),
    }


@pytest.mark.benchmark(group="G.711, 20 ms at 8 kHz (160 samples)")
@pytest.mark.parametrize("op", ["ulaw_encode", "alaw_encode", "ulaw_decode", "alaw_decode"])
@pytest.mark.parametrize("library", ["voxwire", "audioop"])
def test_g711_20ms(benchmark, library: str, op: str) -> None:  # type: ignore[no-untyped-def]
    benchmark(calls(library)[op])
