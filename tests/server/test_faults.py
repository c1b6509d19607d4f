"""Fault injection: every fault, set for the whole server or armed on one live connection, seen
by a plain websocket client; the server itself stays healthy (the next connection works, no
task is left after close)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedError

from voxwire.exceptions import ConfigurationError
from voxwire.server import (
    Delay,
    Drop,
    Expire,
    RealtimeConnection,
    RealtimeServer,
    RejectResponse,
    SendMalformed,
    SendUnknown,
    faults_from_data,
)
from voxwire.server.faults import faults_from_file

from .helpers import SLOW, Client, check_official, client_of, run, serving
from .test_vad import append, silence, speech, vad_client_session


async def closed(client: Client) -> ConnectionClosed:
    """Read until the connection ends; the exception that ended it."""
    try:
        while True:
            await client.recv()
    except ConnectionClosed as exc:
        return exc


async def server_still_works(server: RealtimeServer) -> None:
    async with client_of(server) as client:
        await client.say("hello")
        done = (await client.respond())[-1]
        assert done["response"]["status"] == "completed"


def connection_of(server: RealtimeServer, client: Client) -> RealtimeConnection:
    """The server's live connection serving ``client`` (matched by its session id)."""
    session_id = client.received[0]["session"]["id"]
    (connection,) = [c for c in server.connections if c.session_id == session_id]
    return connection


def test_server_wide_drop_after_n_events_aborts_without_a_close_frame() -> None:
    async def body() -> None:
        async with serving(faults=[Drop(after=2)]) as server:
            async with connect(server.url()) as ws:
                client = Client(ws)
                assert (await client.recv())["type"] == "session.created"
                await client.update(output_modalities=["text"])  # the 2nd event, then the drop
                error = await closed(client)
                assert isinstance(error, ConnectionClosedError)
                assert error.rcvd is None  # no close frame: an abnormal closure (1006)
                assert [e["type"] for e in client.received] == [
                    "session.created",
                    "session.updated",
                ]
            assert server.connections == ()
        assert asyncio.all_tasks() == {asyncio.current_task()}

    run(body())


def test_drop_mid_response_with_1011_on_one_connection_only() -> None:
    async def body() -> None:
        async with serving(pacing=SLOW) as server:
            async with client_of(server) as victim, client_of(server) as bystander:
                assert len(server.connections) == 2
                connection = connection_of(server, victim)
                await connection.inject(
                    Drop(after=3, of_type="response.output_text.delta", code=1011)
                )
                await victim.say("hello")
                await bystander.say("hello")
                await victim.send({"type": "response.create"})
                await bystander.send({"type": "response.create"})
                error = await closed(victim)
                assert error.rcvd is not None
                assert error.rcvd.code == 1011
                assert "fault injection" in error.rcvd.reason
                kinds = [e["type"] for e in victim.received]
                assert kinds.count("response.output_text.delta") == 3
                assert "response.done" not in kinds
                done = (await bystander.until("response.done"))[-1]
                assert done["response"]["status"] == "completed"
            await server_still_works(server)
        assert asyncio.all_tasks() == {asyncio.current_task()}

    run(body())


def test_malformed_and_unknown_frames_then_the_session_goes_on() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            connection = connection_of(server, client)
            await connection.inject(
                SendMalformed(of_type="response.created"),
                SendUnknown(of_type="response.output_item.added"),
            )
            await client.say("hello")
            await client.send({"type": "response.create"})
            frames = []
            while not frames or '"response.done"' not in frames[-1]:
                frames.append(await asyncio.wait_for(client.ws.recv(), 5))
            assert json.loads(frames[0])["type"] == "response.created"
            with pytest.raises(json.JSONDecodeError):
                json.loads(frames[1])
            assert json.loads(frames[2])["type"] == "response.output_item.added"
            assert json.loads(frames[3]) == {
                "type": "response.voxwire_unknown_event",
                "event_id": "event_voxwire_fault_injected",
            }
            for frame in frames[:1] + frames[2:3] + frames[4:]:
                check_official(json.loads(frame))  # every real event is still a valid one
            assert json.loads(frames[-1])["response"]["status"] == "completed"
            # Faults fire once: the next turn is clean.
            events = await client.respond()
            assert events[-1]["response"]["status"] == "completed"

    run(body())


def test_delay_holds_events_and_keeps_their_order() -> None:
    async def body() -> None:
        delay = Delay(ms=250, of_type="response.done", count=1)
        async with serving(faults=[delay]) as server, client_of(server) as client:
            await client.say("hello")
            await client.send({"type": "response.create"})
            events = await client.until("conversation.item.done")
            before = time.monotonic()
            events += await client.until("response.done")
            assert time.monotonic() - before >= 0.24
            kinds = [e["type"] for e in events]
            assert kinds[-2:] == ["rate_limits.updated", "response.done"]
            # count=1: the next response.done is not held.
            before = time.monotonic()
            await client.respond()
            assert time.monotonic() - before < 0.2

    run(body())


