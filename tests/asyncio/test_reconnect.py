"""Reconnection and resumption (asyncio/connection/reconnect.py): a lost connection with a
ReconnectPolicy is followed by `reconnecting` / `reconnected`, the new server session holds the
restored conversation and the next turn answers after it; without a policy, after a clean close or
an expiry the session ends as before; every attempt failing ends it with the last error; close()
during the backoff is prompt; a tool output not delivered before the drop is delivered once.
Real loopback websockets against the local server, or the scripted server for exact scripts."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import (
    CloseEvent,
    ConnectionFailed,
    ConnectRequest,
    ErrorEvent,
    HistoryFunctionCall,
    HistoryMessage,
    RealtimeSession,
    ReconnectedEvent,
    ReconnectingEvent,
    ReconnectPolicy,
    ResponseDoneEvent,
    SessionEvent,
    SessionReconnecting,
    SessionState,
    ToolEndEvent,
    Transport,
    TransportClosed,
)
from voxwire.exceptions import ConfigurationError
from voxwire.protocol.items import FunctionCallItem, FunctionCallOutputItem, MessageItem
from voxwire.server import Drop, Expire, RealtimeServer
from voxwire.testing import ScriptedServer

from .agent_helpers import ask, of_type
from .agent_helpers import settle as settle_all
from .helpers import MANUAL, assert_only_current_task, drain, run, serving, until

GREETING = "Hello! How can I help you today?"
FAST_RETRY = ReconnectPolicy(attempts=3, backoff_s=0)


def reconnecting_session(server: RealtimeServer, **options: Any) -> RealtimeSession:
    options.setdefault("reconnect", FAST_RETRY)
    return RealtimeSession(
        url=server.url(), config=MANUAL, wait_for_session_updated=True, **options
    )


def held_weather_agent() -> tuple[RealtimeAgent, asyncio.Event, list[str]]:
    """An agent whose ``get_weather`` tool notes each run (the city) in ``runs`` and returns
    only once ``release`` is set: (agent, release, runs)."""
    release = asyncio.Event()
    runs: list[str] = []

    @function_tool
    async def get_weather(city: str) -> dict[str, int]:
        """The weather in a city."""
        runs.append(city)
        await release.wait()
        return {"temperature": 21}

    return RealtimeAgent(name="helper", instructions="Help.", tools=[get_weather]), release, runs


def server_items(server: RealtimeServer) -> list[Any]:
    """The newest server session's conversation, as the server holds it."""
    return server.connections[-1].session.conversation.items()


def all_seen(*kinds: str) -> Callable[[SessionEvent], bool]:
    """A condition for ``until``: true once an event of each of ``kinds`` was seen."""
    missing = set(kinds)

    def check(event: SessionEvent) -> bool:
        missing.discard(event.type)
        return not missing

    return check


def messages(session: RealtimeSession) -> list[tuple[str, str]]:
    return [(i.role, i.text) for i in session.history if isinstance(i, HistoryMessage)]


