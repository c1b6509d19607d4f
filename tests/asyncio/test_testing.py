"""voxwire.testing: the scripted server users test their applications with."""

from __future__ import annotations

import pytest

from voxwire.agents import RealtimeAgent
from voxwire.asyncio import (
    AudioEvent,
    CloseEvent,
    ConnectionFailed,
    ErrorEvent,
    HistoryMessage,
    RealtimeSession,
    ResponseDoneEvent,
    SessionState,
    TransportClosed,
)
from voxwire.protocol import InputAudioBufferCommitted
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