def test_reject_response_answers_with_the_service_error_naming_the_create() -> None:
    async def body() -> None:
        async with serving(faults=[RejectResponse(count=2)]) as server, client_of(server) as client:
            session_id = client.received[0]["session"]["id"]
            await client.say("hello")
            for event_id in ("evt_first", "evt_second"):
                await client.send({"type": "response.create", "event_id": event_id})
                error = (await client.until("error"))[-1]["error"]
                assert error["type"] == "server_error"
                assert error["code"] is None
                assert error["event_id"] == event_id
                assert error["message"].startswith("The server had an error")
                assert session_id in error["message"]
            events = await client.respond()
            assert events[0]["type"] == "response.created"
            assert events[-1]["response"]["status"] == "completed"

    run(body())


def test_reject_response_leaves_server_vad_turns_alone_and_takes_custom_errors() -> None:
    async def body() -> None:
        fault = RejectResponse(
            error_type="invalid_request_error", code="rate_limit_exceeded", message="Slow down."
        )
        async with serving() as server, client_of(server, text_only=False) as client:
            await vad_client_session(client)
            await connection_of(server, client).inject(fault)
            # A turn server VAD detects is not a client response.create: it is answered.
            await append(client, silence(300) + speech() + silence(600))
            events = await client.until("response.done")
            assert "error" not in [e["type"] for e in events]
            assert events[-1]["response"]["status"] == "completed"
            await client.send({"type": "response.create"})
            error = (await client.until("error"))[-1]["error"]
            assert (error["type"], error["code"], error["message"]) == (
                "invalid_request_error",
                "rate_limit_exceeded",
                "Slow down.",
            )

    run(body())


def test_expire_now_and_expire_after_events() -> None:
    async def body() -> None:
        async with serving() as server:
            async with client_of(server) as client:
                await connection_of(server, client).inject(Expire())
                error = (await client.until("error"))[-1]["error"]
                assert error["code"] == "session_expired"
                ended = await closed(client)
                assert ended.rcvd is not None
                assert ended.rcvd.code == 1000
            async with client_of(server) as client:
                await connection_of(server, client).inject(Expire(of_type="response.done"))
                await client.say("hello")
                await client.respond()
                error = (await client.until("error"))[-1]["error"]
                assert error["code"] == "session_expired"
                await closed(client)
            await server_still_works(server)

    run(body())


def test_drop_at_once_before_session_created() -> None:
    async def body() -> None:
        async with serving(faults=[Drop()]) as server, connect(server.url()) as ws:
            with pytest.raises(ConnectionClosedError):
                await asyncio.wait_for(ws.recv(), 5)

    run(body())


def test_schedules_from_data_and_their_errors(tmp_path: Path) -> None:
    faults = faults_from_data(
        [
            {"fault": "drop", "of_type": "response.output_audio.delta", "code": 1011},
            {"fault": "malformed", "after": 3},
            {"fault": "unknown_event", "after": 1, "unknown_type": "x.y"},
            {"fault": "delay", "ms": 300, "of_type": "response.done"},
            {"fault": "reject_response"},
            {"fault": "expire", "after": 10},
        ]
    )
    assert faults == (
        Drop(of_type="response.output_audio.delta", code=1011),
        SendMalformed(after=3),
        SendUnknown(after=1, unknown_type="x.y"),
        Delay(ms=300, of_type="response.done"),
        RejectResponse(),
        Expire(after=10),
    )
    path = tmp_path / "faults.json"
    path.write_text(json.dumps([{"fault": "expire"}]))
    assert faults_from_file(path) == (Expire(),)
    bad = [
        ({"fault": "explode"}, "needs 'fault', one of"),
        ({"fault": "drop", "after": -1}, "after=-1 is invalid"),
        ({"fault": "drop", "of_type": "x", "after": 0}, "use after=1"),
        ({"fault": "drop", "code": 1000}, "cannot be sent in a close frame"),
        ({"fault": "delay"}, "ms"),
        ({"fault": "delay", "ms": 5, "count": 0}, "count=0 is invalid"),
        ({"fault": "drop", "aftr": 1}, "unknown keys ['aftr']"),
        ({"fault": "reject_response", "count": 0}, "must be >= 1"),
    ]
    for entry, message in bad:
        with pytest.raises(ConfigurationError, match=message.replace("[", r"\[")):
            faults_from_data([entry])
    with pytest.raises(ConfigurationError, match="must be a list"):
        faults_from_data({"fault": "drop"})
    path.write_text("{oops")
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        faults_from_file(path)
