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
    assert "user started speaking (server VAD)" in p.stdout  # the start of speech heard
    # ... and its end, which committed the turn (once "user listening": the session's state
    # name, which read as if the user were listening)
    assert "user stopped speaking (server VAD): the turn is committed" in p.stdout
    assert "listening" not in p.stdout
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
    assert "user started speaking" in p.stdout
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


def quickstart_against(server_options: dict[str, object], *args: str) -> tuple[int, str]:
    """``voxwire quickstart ARGS --url`` against a local server this test runs; (status, stdout).
    The child gets 90 s: a turn that waits without a bound fails the test."""
    from voxwire.server import Pacing, RealtimeServer

    async def run() -> tuple[int, str]:
        async with RealtimeServer(pacing=Pacing(audio_pace=0), **server_options) as server:  # type: ignore[arg-type]
            child = await asyncio.create_subprocess_exec(
                sys.executable,
                *("-m", "voxwire.cli", "quickstart", "--pace", "0", *args),
                *("--url", server.url("gpt-realtime")),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            try:
                stdout, _ = await asyncio.wait_for(child.communicate(), 90)
            finally:
                if child.returncode is None:
                    child.kill()
                    await child.wait()
            assert child.returncode is not None
            return child.returncode, stdout.decode()

    return asyncio.run(run())


def test_quickstart_says_no_speech_was_heard_in_a_silent_or_empty_wav(tmp_path: Path) -> None:
    """Silence (and an empty file) never starts a turn: the quickstart says so and exits 1
    instead of waiting forever after "streaming ... of user speech"."""
    for name, samples in (("silence.wav", 24_000 * 3), ("empty.wav", 0)):
        wav = tmp_path / name
        write_wav(wav, np.zeros(samples, np.int16), 24_000)
        out = tmp_path / "reply.wav"
        code, stdout = quickstart_against({"tts": None}, "--wav", str(wav), "--out", str(out))
        assert code == 1, stdout
        assert stdout.splitlines()[-1] == "the turn did not complete: no speech heard in the WAV"
        assert not out.exists()


def test_quickstart_shows_why_a_response_failed(tmp_path: Path) -> None:
    """The server's chat endpoint is unreachable: the response fails, and the line says why
    (the server's message), not just "failed"."""
    from voxwire.server import ChatCompletionsResponder
    from voxwire.server.engines.tts import EspeakEngine

    speech = EspeakEngine.shared().synthesize("Hello there.", "alloy")
    question = tmp_path / "question.wav"
    write_wav(question, speech.pcm, speech.rate_hz)
    unreachable = ChatCompletionsResponder("http://127.0.0.1:1/v1", "tiny-1", timeout_s=5)
    options = {"tts": None, "responder": unreachable}
    code, stdout = quickstart_against(
        options, "--wav", str(question), "--out", str(tmp_path / "r.wav")
    )
    assert code == 1, stdout
    assert "response done (failed: chat endpoint http://127.0.0.1:1/v1" in stdout
    assert "unreachable" in stdout.splitlines()[-1]
