"""The soak benchmark runs (a few turns of each kind, one RSS sample per turn, the client's and
the server process's, with and without a bound on the history); the long runs and their figures
are in benches/RESULTS.md (``python benches/soak.py``)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import soak


@pytest.mark.parametrize("max_history_items", [None, 8])
def test_a_short_soak_completes_every_kind_of_turn(max_history_items: int | None) -> None:
    samples = asyncio.run(soak.soak(turns=6, every=1, max_history_items=max_history_items))
    assert [s.turns for s in samples] == list(range(1, 7))
    assert all(s.rss_mb > 0 and s.server_rss_mb for s in samples)
    assert soak.growth_per_100_turns(samples, warmup=2) == soak.growth_per_100_turns(
        samples[2:], warmup=0
    )
    assert soak.growth_per_100_turns(samples, warmup=2, server=True) == pytest.approx(
        soak.growth_per_100_turns(samples[2:], warmup=0, server=True)
    )
