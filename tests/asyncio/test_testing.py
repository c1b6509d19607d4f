"""voxwire.testing: the scripted server users test their applications with."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from voxwire.agents import RealtimeAgent
from voxwire.asyncio import (
    AudioEvent,
    CloseEvent,
    ConnectionFailed,
    ErrorEvent,
    HistoryFunctionCall,
    HistoryMessage,
    RawServerEvent,
    RealtimeSession,
    ResponseDoneEvent,
    SessionEvent,
    SessionState,
    TransportClosed,
)
from voxwire.protocol import InputAudioBufferCommitted, raw_fields
from voxwire.testing import ScriptedServer

from .helpers import assert_only_current_task, drain, run, until


def test_a_scripted_text_turn() -> None:
    async def body() -> None:
        server = ScriptedServer()
        agent = RealtimeAgent(name="greeter", instructions="Greet.", voice="marin")
        async with RealtimeSession(
            agent, api_key="sk-test", connector=server.connect, wait_for_session_updated=True
        ) as session:
            assert session.protocol.session is not None
            assert session.protocol.session.instructions == "Greet."
            await session.send_message("hi")
            create = await server.wait_for("response.create")
            assert create["type"] == "response.create"
            await server.text_response("Hello there!")
            done = (await until(session, "response_done"))[-1]
            assert isinstance(done, ResponseDoneEvent)
            assert done.status == "completed"
            assert [(m.role, m.text) for m in session.history if isinstance(m, HistoryMessage)] == [
                ("user", "hi"),
                ("assistant", "Hello there!"),
            ]
        assert server.sent_types() == [
            "session.update",
            "conversation.item.create",
            "response.create",
        ]
        assert server.requests[0].headers["Authorization"] == "Bearer sk-test"
        assert "sk-test" not in repr(server.requests[0])
        assert_only_current_task()

    run(body())


def test_scripted_audio_and_gating() -> None:
    async def body() -> None:
        server = ScriptedServer()
        async with RealtimeSession(connector=server.connect) as session:
            await session.send_message("one")
            await server.wait_for("response.create")
            await session.send_message("two")  # a response is requested: held
            assert server.sent_types().count("response.create") == 1
            await server.audio_response("Hi.", [b"\x01\x00" * 240, b"\x02\x00" * 240])
            await server.wait_for("response.create", count=2)  # released after response.done
            events = await until(session, "response_done")
            pcm = b"".join(e.pcm for e in events if isinstance(e, AudioEvent))
            assert len(pcm) == 960

    run(body())


def test_scripted_failures() -> None:
    async def body() -> None:
        server = ScriptedServer()
        server.refuse_next_connect()
        with pytest.raises(ConnectionFailed):
            await RealtimeSession(connector=server.connect).connect()

        async with RealtimeSession(connector=server.connect) as session:
            await server.emit_raw("{broken")
            await server.emit(InputAudioBufferCommitted(event_id="e", item_id="item_1"))
            await server.drop("cable pulled")
            events = await drain(session)
            assert [e.source for e in events if isinstance(e, ErrorEvent)] == ["protocol"]
            close = events[-1]
            assert isinstance(close, CloseEvent)
            assert close.reason == "connection_lost"
            assert isinstance(close.error, TransportClosed)
            assert session.state is SessionState.CLOSED

        async with RealtimeSession(connector=server.connect) as session:
            await server.close(1001, "going away")
            close = (await drain(session))[-1]
            assert close == CloseEvent(
                reason="server_closed",
                code=1001,
                detail="connection closed with code 1001: going away",
            )
        assert_only_current_task()

    run(body())


def test_every_scripted_response_is_valid_ga_traffic() -> None:
    """What the scripted server emits validates against the official types, so a test written
    against it holds against the real service."""
    official = pytest.importorskip("openai.types.realtime")
    adapter = TypeAdapter(official.RealtimeServerEvent)

    async def body() -> None:
        server = ScriptedServer()
        async with RealtimeSession(connector=server.connect, raw_server_events=True) as session:
            await server.text_response("Hello there!")
            await server.audio_response("Hi.", [b"\x01\x00" * 240])
            await server.function_call_response(
                [("call_1", "get_weather", '{"city": "Oslo"}'), ("call_2", "get_time", "{}")]
            )
            open_id = await server.text_response("Still talking", finish=False)
            await server.emit({"type": "response.done", "response": {"id": open_id}})
            done = 0

            def fourth_response_done(event: SessionEvent) -> bool:
                nonlocal done
                done += event.type == "response_done"
                return done == 4

            events = await until(session, fourth_response_done)
        raw = [e.event for e in events if isinstance(e, RawServerEvent)]
        kinds = [e.type for e in raw]
        assert kinds.count("response.done") == 4
        assert kinds.count("response.function_call_arguments.done") == 2
        for event in raw:
            mapping = raw_fields(event)
            assert mapping is not None
            adapter.validate_python(mapping)
        calls = [i for i in session.history if isinstance(i, HistoryFunctionCall)]
        assert [(c.name, c.arguments) for c in calls] == [
            ("get_weather", '{"city": "Oslo"}'),
            ("get_time", "{}"),
        ]

    run(body())
