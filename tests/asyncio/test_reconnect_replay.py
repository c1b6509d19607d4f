"""Reconnection: the new server ends up as the lost one was — the application's
``update_session()`` changes are made again around the agent's configuration (and one the lost
server rejected is not), and item deletes and truncates the lost server never acknowledged are
taken as done: the item stays out of the new server and of the history. Real loopback websockets
against the local server (its session configuration read on the server side), the scripted
server for exact wire order, and the update log on its own."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import (
    AudioInterruptedEvent,
    ErrorEvent,
    HistoryMessage,
    HistoryUpdatedEvent,
    RealtimeSession,
    ReconnectedEvent,
    SessionEvent,
)
from voxwire.asyncio.events.history import AudioContent
from voxwire.protocol import InputText, MessageItem
from voxwire.server import Drop, RealtimeServer
from voxwire.testing import ScriptedServer

from .agent_helpers import ask, of_type
from .helpers import MANUAL, RATE_HZ, assert_only_current_task, device, run, serving, until
from .test_reconnect import FAST_RETRY, messages, reconnecting_session, server_items
from .test_reconnect_resend import GREETING, cut_before_the_next_client_event, texts

#: What differs between two server sessions whatever the client does.
_PER_SESSION = ("id", "expires_at")


def server_session(server: RealtimeServer) -> dict[str, Any]:
    """The newest server session's configuration, as the server holds it (a copy)."""
    return copy.deepcopy(server.connections[-1].session.session)


def comparable(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in _PER_SESSION}


async def barrier(session: RealtimeSession, text: str) -> list[SessionEvent]:
    """Wait until the server has read everything sent so far: the local server answers client
    events one at a time, in order, so once a message sent now is in the history, every
    ``session.update`` before it was applied (or rejected). The events until then."""
    await session.send_message(text, trigger_response=False)
    return await until(
        session,
        lambda e: any(isinstance(i, HistoryMessage) and i.text == text for i in session.history),
    )


@function_tool
async def lookup(query: str) -> str:
    """Look something up."""
    return "found"


@function_tool
async def book(what: str) -> str:
    """Book something."""
    return "booked"


# --- update_session() on the local server ---------------------------------------------------------


def test_an_update_session_change_is_made_again_on_the_new_server() -> None:
    async def body() -> None:
        async with serving() as server, reconnecting_session(server) as session:
            await session.update_session(
                {"instructions": "Speak like a pirate.", "max_output_tokens": 100}
            )
            await barrier(session, "before")
            lost = server_session(server)
            assert (lost["instructions"], lost["max_output_tokens"]) == (
                "Speak like a pirate.",
                100,
            )
            await server.connections[-1].inject(Drop())
            await until(session, "reconnected")
            await barrier(session, "after")
            new = server_session(server)
            assert new["id"] != lost["id"]
            assert comparable(new) == comparable(lost)
            assert session.protocol.session is not None
            assert session.protocol.session.instructions == "Speak like a pirate."
        assert_only_current_task()

    run(body())


def test_updates_before_an_agent_change_go_under_it_and_those_after_it_over_it() -> None:
    first = RealtimeAgent(name="first", instructions="One.", tools=[lookup])
    second = RealtimeAgent(name="second", instructions="Two.", tools=[book])

    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(
                first,
                url=server.url(),
                config=MANUAL,
                wait_for_session_updated=True,
                reconnect=FAST_RETRY,
            ) as session,
        ):
            # A: instructions (the next agent sets them), the token limit and noise reduction
            # (no agent sets them).
            await session.update_session(
                {
                    "instructions": "From A.",
                    "max_output_tokens": 100,
                    "audio": {"input": {"noise_reduction": {"type": "near_field"}}},
                }
            )
            await session.update_agent(second)
            # B: after the agent change, over A.
            await session.update_session({"max_output_tokens": 200, "tool_choice": "none"})
            await barrier(session, "before")
            lost = server_session(server)
            await server.connections[-1].inject(Drop())
            events = await until(session, "reconnected")
            assert not of_type(events, ErrorEvent)
            await barrier(session, "after")
            new = server_session(server)
            # The second agent's fields, A's fields it does not set, then B.
            assert new["instructions"] == "Two."
            assert [t["name"] for t in new["tools"]] == ["book"]
            assert new["audio"]["input"]["noise_reduction"] == {"type": "near_field"}
            assert (new["max_output_tokens"], new["tool_choice"]) == (200, "none")
            assert comparable(new) == comparable(lost)
            assert session.agent is second
        assert_only_current_task()

    run(body())


