"""The local server forks stored Live sessions as the hosted service does: a session started
with ``store: true`` is kept with its conversation once its connection ends, and the official
client's ``client.live.forks.connect(session_id=...)`` goes on from it (new id, the model,
instructions, voice and conversation inherited, overrides applied). Refusals have the
documented error shape. Every frame is validated against ``openai.types.live``."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
from openai import AsyncOpenAI
from websockets.asyncio.client import connect

from tests.live.mutations import mutate
from tests.live.samples import CLIENT
from tests.server.helpers import FAST, run
from tests.server.live.test_server import OFFICIAL, Listener
from voxwire.server import RealtimeServer
from voxwire.server.live.connection import fork_source

START = {
    "model": "gpt-live-1",
    "instructions": "Be brief.",
    "store": True,
    "delegation": {"type": "responses", "responses": {"model": "gpt-5.5"}},
}


def official(server: RealtimeServer) -> AsyncOpenAI:
    http = server.base_url.replace("ws://", "http://")
    return AsyncOpenAI(api_key="sk-dummy", base_url=http, websocket_base_url=server.base_url)


async def stored_session(client: AsyncOpenAI, session: dict[str, Any] = START) -> str:
    """A session that says something and closes; its id."""
    async with client.live.connect() as connection:
        live = Listener(connection)
        await connection.session.start(session=session)  # type: ignore[arg-type]
        started = await live.until("session.started")
        await connection.session.commentary.append(content="Hello there.", delegation_id=None)
        await live.until("session.usage.updated")
        await connection.session.close()
        closed = await live.until("session.closed")
        assert closed.reason == "close_requested"
        return str(started.session.id)


def test_a_closed_stored_session_is_forked_with_its_conversation() -> None:
    async def body() -> None:
        async with RealtimeServer(tts=None, transcriber=None, pacing=FAST) as server:
            client = official(server)
            source = await stored_session(client)
            stored = server.live_sessions.get(source)
            assert stored is not None
            assert stored.conversation == [("assistant", "Hello there.")]
            async with client.live.forks.connect(session_id=source) as fork:
                live = Listener(fork)
                await fork.session.start(session={}, event_id="f1")
                started = await live.until("session.started")
                assert started.client_event_id == "f1"
                session = started.session
                assert session.id != source
                assert (session.model, session.instructions) == ("gpt-live-1", "Be brief.")
                assert session.delegation.type == "responses"
                assert session.store is True
                await fork.session.commentary.append(content="Still here.", delegation_id=None)
                await live.until("session.usage.updated")
                forked = server.live_sessions.get(session.id)
                assert forked is not None
                assert forked.conversation == [
                    ("assistant", "Hello there."),
                    ("assistant", "Still here."),
                ]
                assert not forked.finalized
                await fork.session.close()
                await live.until("session.closed")
            assert server.live_sessions.get(session.id).finalized  # type: ignore[union-attr]
            # overrides: store off, the Responses backend's instructions
            async with client.live.forks.connect(session_id=source) as fork:
                live = Listener(fork)
                await fork.session.start(
                    session={
                        "store": False,
                        "delegation": {
                            "type": "responses",
                            "responses": {"instructions": "Use tools."},
                        },
                    }
                )
                session = (await live.until("session.started")).session
                assert session.store is False
                assert session.delegation.responses.instructions == "Use tools."
                assert session.delegation.responses.model == "gpt-5.5"
                assert session.id not in server.live_sessions

    run(body())


@pytest.mark.parametrize(
    ("overrides", "code", "param"),
    [
        ({"model": "gpt-live-1"}, "unknown_parameter", "session.model"),
        ({"client": {"data_channel": {}}}, "invalid_value", "session.client"),
        ({"delegation": {"type": "client"}}, "invalid_value", "session.delegation"),
        ({"audio": {"format": {"type": "audio/pcmu", "rate": 8000}}}, "invalid_value", None),
    ],
)
def test_bad_overrides_are_refused(overrides: dict[str, Any], code: str, param: str) -> None:
    async def body() -> None:
        async with RealtimeServer(tts=None, transcriber=None, pacing=FAST) as server:
            client = official(server)
            source = await stored_session(client)
            async with client.live.forks.connect(session_id=source) as fork:
                live = Listener(fork)
                await fork.session.start(session=overrides, event_id="f1")  # type: ignore[arg-type]
                error = await live.until("error")
                assert (error.error.code, error.error.client_event_id) == (code, "f1")
                if param is not None:
                    assert error.error.param == param
                # the refusal leaves the connection waiting for a good start
                await fork.session.start(session={})
                await live.until("session.started")

    run(body())


def test_what_cannot_be_forked() -> None:
    async def body() -> None:
        async with RealtimeServer(tts=None, transcriber=None, pacing=FAST) as server:
            client = official(server)
            async with client.live.forks.connect(session_id="sess_nothing") as fork:
                live = Listener(fork)
                await fork.session.start(session={})
                error = await live.until("error")
                assert error.error.code == "session_not_found"
            unstored = await stored_session(client, {**START, "store": False})
            async with client.live.forks.connect(session_id=unstored) as fork:
                live = Listener(fork)
                await fork.session.start(session={})
                assert (await live.until("error")).error.code == "session_not_found"
            async with client.live.connect() as primary:
                first = Listener(primary)
                await primary.session.start(session=START)  # type: ignore[arg-type]
                active = (await first.until("session.started")).session.id
                async with client.live.forks.connect(session_id=active) as fork:
                    live = Listener(fork)
                    await fork.session.start(session={})
                    error = await live.until("error")
                    assert error.error.code == "session_not_finalized"
                    assert "still active" in error.error.message

    run(body())


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("/v1/live/sessions/sess_1/fork", "sess_1"),
        ("/v1/live/sessions/sess_1", None),
        ("/v1/live/sessions//fork", None),
        ("/v1/live/sessions/a/b/fork", None),
        ("/v1/realtime/sess_1/fork", None),
    ],
)
def test_fork_paths(path: str, source: str | None) -> None:
    assert fork_source(path) == source


FORK_START = {
    "type": "session.start",
    "event_id": "f1",
    "session": {
        "store": True,
        "audio": {"format": {"type": "audio/pcm", "rate": 24000}},
        "delegation": {"type": "responses", "responses": {"instructions": "Be exact."}},
    },
}


@pytest.mark.parametrize("seed", [0, 1])
def test_mutated_frames_never_close_a_fork_connection(seed: int) -> None:
    rng = random.Random(seed)
    kinds = sorted(k for k in CLIENT if k not in ("session.close", "session.start"))
    hostile = [
        mutate(rng, FORK_START if rng.random() < 0.5 else CLIENT[rng.choice(kinds)])
        for _ in range(300)
    ]

    async def body() -> None:
        async with RealtimeServer(tts=None, transcriber=None, pacing=FAST) as server:
            source = await stored_session(official(server))
            async with connect(f"{server.base_url}/live/sessions/{source}/fork") as ws:
                for frame in hostile:
                    await ws.send(frame)
                await ws.send(json.dumps({"type": "session.start", "session": {}}))
                await ws.send(
                    json.dumps(
                        {
                            "type": "session.commentary.append",
                            "content": "Still here.",
                            "delegation_id": None,
                        }
                    )
                )
                seen: list[Any] = []

                async def until_spoken() -> None:
                    while True:
                        event = OFFICIAL.validate_json(await ws.recv())
                        seen.append(event)
                        if (
                            event.type == "session.output_transcript.delta"
                            and event.delta == "Still here."
                        ):
                            return

                await asyncio.wait_for(until_spoken(), 30)
            assert any(e.type == "session.started" for e in seen)
            errors = [e for e in seen if e.type == "error"]
            assert errors
            assert all(e.error.type == "invalid_request_error" for e in errors)

    run(body())
