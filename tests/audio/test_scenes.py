"""The echo scenes' speech is the same whatever the process spoke before (the echo tests'
thresholds were set on it; a full run under load once gave the drift test other speech)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.audio.echo_rooms import AGENT_LINES, speech

tts = pytest.importorskip("voxwire.server.engines.tts")


def test_a_line_is_the_same_after_the_shared_engine_spoke_something_else() -> None:
    first = speech.__wrapped__(AGENT_LINES[1], "alloy")
    # What the local server's speech threads or an earlier test would have done.
    tts.EspeakEngine.shared().synthesize("Something else entirely, said first.", "echo")
    again = speech.__wrapped__(AGENT_LINES[1], "alloy")
    assert len(again) == len(first)
    assert np.array_equal(again, first)
