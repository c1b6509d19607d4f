"""Reconnection: items the application (or a tool) sent and the lost server never acknowledged
are sent again on the new connection — after the restored history, in their original order,
each once — and a response asked for them is asked for again after them; items the lost server
acknowledged are restored, never sent twice. Real loopback websockets against the local server
with fault injection, the scripted server for exact wire order, and the pure plan."""

from __future__ import annotations

from typing import Any

from voxwire.asyncio import (
    ErrorEvent,
    HistoryAddedEvent,
    HistoryMessage,
    RealtimeSession,
    ReconnectedEvent,
    ResponseDoneEvent,
)
from voxwire.protocol import (
    MessageItem,
)
from voxwire.protocol.items import FunctionCallItem, FunctionCallOutputItem
from voxwire.server import Delay, Drop, RealtimeServer
from voxwire.server.connection import RealtimeConnection
from voxwire.testing import ScriptedServer

from .agent_helpers import ask, of_type, settle
from .helpers import MANUAL, assert_only_current_task, run, serving, until
from .test_reconnect import (
    FAST_RETRY,
    all_seen,
    held_weather_agent,
    messages,
    reconnecting_session,
    server_items,
)

GREETING = "Hello! How can I help you today?"


def texts(items: list[Any]) -> list[str]:
    """The text of the server's message items, in conversation order."""
    return [
        part.text
        for item in items
        if isinstance(item, MessageItem)
        for part in item.content
        if part.text is not None
    ]


async def cut_before_the_next_client_event(server: RealtimeServer) -> RealtimeConnection:
    """Make the connection end before the server reads anything the client sends after the
    coming ``input_audio_buffer.clear``: the local server serves one client event at a time, so
    while it holds the ``cleared`` answer (300 ms) it reads nothing, and it drops the connection
    right after sending it. Whatever the client sends in those 300 ms is never acknowledged.
    Returns the connection to be lost (``server.connections`` lists the live ones)."""
    connection = server.connections[-1]
    await connection.inject(
        Delay(ms=300, of_type="input_audio_buffer.cleared", count=1),
        Drop(of_type="input_audio_buffer.cleared"),
    )
    return connection


# --- on the local server --------------------------------------------------------------------------


def test_a_message_the_lost_server_never_acknowledged_is_sent_again_once_and_answered_once() -> (
    None
):
    async def body() -> None:
        async with serving() as server, reconnecting_session(server) as session:
            await ask(session, "hello")
            lost = await cut_before_the_next_client_event(server)
            await session.clear_audio()
            await session.send_message("are you still there")
            events = await until(session, "reconnected")
            # The lost server never took the message in: it was not in the history yet.
            assert texts(lost.session.conversation.items()) == ["hello", GREETING]
            assert not of_type(events, HistoryAddedEvent)
            assert events[-1] == ReconnectedEvent(
                url=session.url, items_restored=2, items_skipped=0, items_resent=1
            )
            events = await settle(session)
            assert not of_type(events, ErrorEvent)
            # The message joins the history once, then its one answer (added empty, streamed).
            added = [e.item for e in of_type(events, HistoryAddedEvent)]
            assert all(isinstance(i, HistoryMessage) for i in added)
            assert [(i.role, i.text if i.role == "user" else "") for i in added] == [
                ("user", "are you still there"),
                ("assistant", ""),
            ]
            assert [d.status for d in of_type(events, ResponseDoneEvent)] == ["completed"]
            expected = [
                ("user", "hello"),
                ("assistant", GREETING),
                ("user", "are you still there"),
                ("assistant", "You said: are you still there"),
            ]
            assert messages(session) == expected
            # The new server holds the same conversation, ids included.
            items = server_items(server)
            assert texts(items) == [text for _, text in expected]
            assert [i.id for i in items] == [i.item_id for i in session.history]
            assert server.connections[-1] is not lost
        assert_only_current_task()

    run(body())


def test_a_message_the_lost_server_acknowledged_is_restored_and_not_sent_again() -> None:
    async def body() -> None:
        async with serving() as server, reconnecting_session(server) as session:
            await session.send_message("remember the milk", trigger_response=False)
            await until(session, "history_added")
            await server.connections[-1].inject(Drop())
            events = await until(session, "reconnected")
            assert events[-1] == ReconnectedEvent(
                url=session.url, items_restored=1, items_skipped=0, items_resent=0
            )
            events = await ask(session, "hello")
            # A second create of the same id would be refused (item_already_exists).
            assert not of_type(events, ErrorEvent)
            assert texts(server_items(server)) == ["remember the milk", "hello", GREETING]
            assert messages(session)[0] == ("user", "remember the milk")
            assert len(session.history) == 3
        assert_only_current_task()

    run(body())


