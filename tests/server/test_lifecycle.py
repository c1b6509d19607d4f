"""Lifecycle: close() is idempotent, closes live connections mid-response, leaves no task and no
worker thread behind; session expiry; the scenario format."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from voxwire.exceptions import ConfigurationError
from voxwire.server import RealtimeServer, Scenario

from .helpers import SLOW, Client, client_of, run, serving


async def drain(ws: ClientConnection) -> None:
    while True:
        await ws.recv()


def test_close_mid_response_leaves_no_task_and_no_thread() -> None:
    async def body() -> None:
        server = RealtimeServer(
            scenario=Scenario.from_mapping({"fallback": "word " * 200}), pacing=SLOW
        )
        await server.start()
        async with connect(server.url()) as ws:
            client = Client(ws)
            await client.recv()
            await client.say("go")
            await client.send(
                {"type": "response.create", "response": {"output_modalities": ["audio"]}}
            )
            await client.until("response.output_audio.delta")
            await server.close()
            await server.close()  # idempotent
            with pytest.raises(ConnectionClosed):
                await drain(ws)
        assert asyncio.all_tasks() == {asyncio.current_task()}

    run(body())
    assert not [t for t in threading.enumerate() if t.name.startswith("voxwire-tts")]


def test_context_manager_closes_and_port_is_free_again() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await client.say("hello")
            port = server.port
        async with serving(port=port) as again:
            assert again.port == port
        assert asyncio.all_tasks() == {asyncio.current_task()}

    run(body())


def test_session_expires_with_the_service_error_then_closes() -> None:
    async def body() -> None:
        async with serving(max_session_s=0.3) as server, connect(server.url()) as ws:
            client = Client(ws)
            await client.recv()
            error = (await client.until("error"))[-1]["error"]
            assert error["code"] == "session_expired"
            with pytest.raises(ConnectionClosed):
                await ws.recv()

    run(body())


def test_bad_options_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="tts"):
        RealtimeServer(tts="piper")
    with pytest.raises(ValueError, match="max_session_s"):
        RealtimeServer(max_session_s=0)


def test_scenario_file_and_its_errors(tmp_path: Path) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"rules": [{"match": "hi", "say": "Hi {text}!"}], "fallback": None}))
    scenario = Scenario.from_file(path)
    assert scenario.fallback is None
    assert len(scenario.rules) == 1
    for bad in (
        {"rules": [{"match": "("}]},
        {"rules": [{"match": "x"}]},
        {"rules": [{"say": "x", "when": "y"}]},
        {"rules": [{"call": {"arguments": {}}}]},
        {"bogus": 1},
    ):
        with pytest.raises(ConfigurationError):
            Scenario.from_mapping(bad)
    path.write_text("{nope")
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        Scenario.from_file(path)
