"""`voxwire quickstart`: the README's first command, run for real (local server, real speech)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import numpy as np

from voxwire.audio import Resampler, read_wav, write_wav


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


def test_quickstart_with_a_wav_question_against_an_external_server(tmp_path: Path) -> None:
    """--wav: a 16 kHz recording is resampled and sent; --url: a server this test runs (as
    `voxwire serve` would) answers instead of one started in-process."""
    from voxwire.server import Pacing, RealtimeServer, Scenario
    from voxwire.server.engines.tts import EspeakEngine

    speech = EspeakEngine.shared().synthesize("What time is it?", "alloy")
    resampler = Resampler(speech.rate_hz, 16000)
    question = tmp_path / "question.wav"
    write_wav(question, np.concatenate([resampler.process(speech.pcm), resampler.flush()]), 16000)
    out = tmp_path / "reply.wav"
    scenario = Scenario.from_mapping({"rules": [], "fallback": "It is time to test."})

    async def run() -> subprocess.CompletedProcess[str]:
        async with RealtimeServer(scenario=scenario, pacing=Pacing(audio_pace=20)) as server:
            child = await asyncio.create_subprocess_exec(
                sys.executable,
                *("-m", "voxwire.cli", "quickstart", "--pace", "20", "--out", str(out)),
                *("--wav", str(question), "--url", server.url("gpt-realtime")),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            stdout, stderr = await asyncio.wait_for(child.communicate(), 120)
            assert child.returncode is not None
            code = child.returncode
            return subprocess.CompletedProcess([], code, stdout.decode(), stderr.decode())

    p = asyncio.run(run())
    assert p.returncode == 0, p.stdout + p.stderr
    assert "user speaking" in p.stdout
    assert 'assistant said: "It is time to test."' in p.stdout
    assert read_wav(out).rate_hz == 24000


def test_quickstart_reports_a_missing_wav() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "voxwire.cli", "quickstart", "--wav", "/nonexistent/q.wav"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    assert "/nonexistent/q.wav" in p.stderr
