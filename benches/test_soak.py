"""The soak benchmark runs (a few turns of each kind, one RSS sample per turn); the long run and
its figures are in benches/RESULTS.md (``python benches/soak.py``)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import soak


def test_a_short_soak_completes_every_kind_of_turn() -> None:
    samples = asyncio.run(soak.soak(turns=6, every=1))
    assert [s.turns for s in samples] == [1, 2, 3, 4, 5, 6]
    assert all(s.rss_mb > 0 for s in samples)
    assert soak.growth_per_100_turns(samples, warmup=2) == soak.growth_per_100_turns(
        samples[2:], warmup=0
    )