def test_an_update_the_lost_server_rejected_is_not_made_again() -> None:
    async def body() -> None:
        async with serving() as server, reconnecting_session(server) as session:
            # Both output modalities at once: the service (and the local server) refuse it.
            await session.update_session({"output_modalities": ["audio", "text"]})
            (error,) = of_type(await until(session, "error"), ErrorEvent)
            assert error.param == "session.output_modalities"
            await session.update_session({"instructions": "Kept."})
            await barrier(session, "before")
            lost = server_session(server)
            await server.connections[-1].inject(Drop())
            events = await until(session, "reconnected")
            events += await barrier(session, "after")
            events += await ask(session, "hello")
            # Sent again, it would be refused again: an error after the reconnection.
            assert not of_type(events, ErrorEvent)
            new = server_session(server)
            assert new["instructions"] == "Kept."
            assert comparable(new) == comparable(lost)
        assert_only_current_task()

    run(body())


# --- exact wire order (scripted server) -----------------------------------------------------------


def test_the_wire_shows_the_agents_update_the_replayed_updates_then_items_then_responses() -> None:
    first = RealtimeAgent(name="first", instructions="One.")
    second = RealtimeAgent(name="second", instructions="Two.", tools=[book])

    async def body() -> None:
        server = ScriptedServer(acknowledge_items=False)
        async with RealtimeSession(
            first, connector=server.connect, config=MANUAL, reconnect=FAST_RETRY
        ) as session:
            await server.wait_for("session.update")
            await session.update_session({"instructions": "A1."})
            await session.update_session({"max_output_tokens": 50})
            await session.update_agent(second)
            await session.update_session({"tool_choice": "none"})
            await session.send_message("first", trigger_response=False)
            await session.send_message("second")
            await server.wait_for("response.create")
            updates = server.sent_of_type("session.update")
            assert len(updates) == 5  # the initial one, A1, tokens, the agent change, B
            before = len(server.sent)
            await server.drop()
            events = await until(session, "reconnected")
            assert events[-1] == ReconnectedEvent(
                url=session.url, items_restored=0, items_skipped=0, items_resent=2
            )
            await server.wait_for("response.create", count=2)
            again = server.sent[before:]
            assert [e["type"] for e in again] == [
                "session.update",  # the resumption's: the current agent's configuration
                "session.update",  # the updates before the agent change, in order,
                "session.update",
                "session.update",  # the agent's update again,
                "session.update",  # the update after it,
                "conversation.item.create",  # then the items and the response
                "conversation.item.create",
                "response.create",
            ]
            resumed = again[0]["session"]
            assert resumed["instructions"] == "Two."
            assert [t["name"] for t in resumed["tools"]] == ["book"]
            # The same changes as sent the first time, under new event ids.
            assert [e["session"] for e in again[1:5]] == [u["session"] for u in updates[1:5]]
            assert {e["event_id"] for e in again[1:5]}.isdisjoint(u["event_id"] for u in updates)
            assert [e["item"]["content"][0]["text"] for e in again[5:7]] == ["first", "second"]
        assert_only_current_task()

    run(body())


def test_an_update_sent_while_an_agent_change_waits_for_its_answer_comes_after_it() -> None:
    first = RealtimeAgent(name="first", instructions="One.")
    second = RealtimeAgent(name="second", instructions="Two.")

    async def body() -> None:
        # Every session.updated is the test's: the agent change waits while an update follows.
        server = ScriptedServer(echo_session_updates=False, acknowledge_items=False)
        async with RealtimeSession(
            first, connector=server.connect, config=MANUAL, reconnect=FAST_RETRY
        ) as session:
            await server.wait_for("session.update")
            await server.emit({"type": "session.updated", "session": {"type": "realtime"}})
            switching = asyncio.create_task(session.update_agent(second))
            await server.wait_for("session.update", count=2)
            await session.update_session({"instructions": "During."})
            await server.wait_for("session.update", count=3)
            # The server applies them in order: the agent's change, then the update over it.
            for _ in range(2):
                await server.emit({"type": "session.updated", "session": {"type": "realtime"}})
            await switching
            assert session.agent is second
            before = len(server.sent)
            await server.drop()
            await server.wait_for("session.update", count=4)  # the resumption's
            await server.emit({"type": "session.updated", "session": {"type": "realtime"}})
            await until(session, "reconnected")
            # What the resumption queued goes before anything sent after it.
            await session.send_message("after", trigger_response=False)
            await server.wait_for("conversation.item.create")
            again = server.sent[before:]
            assert [e["type"] for e in again] == [
                "session.update",
                "session.update",
                "conversation.item.create",
            ]
            assert [e["session"]["instructions"] for e in again[:2]] == ["Two.", "During."]
        assert_only_current_task()

    run(body())


