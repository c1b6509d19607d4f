"""``voxwire demo --room speakerphone``: the demo's conversation through a real session and the
local server, with the speaker's echo in the microphone, with and without the canceller."""

from __future__ import annotations

import pytest

pytest.importorskip("voxwire.server.engines.tts")

import re
from pathlib import Path

from voxwire.demo.room import RoomReport, run_room


@pytest.fixture(scope="module")
def with_aec() -> RoomReport:
    return run_room(aec=True)


def test_with_echo_cancellation_only_the_cough_and_the_line_pause_the_agent(
    with_aec: RoomReport,
) -> None:
    report = with_aec
    assert report.cough_at_ms is not None
    assert report.line_at_ms is not None
    # Nothing paused the agent before the cough: its own echo never did.
    assert report.pauses_ms
    assert report.pauses_ms[0] >= report.cough_at_ms
    actions = [(d.action, d.at_ms) for d in report.decisions]
    assert actions[0][0] == "resume"  # the cough, played on from the pause
    assert actions[-1][0] == "cut"  # the user's line
    assert actions[-1][1] >= report.line_at_ms
    assert [a for a, _ in actions].count("cut") == 1


def test_with_echo_cancellation_the_cut_is_exact_and_only_the_line_is_answered(
    with_aec: RoomReport,
) -> None:
    report = with_aec
    assert len(report.cuts) == 1
    assert report.cut_exact is True
    assert report.answered_line
    # The tool call, the order and handoff, billing's explanation, the answer to the line: the
    # cough got no reply of its own.
    assert report.replies == 4
    assert report.erle_db is not None
    assert report.erle_db >= 25.0


def test_without_it_the_agent_cuts_itself_off() -> None:
    report = run_room(aec=False)
    assert report.pauses_ms
    assert report.cough_at_ms is None or report.pauses_ms[0] < report.cough_at_ms
    assert len(report.cuts) >= 1  # its own echo, confirmed by the server's VAD as speech
    assert report.replies > 4  # and it answered its own echo
    assert report.cut_exact is True  # whatever the echo made it do, a cut is at the pause point
    # It says it is the 'before' picture, and where it stopped; docs/audio-io.md says the same
    # number (it once said 8 where the run printed 9).
    lines = report.lines()
    assert "echo cancellation off (the 'before' picture)" in lines[0]
    assert "add --aec to see the difference" in lines[1]
    assert report.stopped
    stop = f"  stopped after {report.replies} replies: the agent kept answering its own echo"
    assert any(line.startswith(stop) for line in lines), lines
    assert f"  agent replies: {report.replies}, cut: {len(report.cuts)}" in lines
    docs = (Path(__file__).parents[1] / "docs" / "audio-io.md").read_text()
    assert re.search(rf"stops it after\s+{report.replies}\s+replies", docs)
