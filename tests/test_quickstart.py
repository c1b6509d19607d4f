"""`voxwire quickstart`: the README's first command, run for real (local server, real speech)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from voxwire.audio import read_wav


def test_quickstart_completes_a_spoken_turn(tmp_path: Path) -> None:
    out = tmp_path / "reply.wav"
    p = subprocess.run(
        [sys.executable, "-m", "voxwire.cli", "quickstart", "--out", str(out), "--pace", "20"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "user speaking" in p.stdout  # server VAD heard the start of speech
    assert "user listening" in p.stdout  # ... and its end, which committed the turn
    assert "response done (completed)" in p.stdout
    assert "assistant said:" in p.stdout
    reply = read_wav(out)
    assert reply.rate_hz == 24000
    assert len(reply.pcm) > 24000  # more than a second of speech
    assert int(abs(reply.pcm.astype(int)).max()) > 1000  # not silence
