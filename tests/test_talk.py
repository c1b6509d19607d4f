"""`voxwire talk` against the local server with real PortAudio on ALSA's null device (no sound
card: the child's HOME holds an .asoundrc making ALSA's default device the null plugin, as in
tests/audio/test_devices.py), ended by SIGINT; and its clear errors."""

from __future__ import annotations

import asyncio
import ctypes.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from voxwire.server import RealtimeServer, Scenario

ASOUNDRC = 'pcm.!default {\n    type plug\n    slave.pcm "null"\n}\n'
needs_portaudio = pytest.mark.skipif(
    ctypes.util.find_library("portaudio") is None,
    reason="the PortAudio library is not installed (apt install libportaudio2)",
)


def null_device_env(home: Path) -> dict[str, str]:
    (home / ".asoundrc").write_text(ASOUNDRC)
    return dict(os.environ, HOME=str(home))


@needs_portaudio
@pytest.mark.parametrize(
    ("extra", "echo"),
    [
        ((), "echo cancellation on (one device's microphone and speaker)"),
        (("--no-aec",), "echo cancellation off (--no-aec)"),
        (("--aec",), "echo cancellation on (asked)"),
    ],
)
def test_talk_on_null_devices_runs_until_sigint(
    tmp_path: Path, extra: tuple[str, ...], echo: str
) -> None:
    """ALSA's only device here is ``default`` (index 0) both ways: one device, so echo
    cancellation is on unless turned off."""
    env = null_device_env(tmp_path)
    scenario = Scenario.from_mapping({"rules": [], "fallback": "Hello."})

    async def run() -> tuple[int, str, str, int]:
        async with RealtimeServer(scenario=scenario) as server:
            child = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "voxwire.cli", "talk", "--url", server.url("gpt-realtime")),
                *("--input", "default", "--output", "0", *extra),
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            assert child.stdout is not None
            first = await asyncio.wait_for(child.stdout.readline(), 30)
            assert b"talking to ws://127.0.0.1:" in first, first
            await asyncio.sleep(1.0)
            connected = len(server.connections)
            child.send_signal(signal.SIGINT)
            stdout, stderr = await asyncio.wait_for(child.communicate(), 30)
            assert child.returncode is not None
            return child.returncode, first.decode() + stdout.decode(), stderr.decode(), connected

    code, stdout, stderr, connected = asyncio.run(run())
    assert code == 0, stdout + stderr
    assert connected == 1
    assert "microphone 'default'" in stdout
    assert echo in stdout
    assert "agent listening" in stdout  # live state
    assert "responses," in stdout.splitlines()[-1]  # the closing metrics line


def talk(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "voxwire.cli", "talk", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_talk_without_a_key_says_what_to_do() -> None:
    p = talk({k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"})
    assert p.returncode == 2
    assert "OPENAI_API_KEY is not set" in p.stderr
    assert "--url" in p.stderr


@needs_portaudio
def test_talk_names_a_missing_device_and_lists_those_available(tmp_path: Path) -> None:
    env = null_device_env(tmp_path)
    p = talk(env, "--url", "ws://127.0.0.1:9/v1/realtime", "--input", "no-such-microphone")
    assert p.returncode == 2
    assert "no input device named 'no-such-microphone'" in p.stderr
    assert "0: 'default'" in p.stderr