# --- the policy -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"attempts": 0}, "attempts=0 is invalid"),
        ({"attempts": 1.5}, "attempts=1.5 is invalid"),
        ({"attempts": True}, "attempts=True is invalid"),
        ({"backoff_s": -1}, "-1 is not a finite number of seconds >= 0"),
        ({"backoff_s": ()}, r"backoff_s=\(\) is invalid"),
        ({"backoff_s": (0.5, float("nan"))}, "nan is not a finite number"),
        ({"backoff_s": "1"}, "backoff_s='1' is invalid"),
        ({"restore_history": "yes"}, "restore_history='yes' is invalid"),
    ],
)
def test_a_bad_policy_is_refused_at_construction(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ReconnectPolicy(**options)


def test_policy_delays_repeat_the_last_one_and_the_session_checks_its_type() -> None:
    policy = ReconnectPolicy(attempts=5, backoff_s=(0.5, 1, 2))
    assert [policy.delay_s(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 2.0, 2.0]
    assert ReconnectPolicy(backoff_s=0.25).delay_s(3) == 0.25
    with pytest.raises(ConfigurationError, match="expected a ReconnectPolicy"):
        RealtimeSession(url="ws://127.0.0.1:1/v1/realtime", reconnect=3)  # type: ignore[arg-type]


# --- resuming on the local server -----------------------------------------------------------------


def test_a_drop_mid_conversation_reconnects_restores_the_history_and_the_next_turn_works() -> None:
    async def body() -> None:
        async with serving() as server, reconnecting_session(server) as session:
            await ask(session, "hello")
            before = session.history
            first_url = session.url
            await server.connections[-1].inject(Drop())  # no close frame: 1006
            events = await until(session, "reconnected")
            (reconnecting,) = of_type(events, ReconnectingEvent)
            assert reconnecting.attempt == 1
            assert isinstance(reconnecting.error, TransportClosed)
            assert not reconnecting.error.clean
            reconnected = events[-1]
            assert isinstance(reconnected, ReconnectedEvent)
            assert (reconnected.url, reconnected.items_restored) == (first_url, 2)
            assert session.state is SessionState.OPEN
            # The new server session holds the conversation, with the same ids, in order.
            restored = server_items(server)
            assert [i.id for i in restored] == [i.item_id for i in before]
            user, assistant = restored
            assert isinstance(user, MessageItem)
            assert isinstance(assistant, MessageItem)
            assert (user.role, assistant.role) == ("user", "assistant")
            assert assistant.content[0].type == "output_text"
            assert messages(session) == [("user", "hello"), ("assistant", GREETING)]
            # The next turn is answered after the restored items.
            events = await ask(session, "what did I say")
            assert not of_type(events, ErrorEvent)
            assert messages(session) == [
                ("user", "hello"),
                ("assistant", GREETING),
                ("user", "what did I say"),
                ("assistant", "You said: what did I say"),
            ]
            assert [i.id for i in server_items(server)] == [i.item_id for i in session.history]
        assert_only_current_task()

    run(body())


def test_a_response_cut_by_the_drop_is_done_cancelled_and_the_session_goes_on() -> None:
    async def body() -> None:
        async with serving() as server, reconnecting_session(server) as session:
            await server.connections[-1].inject(Drop(after=2, of_type="response.output_text.delta"))
            await session.send_message("story")
            events = await until(session, "reconnected")
            done = of_type(events, ResponseDoneEvent)
            assert [(d.status, d.status_details.reason) for d in done] == [
                ("cancelled", "connection_lost")
            ]
            assert session.protocol.can_create_response
            # The user's message was acknowledged before the drop: it is restored; the cut
            # assistant message is not.
            assert [m[0] for m in messages(session)] == ["user"]
            assert events[-1] == ReconnectedEvent(
                url=session.url, items_restored=1, items_skipped=1
            )
            events = await ask(session, "hello")
            assert [e.status for e in of_type(events, ResponseDoneEvent)] == ["completed"]
            assert messages(session)[-1] == ("assistant", GREETING)
        assert_only_current_task()

    run(body())


def test_without_a_policy_a_drop_ends_the_session_as_before() -> None:
    async def body() -> None:
        async with serving() as server, reconnecting_session(server, reconnect=None) as session:
            await server.connections[-1].inject(Drop())
            events = await drain(session)
            assert not of_type(events, ReconnectingEvent)
            close = events[-1]
            assert isinstance(close, CloseEvent)
            assert close.reason == "connection_lost"
        assert_only_current_task()

    run(body())


def test_an_expired_session_is_not_resumed() -> None:
    async def body() -> None:
        async with serving() as server, reconnecting_session(server) as session:
            await server.connections[-1].inject(Expire())
            events = await drain(session)
            assert not of_type(events, ReconnectingEvent)
            close = events[-1]
            assert isinstance(close, CloseEvent)
            assert (close.reason, close.code) == ("server_closed", 1000)
            assert len(server.connections) <= 1
        assert_only_current_task()

    run(body())


# --- scripted cases -------------------------------------------------------------------------------


def scripted_session(server: ScriptedServer, **options: Any) -> RealtimeSession:
    options.setdefault("reconnect", FAST_RETRY)
    return RealtimeSession(connector=server.connect, config=MANUAL, **options)


def test_a_clean_close_is_never_reconnected() -> None:
    async def body() -> None:
        server = ScriptedServer()
        async with scripted_session(server) as session:
            await server.wait_for("session.update")
            await server.close(1000, "bye")
            events = await drain(session)
            assert not of_type(events, ReconnectingEvent)
            assert events[-1] == CloseEvent(
                reason="server_closed", code=1000, detail="connection closed with code 1000: bye"
            )
        assert len(server.requests) == 1
        assert_only_current_task()

    run(body())


def test_a_drop_after_session_expired_is_not_reconnected() -> None:
    async def body() -> None:
        server = ScriptedServer()
        async with scripted_session(server) as session:
            await server.wait_for("session.update")
            await server.emit(
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "code": "session_expired",
                        "message": "Your session hit the maximum duration of 60 minutes.",
                    },
                }
            )
            await server.drop()
            events = await drain(session)
            assert not of_type(events, ReconnectingEvent)
            assert isinstance(events[-1], CloseEvent)
            assert events[-1].reason == "connection_lost"
        assert len(server.requests) == 1
        assert_only_current_task()

    run(body())


