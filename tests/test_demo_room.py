"""``voxwire demo --room speakerphone``: the simulated room with and without the canceller."""

from __future__ import annotations

import pytest

pytest.importorskip("voxwire.server.engines.tts")

from voxwire.demo.room import run_room


def test_with_echo_cancellation_the_cough_is_recovered_and_the_barge_in_cut_exactly() -> None:
    # espeak-ng's output varies slightly from call to call, and with it the exact number of
    # pauses: the test holds what must not vary.
    report = run_room(aec=True)
    actions = [d.action for d in report.decisions]
    assert actions[0] == "resume"  # the cough, during the first reply
    assert actions[-1] == "cut"  # the user's line, during the second
    assert actions.count("cut") == 1
    assert report.replies_finished == 1
    assert report.cut_exact is True
    assert report.erle_db is not None
    assert report.erle_db >= 15.0
    assert report.onsets_ms[0] >= 2500  # nothing before the cough (2.5 s into the first reply)


def test_without_it_the_agent_keeps_pausing_for_its_own_echo() -> None:
    report = run_room(aec=False)
    assert report.onsets_ms[0] < 1000  # its own echo, at the start of the first reply
    assert len(report.onsets_ms) >= 4  # and again after every resume
    if report.cut_ms is not None:  # whatever the echo made it do, a cut is at the pause point
        assert report.cut_exact is True