def test_a_tool_output_and_a_message_both_unacknowledged_are_each_sent_once() -> None:
    async def body() -> None:
        agent, release, runs = held_weather_agent()
        async with (
            serving() as server,
            RealtimeSession(
                agent,
                url=server.url(),
                config=MANUAL,
                wait_for_session_updated=True,
                reconnect=FAST_RETRY,
            ) as session,
        ):
            await session.send_message("what is the weather")
            await until(session, all_seen("tool_start", "response_done"))
            connection = await cut_before_the_next_client_event(server)
            await session.clear_audio()
            release.set()
            await until(session, "tool_end")  # its output is queued (and going out) now
            await session.send_message("and tomorrow")
            events = await until(session, "reconnected")
            lost = connection.session.conversation.items()
            assert not [i for i in lost if isinstance(i, FunctionCallOutputItem)]
            assert texts(lost)[-1] == "what is the weather"
            reconnected = events[-1]
            assert isinstance(reconnected, ReconnectedEvent)
            # The output (sent again by the tool runner, same item id) and the message.
            assert reconnected.items_resent == 2
            events = await settle(session)
            assert not of_type(events, ErrorEvent)
            assert runs == ["Paris"]
            items = server_items(server)
            (call,) = [i for i in items if isinstance(i, FunctionCallItem)]
            (output,) = [i for i in items if isinstance(i, FunctionCallOutputItem)]
            assert output.call_id == call.call_id
            assert texts(items).count("and tomorrow") == 1
            assert [i.id for i in items] == [i.item_id for i in session.history]
        assert_only_current_task()

    run(body())


# --- exact wire order (scripted server) -----------------------------------------------------------


def test_a_message_and_its_response_request_go_again_as_message_then_response() -> None:
    async def body() -> None:
        server = ScriptedServer(acknowledge_items=False)
        async with RealtimeSession(
            connector=server.connect, config=MANUAL, reconnect=FAST_RETRY
        ) as session:
            await server.wait_for("session.update")
            await session.send_message("first", trigger_response=False)
            await session.send_message("second")
            await server.wait_for("response.create")
            before = len(server.sent)
            await server.drop()
            events = await until(session, "reconnected")
            assert events[-1] == ReconnectedEvent(
                url=session.url, items_restored=0, items_skipped=0, items_resent=2
            )
            await server.wait_for("response.create", count=2)
            again = server.sent[before:]
            assert [e["type"] for e in again] == [
                "session.update",
                "conversation.item.create",
                "conversation.item.create",
                "response.create",
            ]
            original = server.sent_of_type("conversation.item.create")[:2]
            assert [e["item"] for e in again[1:3]] == [e["item"] for e in original]
            assert [e["item"]["content"][0]["text"] for e in again[1:3]] == ["first", "second"]
            # New event ids: these are new requests on a new connection.
            assert {e["event_id"] for e in again[1:3]}.isdisjoint(e["event_id"] for e in original)
            # Once the new server acknowledges them (each appended), they are in the history,
            # once each.
            previous = None
            for create in again[1:3]:
                await server.emit(
                    {
                        "type": "conversation.item.added",
                        "previous_item_id": previous,
                        "item": {**create["item"], "status": "completed"},
                    }
                )
                previous = create["item"]["id"]
            await until(session, lambda e: len(session.history) == 2)
            assert messages(session) == [("user", "first"), ("user", "second")]
            assert session.protocol.unacknowledged_item_creates == ()
        assert len(server.sent_of_type("conversation.item.create")) == 4
        assert_only_current_task()

    run(body())


def test_a_create_the_lost_server_rejected_is_not_sent_again() -> None:
    async def body() -> None:
        server = ScriptedServer(acknowledge_items=False)
        async with RealtimeSession(
            connector=server.connect, config=MANUAL, reconnect=FAST_RETRY
        ) as session:
            await server.wait_for("session.update")
            await session.send_message("refused", trigger_response=False)
            await session.send_message("kept", trigger_response=False)
            refused = await server.wait_for("conversation.item.create")
            await server.emit(
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "code": "invalid_value",
                        "message": "no",
                        "event_id": refused["event_id"],
                    },
                }
            )
            await until(session, "error")
            await server.drop()
            events = await until(session, "reconnected")
            assert isinstance(events[-1], ReconnectedEvent)
            assert events[-1].items_resent == 1
            await server.wait_for("conversation.item.create", count=3)
        texts_sent = [
            e["item"]["content"][0]["text"] for e in server.sent_of_type("conversation.item.create")
        ]
        assert texts_sent == ["refused", "kept", "kept"]
        assert_only_current_task()

    run(body())
