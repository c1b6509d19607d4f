"""RealtimeSession against the local server misbehaving on purpose (voxwire.server.faults):
malformed and unknown frames, delays and a rejected response.create leave the session going —
the next turn works —, an abnormal drop and an expiry end it with the right `close` event, and no
task is left in any case."""

from __future__ import annotations

from voxwire.asyncio import (
    AssistantTranscriptDoneEvent,
    CloseEvent,
    ErrorEvent,
    RealtimeSession,
    ResponseDoneEvent,
    SessionEvent,
    TransportClosed,
)
from voxwire.server import (
    Delay,
    Drop,
    Expire,
    RealtimeConnection,
    RealtimeServer,
    RejectResponse,
    SendMalformed,
    SendUnknown,
)

from .helpers import MANUAL, SLOW, assert_only_current_task, drain, run, serving, settle, until

GREETING = "Hello! How can I help you today?"


def connection(server: RealtimeServer) -> RealtimeConnection:
    (only,) = server.connections
    return only


def transcripts(events: list[SessionEvent]) -> list[str]:
    return [e.transcript for e in events if isinstance(e, AssistantTranscriptDoneEvent)]


async def next_turn_works(session: RealtimeSession) -> None:
    await session.send_message("hello")
    events = await settle(session)
    assert transcripts(events) == [GREETING]
    assert [e.status for e in events if isinstance(e, ResponseDoneEvent)] == ["completed"]


def open_session(server: RealtimeServer) -> RealtimeSession:
    # Waiting for session.updated means the server's connection is registered.
    return RealtimeSession(url=server.url(), config=MANUAL, wait_for_session_updated=True)


def test_malformed_frame_mid_response_is_a_recoverable_error_and_the_turn_completes() -> None:
    async def body() -> None:
        async with serving() as server, open_session(server) as session:
            await connection(server).inject(
                SendMalformed(after=2, of_type="response.output_text.delta")
            )
            await session.send_message("hello")
            events = await settle(session)
            errors = [e for e in events if isinstance(e, ErrorEvent)]
            assert len(errors) == 1
            assert errors[0].source == "protocol"
            assert errors[0].recoverable
            # The response the broken frame interrupted is whole all the same.
            assert transcripts(events) == [GREETING]
            await next_turn_works(session)
        assert_only_current_task()

    run(body())


def test_unknown_event_type_is_ignored_and_the_session_goes_on() -> None:
    async def body() -> None:
        async with serving() as server, open_session(server) as session:
            await connection(server).inject(
                SendUnknown(of_type="response.created"), SendUnknown(of_type="response.done")
            )
            await session.send_message("hello")
            events = await settle(session)
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            assert transcripts(events) == [GREETING]
            await next_turn_works(session)
        assert_only_current_task()

    run(body())


def test_rejected_response_create_is_a_server_error_and_the_gate_reopens() -> None:
    async def body() -> None:
        async with serving() as server, open_session(server) as session:
            await connection(server).inject(RejectResponse())
            await session.send_message("hello")
            events = await until(session, "error")
            error = events[-1]
            assert isinstance(error, ErrorEvent)
            assert error.source == "server"
            assert error.message.startswith("The server had an error")
            assert error.event_id is not None  # names the response.create: the gate reopens
            assert session.protocol.can_create_response
            # The application asks again; this time it is answered.
            await session.create_response()
            events = await settle(session)
            assert transcripts(events) == [GREETING]
            await next_turn_works(session)
        assert_only_current_task()

    run(body())


def test_delayed_events_arrive_in_order() -> None:
    async def body() -> None:
        async with (
            serving(faults=[Delay(ms=20, of_type="response.output_text.delta")]) as server,
            open_session(server) as session,
        ):
            await session.send_message("hello")
            events = await settle(session)
            assert transcripts(events) == [GREETING]
            assert not [e for e in events if isinstance(e, ErrorEvent)]
        assert_only_current_task()

    run(body())


def test_abnormal_drop_mid_response_ends_with_a_close_event_carrying_the_error() -> None:
    async def body() -> None:
        async with serving(pacing=SLOW) as server, open_session(server) as session:
            await connection(server).inject(Drop(after=2, of_type="response.output_text.delta"))
            await session.send_message("hello")
            events = await drain(session)
            close = events[-1]
            assert isinstance(close, CloseEvent)
            assert close.reason == "connection_lost"
            assert isinstance(close.error, TransportClosed)
            assert close.error.code is None  # no close frame was received
            assert close.detail == "connection lost without a close frame"
            assert not close.error.clean
            assert not [e for e in events if isinstance(e, ResponseDoneEvent)]
        assert_only_current_task()

    run(body())


def test_drop_with_1011_ends_with_its_code_and_reason() -> None:
    async def body() -> None:
        async with serving() as server, open_session(server) as session:
            await connection(server).inject(Drop(code=1011, reason="model crashed"))
            events = await drain(session)
            close = events[-1]
            assert isinstance(close, CloseEvent)
            assert close.reason == "connection_lost"
            assert close.code == 1011
            assert "model crashed" in close.detail
        assert_only_current_task()

    run(body())


def test_expire_now_is_the_service_error_then_a_clean_close() -> None:
    async def body() -> None:
        async with serving() as server, open_session(server) as session:
            await connection(server).inject(Expire())
            events = await drain(session)
            errors = [e for e in events if isinstance(e, ErrorEvent)]
            assert [e.code for e in errors] == ["session_expired"]
            close = events[-1]
            assert isinstance(close, CloseEvent)
            assert close.reason == "server_closed"
            assert close.code == 1000
        assert_only_current_task()

    run(body())