def test_without_an_agent_change_the_updates_alone_are_made_again() -> None:
    async def body() -> None:
        server = ScriptedServer()
        async with RealtimeSession(
            RealtimeAgent(name="only", instructions="Only."),
            connector=server.connect,
            config=MANUAL,
            reconnect=FAST_RETRY,
        ) as session:
            await server.wait_for("session.update")
            await session.send_raw({"type": "session.update", "session": {"instructions": "B."}})
            await server.wait_for("session.update", count=2)
            before = len(server.sent)
            await server.drop()
            await until(session, "reconnected")
            await session.send_message("after", trigger_response=False)
            await server.wait_for("conversation.item.create")
            again = server.sent[before:]
            assert [e["type"] for e in again] == [
                "session.update",
                "session.update",
                "conversation.item.create",
            ]
            assert again[0]["session"]["instructions"] == "Only."
            assert again[1]["session"] == {"type": "realtime", "instructions": "B."}
        assert_only_current_task()

    run(body())


# --- deletes and truncates the lost server never acknowledged -------------------------------------


def test_an_item_whose_delete_was_pending_is_not_restored_and_leaves_the_history() -> None:
    async def body() -> None:
        async with serving() as server, reconnecting_session(server) as session:
            await ask(session, "hello")
            user = session.protocol.conversation.items()[0]
            lost = await cut_before_the_next_client_event(server)
            await session.clear_audio()
            # Delete the assistant's answer and add a message after the user's, in one change
            # (a delete and a create); the lost server reads neither.
            bye = MessageItem(role="user", content=[InputText(text="bye")])
            await session.update_history([user, bye])
            events = await until(session, "reconnected")
            assert texts(lost.session.conversation.items()) == ["hello", GREETING]
            # The history dropped the answer when the loss was noticed, as for a deletion.
            updated = of_type(events, HistoryUpdatedEvent)
            assert updated
            assert [m.text for m in updated[0].history if isinstance(m, HistoryMessage)] == [
                "hello"
            ]
            assert events[-1] == ReconnectedEvent(
                url=session.url, items_restored=1, items_skipped=0, items_resent=1
            )
            await barrier(session, "still there")
            assert texts(server_items(server)) == ["hello", "bye", "still there"]
            assert messages(session) == [
                ("user", "hello"),
                ("user", "bye"),
                ("user", "still there"),
            ]
            assert [i.id for i in server_items(server)] == [i.item_id for i in session.history]
            # update_history works on the new connection (nothing of the lost one waits).
            await session.update_history(session.protocol.conversation.items()[:1])
            await until(session, lambda e: len(session.history) == 1)
            assert texts(server_items(server)) == ["hello"]
        assert_only_current_task()

    run(body())


def test_an_item_created_and_deleted_neither_acknowledged_is_not_sent_again() -> None:
    async def body() -> None:
        server = ScriptedServer(acknowledge_items=False)
        async with RealtimeSession(
            connector=server.connect, config=MANUAL, reconnect=FAST_RETRY
        ) as session:
            await server.wait_for("session.update")
            await session.send_message("oops", trigger_response=False)
            create = await server.wait_for("conversation.item.create")
            await session.send_raw(
                {"type": "conversation.item.delete", "item_id": create["item"]["id"]}
            )
            await session.send_message("kept", trigger_response=False)
            await server.wait_for("conversation.item.create", count=2)
            before = len(server.sent)
            await server.drop()
            events = await until(session, "reconnected")
            assert events[-1] == ReconnectedEvent(
                url=session.url, items_restored=0, items_skipped=0, items_resent=1
            )
            await server.wait_for("conversation.item.create", count=3)
            again = server.sent[before:]
            assert [e["type"] for e in again] == ["session.update", "conversation.item.create"]
            assert again[1]["item"]["content"][0]["text"] == "kept"
        assert_only_current_task()

    run(body())


