"""``voxwire demo --room speakerphone``: the simulated room with and without the canceller."""

from __future__ import annotations

import pytest

pytest.importorskip("voxwire.server.engines.tts")

from voxwire.demo.room import run_room


def test_with_echo_cancellation_the_cough_is_recovered_and_the_barge_in_cut_exactly() -> None:
    report = run_room(aec=True)
    assert [(d.action, d.reason) for d in report.decisions] == [
        ("resume", "short"),
        ("cut", "speech"),
    ]
    assert report.replies_finished == 1
    assert report.cut_exact is True
    assert report.erle_db is not None
    assert report.erle_db >= 25.0
    assert report.onsets_ms[0] >= 2500  # nothing before the cough (2.5 s into the first reply)


def test_without_it_the_agent_interrupts_itself() -> None:
    report = run_room(aec=False)
    assert report.onsets_ms[0] < 1000  # its own echo, at the start of the first reply
    assert report.replies_finished == 0
    assert any(d.action == "cut" for d in report.decisions)
