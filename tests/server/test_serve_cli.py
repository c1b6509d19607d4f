"""``voxwire serve`` as a real subprocess: prints its URL, requires the token, stops on Ctrl-C."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from .helpers import Client, realtime_url, run, start_serve


def test_serve_subcommand(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"rules": [{"match": "ping", "say": "pong"}]}))
    env = {**os.environ, "VOXWIRE_TEST_TOKEN": "tok-123"}
    process, line = start_serve(
        "--port",
        "0",
        "--scenario",
        str(scenario),
        "--token-env",
        "VOXWIRE_TEST_TOKEN",
        "--pace",
        "0",
        env=env,
    )
    try:
        url = realtime_url(line)
        assert "tok-123" not in line

        async def body() -> None:
            with pytest.raises(InvalidStatus):
                async with connect(url):
                    pass
            async with connect(url, additional_headers={"Authorization": "Bearer tok-123"}) as ws:
                client = Client(ws)
                await client.recv()
                await client.update(output_modalities=["text"])
                await client.say("ping")
                events = await client.respond()
                text = next(e for e in events if e["type"] == "response.output_text.done")
                assert text["text"] == "pong"

        run(body())
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 130, stderr  # Ctrl-C's status, as every command's
    assert "tok-123" not in stderr


def test_no_voice_is_a_clear_error_at_start(tmp_path: Path) -> None:
    env = {**os.environ, "VOXWIRE_ESPEAK_LIBRARY": str(tmp_path / "missing.so")}
    process = subprocess.run(
        # espeak-ng named explicitly: with "auto", an installed hibari would be used instead.
        [sys.executable, "-m", "voxwire.cli", "serve", "--port", "0", "--tts", "espeak"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert process.returncode == 2
    assert "pip install 'voxwire[server]'" in process.stderr
    assert "--no-audio" in process.stderr
    assert "voxwire realtime server on" not in process.stdout


def test_the_session_lifetime_is_settable_in_seconds() -> None:
    """``--max-session-seconds``: the session expires then (``session_expired``, a clean close),
    as a client's renewal test needs; its ``expires_at`` says so."""
    process, line = start_serve("--port", "0", "--no-audio", "--max-session-seconds", "0.5")
    try:
        url = realtime_url(line)

        async def body() -> None:
            async with connect(url) as ws:
                client = Client(ws)
                created = await client.recv()
                assert created["type"] == "session.created"
                error = await client.recv(timeout=5)
                assert (error["type"], error["error"]["code"]) == ("error", "session_expired")
                assert "0.5 seconds" in error["error"]["message"]
                await ws.wait_closed()
                assert ws.close_code == 1000

        run(body())
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 130, stderr  # Ctrl-C's status, as every command's


def test_the_audio_budget_is_settable() -> None:
    """``--audio-budget-mb 0``: only the audio set last is kept; retrieving older audio is the
    service-shaped ``invalid_value`` error."""
    process, line = start_serve("--port", "0", "--no-audio", "--audio-budget-mb", "0")
    try:
        url = realtime_url(line)
        audio = base64.b64encode(b"\x01\x00" * 2400).decode()

        async def body() -> None:
            async with connect(url) as ws:
                client = Client(ws)
                await client.recv()
                for item_id in ("u1", "u2"):
                    item = {
                        "type": "message",
                        "role": "user",
                        "id": item_id,
                        "content": [{"type": "input_audio", "audio": audio}],
                    }
                    await client.send({"type": "conversation.item.create", "item": item})
                    await client.until("conversation.item.done")
                await client.send({"type": "conversation.item.retrieve", "item_id": "u2"})
                retrieved = (await client.until("conversation.item.retrieved"))[-1]
                assert retrieved["item"]["content"][0]["audio"] == audio
                await client.send({"type": "conversation.item.retrieve", "item_id": "u1"})
                error = (await client.until("error"))[-1]["error"]
                assert (error["code"], error["param"]) == ("invalid_value", "item_id")

        run(body())
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 130, stderr  # Ctrl-C's status, as every command's
