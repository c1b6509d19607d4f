"""Renewal past the maximum session duration (asyncio/connection/renewal.py), against the real
local server on loopback with its session expiry set to about a second: planned renewals at turn
boundaries across three expiries, expiries arriving first, the conversation intact on every new
server session (the server holds the replayed items), every replayed client event valid under
the official types and accepted by the server, a send made during a switch delivered once, a
renewal waiting for the response in progress."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from voxwire.asyncio import (
    CloseEvent,
    ErrorEvent,
    RealtimeSession,
    ReconnectingEvent,
    RenewalPolicy,
    RenewedEvent,
    ResponseDoneEvent,
    SessionEvent,
    SessionState,
)
from voxwire.exceptions import ConfigurationError
from voxwire.server import RealtimeServer

from .agent_helpers import ask, of_type
from .helpers import MANUAL, SLOW, assert_only_current_task, run, serving, until
from .renewal_helpers import (
    RecordingConnector,
    check_official_client,
    server_messages,
    session_messages,
)

GREETING = "Hello! How can I help you today?"


def renewing_session(
    server: RealtimeServer, renewal: RenewalPolicy, **options: Any
) -> RealtimeSession:
    return RealtimeSession(
        url=server.url(), config=MANUAL, wait_for_session_updated=True, renewal=renewal, **options
    )


def ids(server: RealtimeServer) -> list[str | None]:
    return [item.id for item in server.connections[-1].session.conversation.items()]


async def next_renewal(
    session: RealtimeSession, server: RealtimeServer
) -> tuple[RenewedEvent, list[SessionEvent]]:
    """The next ``renewed`` event and the events up to it; the conversation is the same before
    and after, and the new server session holds it."""
    before = session.history
    events = await until(session, "renewed", timeout_s=5)
    renewed = events[-1]
    assert isinstance(renewed, RenewedEvent)
    assert renewed.items_replayed == len(before)
    assert renewed.old_session_id != renewed.new_session_id
    assert session.history == before
    assert ids(server) == [i.item_id for i in before]
    return renewed, events


def check_replays(connector: RecordingConnector) -> None:
    """Every client event sent on a new connection is valid under the official types, the
    agent's configuration first."""
    for sent in connector.sent[1:]:
        assert sent[0]["type"] == "session.update"
        for raw in sent:
            check_official_client(raw)


