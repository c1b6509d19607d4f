"""Smoke test of the full-duplex CPU comparison (benches/duplex_vs_openai_agents.py), so that it
cannot rot: two seconds of audio through every pipeline, twice, interleaved. It checks that each
pipeline did the same work (same audio decoded, resampled, played and sent, no error events from
openai-agents) — not how fast: CPU per minute is the script's business (benches/RESULTS.md).
openai-agents is in the ``bench`` extra; without it this test is skipped.
"""

from __future__ import annotations

import pytest

pytest.importorskip("agents")
pytest.importorskip("soxr")

import duplex_vs_openai_agents as duplex  # benches/ is on the path (pytest)


def test_every_pipeline_does_the_same_work() -> None:
    results = duplex.compare(seconds=2.0, rounds=2)
    assert set(results) == set(duplex.PIPELINES)
    duplex.check_same_work(results, ticks=100)
    for tallies in results.values():
        assert len(tallies) == 2
        assert all(tally.cpu_s > 0 for tally in tallies)
    # The full pipelines put JSON text frames on the (stand-in) socket: base64 of 960 bytes each.
    for name in (duplex.VOXWIRE, duplex.PEER):
        first = results[name][0]
        assert first.sent_chars > first.frames_sent * 1280, name


def test_a_short_server_frame_fails_the_check() -> None:
    """The check is not vacuous: a workload with a missing tick does not pass it."""
    work = duplex.make_workload(1.0)
    short = duplex.Workload(work.server_frames[:-1], work.voice[:-1], work.mic)
    with pytest.raises(AssertionError):
        duplex.check_same_work({duplex.VOXWIRE: [duplex.run_voxwire(short)]}, ticks=50)