class FailingAfterFirst:
    """A connector that opens the scripted server once and then fails: a server gone for good."""

    def __init__(self, server: ScriptedServer) -> None:
        self.server = server
        self.calls = 0

    async def __call__(self, request: ConnectRequest) -> Transport:
        self.calls += 1
        if self.calls > 1:
            raise ConnectionFailed(f"could not connect to {request.url}: refused ({self.calls})")
        return await self.server.connect(request)


def test_every_attempt_failing_ends_with_the_last_error_after_the_policy_attempts() -> None:
    async def body() -> None:
        server = ScriptedServer()
        connector = FailingAfterFirst(server)
        policy = ReconnectPolicy(attempts=3, backoff_s=(0, 0.01))
        async with RealtimeSession(connector=connector, config=MANUAL, reconnect=policy) as session:
            await server.wait_for("session.update")
            await server.drop()
            events = await drain(session)
            attempts = of_type(events, ReconnectingEvent)
            assert [(a.attempt, a.delay_s) for a in attempts] == [(1, 0), (2, 0.01), (3, 0.01)]
            assert isinstance(attempts[0].error, TransportClosed)
            assert all(isinstance(a.error, ConnectionFailed) for a in attempts[1:])
            close = events[-1]
            assert isinstance(close, CloseEvent)
            assert close.reason == "connection_lost"
            assert isinstance(close.error, ConnectionFailed)
            assert "refused (4)" in str(close.error)  # the last attempt's error
            assert close.detail.startswith("gave up reconnecting after 3 attempt(s)")
            assert not of_type(events, ReconnectedEvent)
        assert connector.calls == 4
        assert_only_current_task()

    run(body())


def test_close_during_the_backoff_is_prompt_and_leaves_no_task() -> None:
    async def body() -> None:
        server = ScriptedServer()
        session = scripted_session(server, reconnect=ReconnectPolicy(attempts=2, backoff_s=30))
        await session.connect()
        await server.wait_for("session.update")
        await server.drop()
        await until(session, "reconnecting")
        assert session.state is SessionState.RECONNECTING
        with pytest.raises(SessionReconnecting, match="wait for the 'reconnected' event"):
            await session.send_message("anyone there?")
        await session.send_audio(b"\0\0" * 240)  # dropped while reconnecting, no error
        started = time.monotonic()
        await session.close()
        assert time.monotonic() - started < 1.0
        events = await drain(session)
        assert events[-1] == CloseEvent(reason="client_closed")
        assert len(server.requests) == 1
        assert "input_audio_buffer.append" not in server.sent_types()
        assert_only_current_task()

    run(body())