# --- the policy -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"after_s": 0}, "after_s=0 is invalid"),
        ({"after_s": float("inf")}, "after_s=inf is invalid"),
        ({"after_s": "soon"}, "after_s='soon' is invalid"),
        ({"retry_s": -1}, "retry_s=-1 is invalid"),
        ({"attempts": 0}, "attempts=0 is invalid"),
        ({"attempts": True}, "attempts=True is invalid"),
    ],
)
def test_a_bad_policy_is_refused_at_construction(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        RenewalPolicy(**options)


def test_the_default_is_55_of_60_minutes_and_the_session_checks_the_type() -> None:
    assert RenewalPolicy().after_s == 55 * 60
    with pytest.raises(ConfigurationError, match="renewal=3300 is invalid"):
        RealtimeSession(renewal=3300)  # type: ignore[arg-type]


# --- planned renewals -----------------------------------------------------------------------------


def test_three_planned_renewals_before_each_expiry_keep_the_conversation() -> None:
    """The server expires sessions after 1.5 s; the renewal comes after 0.4 s, at a turn
    boundary, three times, with a turn on each server session. The history is the same before
    and after each switch, the new server holds it, every client event sent on the new
    connections is valid under the official types, and the server refused none."""

    async def body() -> None:
        connector = RecordingConnector()
        policy = RenewalPolicy(after_s=0.4)
        async with (
            serving(max_session_s=1.5) as server,
            renewing_session(server, policy, connector=connector) as session,
        ):
            await ask(session, "hello")
            renewals: list[RenewedEvent] = []
            for turn in range(3):
                renewed, events = await next_renewal(session, server)
                assert not of_type(events, ErrorEvent)
                renewals.append(renewed)
                assert renewed.reason == "planned"
                events = await ask(session, f"turn {turn}")
                assert not of_type(events, ErrorEvent)
                assert session_messages(session) == server_messages(server)
            assert session.state is SessionState.OPEN
            assert len(server.connections) == 1  # every old connection was closed
        # Each switch names the server sessions it went from and to, in a chain.
        sessions = [(r.old_session_id, r.new_session_id) for r in renewals]
        assert all(old and new and old != new for old, new in sessions)
        assert [new for _, new in sessions[:-1]] == [old for old, _ in sessions[1:]]
        assert all(0 <= r.switch_s < 1.0 for r in renewals)
        assert session_messages(session)[:2] == [("user", "hello"), ("assistant", GREETING)]
        assert len(session_messages(session)) == 8
        # The replays: valid client events, the restored items chained in conversation order.
        assert len(connector.sent) == 4
        check_replays(connector)
        assert_only_current_task()

    run(body(), timeout_s=40)


def test_a_renewal_due_during_a_response_waits_for_its_end() -> None:
    async def body() -> None:
        policy = RenewalPolicy(after_s=0.3)
        async with (
            serving(max_session_s=30, pacing=SLOW) as server,
            renewing_session(server, policy) as session,
        ):
            await session.send_message("tell me a story")
            events = await until(session, "renewed", timeout_s=15)
            done = of_type(events, ResponseDoneEvent)
            assert [d.status for d in done] == ["completed"]
            assert events.index(done[0]) < len(events) - 1
            assert session_messages(session)[-1][0] == "assistant"
            assert ids(server) == [i.item_id for i in session.history]
        assert_only_current_task()

    run(body(), timeout_s=30)


def test_a_message_sent_while_the_new_connection_is_prepared_is_delivered_once() -> None:
    """The new connection's handshake is held; meanwhile the application sends a message (the
    old server takes it). The switch carries it over: it is created on the new server after
    the replayed items, once, and the next turn is answered after it."""

    async def body() -> None:
        connector = RecordingConnector()
        connector.hold(1)
        policy = RenewalPolicy(after_s=0.3)
        async with (
            serving(max_session_s=30) as server,
            renewing_session(server, policy, connector=connector) as session,
        ):
            await ask(session, "hello")
            await connector.opened(1)
            await session.send_message("sent during the switch", trigger_response=False)
            await until(session, "history_added")
            connector.release(1)
            events = await until(session, "renewed")
            renewed = events[-1]
            assert isinstance(renewed, RenewedEvent)
            assert (renewed.items_replayed, renewed.items_resent) == (2, 1)
            await ask(session, "what now")
            expected = [
                ("user", "hello"),
                ("assistant", GREETING),
                ("user", "sent during the switch"),
                ("user", "what now"),
                ("assistant", "You said: what now"),
            ]
            assert session_messages(session) == expected
            assert server_messages(server) == expected
            creates = [
                raw["item"]["content"][0]["text"]
                for raw in connector.sent[1]
                if raw["type"] == "conversation.item.create" and raw["item"]["role"] == "user"
            ]
            assert creates.count("sent during the switch") == 1
            for raw in connector.sent[1]:
                check_official_client(raw)
        assert_only_current_task()

    run(body())


# --- expiries arriving first ----------------------------------------------------------------------


def test_three_expiries_arriving_first_are_renewed_the_same_way() -> None:
    """The renewal is due long after the server's 0.8 s limit: each expiry (``session_expired``,
    then a clean close) is followed by a new connection with the conversation restored and a
    ``renewed`` event (``reason="expired"``), never ``reconnecting`` or ``close``."""

    async def body() -> None:
        connector = RecordingConnector()
        policy = RenewalPolicy(after_s=3600)
        async with (
            serving(max_session_s=0.8) as server,
            renewing_session(server, policy, connector=connector) as session,
        ):
            await ask(session, "hello")
            for turn in range(3):
                renewed, events = await next_renewal(session, server)
                assert not of_type(events, ReconnectingEvent)
                assert not of_type(events, CloseEvent)
                (expired,) = of_type(events, ErrorEvent)
                assert expired.code == "session_expired"
                assert renewed.reason == "expired"
                await ask(session, f"turn {turn}")
                assert session_messages(session) == server_messages(server)
            assert session.state is SessionState.OPEN
        assert len(session_messages(session)) == 8
        check_replays(connector)
        assert_only_current_task()

    run(body(), timeout_s=40)


def test_without_renewal_an_expiry_still_ends_the_session() -> None:
    async def body() -> None:
        async with (
            serving(max_session_s=0.5) as server,
            RealtimeSession(url=server.url(), config=MANUAL) as session,
        ):
            events = await until(session, "close", timeout_s=5)
            assert not of_type(events, RenewedEvent)
            close = events[-1]
            assert isinstance(close, CloseEvent)
            assert (close.reason, close.code) == ("server_closed", 1000)
        assert_only_current_task()

    run(body())


def test_close_while_a_renewal_is_prepared_is_prompt_and_leaves_no_task() -> None:
    async def body() -> None:
        connector = RecordingConnector()
        connector.hold(1)  # the new connection's handshake never goes on
        async with serving(max_session_s=30) as server:
            session = renewing_session(server, RenewalPolicy(after_s=0.2), connector=connector)
            await session.connect()
            await connector.opened(1)
            await asyncio.wait_for(session.close(), 3)
            assert session.state is SessionState.CLOSED
            await asyncio.sleep(0.05)
            assert len(server.connections) == 0  # the prepared connection was closed too
        assert_only_current_task()

    run(body())