def test_a_truncation_the_lost_server_never_acknowledged_is_taken_as_done() -> None:
    async def body() -> None:
        # The scripted server answers item creates and deletes, never truncations.
        server = ScriptedServer()
        async with RealtimeSession(
            connector=server.connect, config=MANUAL, reconnect=FAST_RETRY
        ) as session:
            await server.wait_for("session.update")
            await session.send_message("tell me", trigger_response=False)
            await until(session, "history_added")
            await server.audio_response("A long answer.", bytes(48_000))  # 1 s at 24 kHz
            await until(session, "response_done")
            (_, answer) = session.history
            assert isinstance(answer, HistoryMessage)
            # The user heard 250 ms of it (the application plays audio itself).
            await session.interrupt({(answer.item_id, 0): 6_000}, cancel_response=False)
            truncate = await server.wait_for("conversation.item.truncate")
            assert truncate["audio_end_ms"] == 250
            before = len(server.sent)
            await server.drop()
            events = await until(session, "reconnected")
            # As the server would have it: the audio cut at 250 ms, its transcript gone.
            (updated,) = of_type(events, HistoryUpdatedEvent)[:1]
            (_, cut) = updated.history
            assert isinstance(cut, HistoryMessage)
            assert cut.content == (AudioContent(transcript=None, truncated_at_ms=250),)
            # So the answer is not restored (what was heard of it has no transcript); before,
            # it came back whole, as if the user had heard it all.
            assert events[-1] == ReconnectedEvent(
                url=session.url, items_restored=1, items_skipped=1, items_resent=0
            )
            again = server.sent[before:]
            assert [e["type"] for e in again] == ["session.update", "conversation.item.create"]
            assert again[1]["item"]["content"] == [{"type": "input_text", "text": "tell me"}]
            assert messages(session) == [("user", "tell me")]
        assert_only_current_task()

    run(body())


def test_audio_cut_by_the_loss_is_restored_as_the_listener_heard_it() -> None:
    async def body() -> None:
        ring, clock = device()
        server = ScriptedServer()
        async with RealtimeSession(
            connector=server.connect, config=MANUAL, audio_output=clock, reconnect=FAST_RETRY
        ) as session:
            await server.wait_for("session.update")
            await session.send_message("tell me", trigger_response=False)
            await until(session, "history_added")
            await server.audio_response("A long answer.", bytes(48_000))  # 1 s at 24 kHz
            await until(session, "response_done")
            (_, answer) = session.history
            ring.pop(RATE_HZ // 4)  # the device played 250 ms, then the connection is lost
            before = len(server.sent)
            await server.drop()
            events = await until(session, "reconnected")
            assert (
                AudioInterruptedEvent(item_id=answer.item_id, content_index=0, played_ms=250)
                in events
            )
            # The interruption's truncation is taken as done: the answer is not restored whole.
            assert events[-1] == ReconnectedEvent(
                url=session.url, items_restored=1, items_skipped=1, items_resent=0
            )
            assert [e["type"] for e in server.sent[before:]] == [
                "session.update",
                "conversation.item.create",
            ]
            assert messages(session) == [("user", "tell me")]
        assert_only_current_task()

    run(body())


# --- the voice after assistant audio --------------------------------------------------------------


def test_the_resumed_server_speaks_with_the_voice_the_listener_heard() -> None:
    first = RealtimeAgent(name="first", instructions="One.", voice="coral")
    second = RealtimeAgent(name="second", instructions="Two.", voice="verse")
    server = ScriptedServer()

    async def body() -> None:
        async with RealtimeSession(
            first, connector=server.connect, reconnect=FAST_RETRY
        ) as session:
            await server.audio_response("Hello there.", [b"\x00\x01" * 480])
            await until(session, "response_done")
            # The conversation holds audio: the change leaves the voice out (the API refuses it).
            await session.update_agent(second)
            assert "audio" not in server.sent_of_type("session.update")[-1]["session"]
            before = len(server.sent)
            await server.drop()
            await until(session, "reconnected")
            resumed = next(e for e in server.sent[before:] if e["type"] == "session.update")
            assert resumed["session"]["instructions"] == "Two."
            assert resumed["session"]["audio"]["output"]["voice"] == "coral"
            assert session.agent is second
        assert_only_current_task()

    run(body())


def test_without_assistant_audio_the_resumed_server_gets_the_current_agents_voice() -> None:
    first = RealtimeAgent(name="first", instructions="One.", voice="coral")
    second = RealtimeAgent(name="second", instructions="Two.", voice="verse")
    server = ScriptedServer()

    async def body() -> None:
        async with RealtimeSession(
            first, connector=server.connect, reconnect=FAST_RETRY
        ) as session:
            await session.update_agent(second)
            before = len(server.sent)
            await server.drop()
            await until(session, "reconnected")
            resumed = next(e for e in server.sent[before:] if e["type"] == "session.update")
            assert resumed["session"]["audio"]["output"]["voice"] == "verse"
        assert_only_current_task()

    run(body())