def test_resumption_sends_the_configuration_with_tracing_and_the_items_chained() -> None:
    async def body() -> None:
        server = ScriptedServer()
        agent = RealtimeAgent(name="helper", instructions="Be brief.")
        async with scripted_session(server, agent=agent, workflow_name="support") as session:
            await session.send_message("hi", trigger_response=False)
            await server.wait_for("conversation.item.create")
            await until(session, "history_added")
            await server.drop()
            await until(session, "reconnected")
        first, second = server.sent_of_type("session.update")
        for update in (first, second):
            assert update["session"]["instructions"] == "Be brief."
            assert update["session"]["tracing"] == {"workflow_name": "support"}
        created = server.sent_of_type("conversation.item.create")
        assert created[1]["item"]["id"] == created[0]["item"]["id"]
        assert created[1]["previous_item_id"] == "root"
        assert created[1]["item"]["content"] == [{"type": "input_text", "text": "hi"}]
        assert len(server.requests) == 2
        assert_only_current_task()

    run(body())


def test_requests_no_response_answered_are_asked_again_with_their_parameters() -> None:
    async def body() -> None:
        server = ScriptedServer()
        async with scripted_session(server) as session:
            await session.create_response(instructions="first")  # in flight
            await session.create_response(instructions="second")  # held behind it
            await server.wait_for("response.create")
            await server.drop()
            await until(session, "reconnected")
            await server.wait_for("response.create", count=2)
            pending = session.protocol.unanswered_response_requests
            assert [p.instructions for p in pending if p is not None] == ["first", "second"]
            await server.text_response("One.")  # answers the first: the second goes
            await server.wait_for("response.create", count=3)
        sent = [e["response"]["instructions"] for e in server.sent_of_type("response.create")]
        # Before the drop only the first went out; after it the first is asked for again and
        # the second follows it, each with its own parameters.
        assert sent == ["first", "first", "second"]
        assert_only_current_task()

    run(body())


# --- a tool output that missed the lost connection ------------------------------------------------


def test_a_tool_output_not_delivered_before_the_drop_is_delivered_once_after_resuming() -> None:
    async def body() -> None:
        agent, release, runs = held_weather_agent()
        async with (
            serving() as server,
            RealtimeSession(
                agent,
                url=server.url(),
                config=MANUAL,
                wait_for_session_updated=True,
                reconnect=ReconnectPolicy(attempts=2, backoff_s=0.3),
            ) as session,
        ):
            await session.send_message("what is the weather")
            # The tool is running and the call's response is over (in either order).
            await until(session, all_seen("tool_start", "response_done"))
            await server.connections[-1].inject(Drop())
            await until(session, "reconnecting")
            release.set()  # the tool finishes while the session reconnects
            events = await until(session, "reconnected")
            assert of_type(events, ToolEndEvent)  # its output could not be sent then
            events = await settle_all(session)
            assert runs == ["Paris"]  # the tool ran once
            items = server_items(server)
            calls = [i for i in items if isinstance(i, FunctionCallItem)]
            outputs = [i for i in items if isinstance(i, FunctionCallOutputItem)]
            assert len(calls) == 1
            assert [o.call_id for o in outputs] == [calls[0].call_id]
            assert outputs[0].output == '{"temperature":21}'
            call = next(i for i in session.history if isinstance(i, HistoryFunctionCall))
            assert call.output == outputs[0].output
            assert messages(session)[-1] == ("assistant", "It is 21 degrees in Paris.")
            assert not of_type(events, ErrorEvent)
        assert_only_current_task()

    run(body())
