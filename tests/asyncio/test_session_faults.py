"""RealtimeSession against the local server misbehaving on purpose (voxwire.server.faults):
malformed and unknown frames, delays and a rejected response.create leave the session going —
the next turn works —, an abnormal drop and an expiry end it with the right `close` event, and no
task is left in any case."""

from __future__ import annotations

import pytest

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
    Fault,
    RealtimeConnection,
    RealtimeServer,
    RejectResponse,
    SendMalformed,
    SendUnknown,
)

from .agent_helpers import ask, of_type
from .helpers import MANUAL, SLOW, assert_only_current_task, drain, run, serving, settle, until

GREETING = "Hello! How can I help you today?"


def connection(server: RealtimeServer) -> RealtimeConnection:
    (only,) = server.connections
    return only


def transcripts(events: list[SessionEvent]) -> list[str]:
    return [e.transcript for e in events if isinstance(e, AssistantTranscriptDoneEvent)]


async def next_turn_works(session: RealtimeSession) -> None:
    events = await ask(session, "hello")
    assert transcripts(events) == [GREETING]
    assert [e.status for e in of_type(events, ResponseDoneEvent)] == ["completed"]


async def closed_with(
    session: RealtimeSession, reason: str
) -> tuple[list[SessionEvent], CloseEvent]:
    """Every event until the session ends, and the ``close`` event it ends with, for ``reason``."""
    events = await drain(session)
    close = events[-1]
    assert isinstance(close, CloseEvent)
    assert close.reason == reason
    return events, close


def open_session(server: RealtimeServer) -> RealtimeSession:
    # Waiting for session.updated means the server's connection is registered.
    return RealtimeSession(url=server.url(), config=MANUAL, wait_for_session_updated=True)


@pytest.mark.parametrize(
    ("faults", "errors"),
    [
        # A frame that is not JSON mid-response: one recoverable protocol error.
        ([SendMalformed(after=2, of_type="response.output_text.delta")], [("protocol", True)]),
        # Event types the client does not know: ignored, no error at all.
        ([SendUnknown(of_type="response.created"), SendUnknown(of_type="response.done")], []),
    ],
    ids=["malformed_frame_is_a_recoverable_error", "unknown_event_type_is_ignored"],
)
def test_a_bad_frame_mid_response_leaves_the_turn_whole_and_the_session_going(
    faults: list[Fault], errors: list[tuple[str, bool]]
) -> None:
    async def body() -> None:
        async with serving() as server, open_session(server) as session:
            await connection(server).inject(*faults)
            events = await ask(session, "hello")
            assert [(e.source, e.recoverable) for e in of_type(events, ErrorEvent)] == errors
            # The response the bad frames came in is whole all the same.
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
            events = await ask(session, "hello")
            assert transcripts(events) == [GREETING]
            assert not of_type(events, ErrorEvent)
        assert_only_current_task()

    run(body())


def test_abnormal_drop_mid_response_ends_with_a_close_event_carrying_the_error() -> None:
    async def body() -> None:
        async with serving(pacing=SLOW) as server, open_session(server) as session:
            await connection(server).inject(Drop(after=2, of_type="response.output_text.delta"))
            await session.send_message("hello")
            events, close = await closed_with(session, "connection_lost")
            assert isinstance(close.error, TransportClosed)
            assert close.error.code is None  # no close frame was received
            assert close.detail == "connection lost without a close frame"
            assert not close.error.clean
            assert not of_type(events, ResponseDoneEvent)
        assert_only_current_task()

    run(body())


def test_drop_with_1011_ends_with_its_code_and_reason() -> None:
    async def body() -> None:
        async with serving() as server, open_session(server) as session:
            await connection(server).inject(Drop(code=1011, reason="model crashed"))
            _, close = await closed_with(session, "connection_lost")
            assert close.code == 1011
            assert "model crashed" in close.detail
        assert_only_current_task()

    run(body())


def test_expire_now_is_the_service_error_then_a_clean_close() -> None:
    async def body() -> None:
        async with serving() as server, open_session(server) as session:
            await connection(server).inject(Expire())
            events, close = await closed_with(session, "server_closed")
            assert [e.code for e in of_type(events, ErrorEvent)] == ["session_expired"]
            assert close.code == 1000
        assert_only_current_task()

    run(body())
