"""Conversation order by previous_item_id, client-created ids, deletion, pending creates."""

from __future__ import annotations

import json

from voxwire.protocol import (
    ROOT,
    ConversationState,
    MessageItem,
    RealtimeProtocol,
    user_message,
)

from .scenario import ScriptedServer, feed


def ordered(*steps: tuple[str, str | None]) -> tuple[str, ...]:
    conversation = ConversationState()
    for item_id, previous in steps:
        conversation.item_added(user_message(item_id, id=item_id), previous)
    return conversation.item_ids


def test_items_follow_their_predecessor() -> None:
    assert ordered(("a", None), ("b", "a"), ("c", "b")) == ("a", "b", "c")


def test_insertion_mid_conversation() -> None:
    assert ordered(("a", None), ("c", "a"), ("b", "a")) == ("a", "b", "c")


def test_none_and_root_both_mean_the_start() -> None:
    assert ordered(("a", None), ("b", None)) == ("b", "a")
    assert ordered(("a", None), ("b", ROOT)) == ("b", "a")


def test_unknown_predecessor_appends() -> None:
    assert ordered(("a", None), ("b", "never_seen")) == ("a", "b")


def test_a_second_announcement_keeps_the_position_and_updates_the_item() -> None:
    conversation = ConversationState()
    conversation.item_added(user_message("draft", id="a"), None)
    conversation.item_added(user_message("b", id="b"), "a")
    conversation.item_done(user_message("final", id="a"), "zzz")
    assert conversation.item_ids == ("a", "b")
    assert conversation.get("a") == user_message("final", id="a")


def test_items_without_id_are_not_ordered() -> None:
    conversation = ConversationState()
    conversation.item_added(user_message("anonymous"), None)
    assert len(conversation) == 0


def test_client_created_ids_are_pending_until_announced() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    first = protocol.send_item_create(user_message("one"))
    second = protocol.send_item_create(user_message("two"), previous_item_id=first.item.id)
    # A client-made id, usable as previous_item_id before the server answers.
    assert (first.item.id, second.item.id) == ("vx_item_1", "vx_item_2")
    sent = [json.loads(f) for f in protocol.data_to_send()]
    assert sent[1]["previous_item_id"] == "vx_item_1"
    assert protocol.conversation.pending_ids == ("vx_item_1", "vx_item_2")
    assert protocol.conversation.item_ids == ()
    feed(
        protocol,
        server.item_added("vx_item_1", None),
        server.item_added("vx_item_2", "vx_item_1"),
    )
    assert protocol.conversation.pending_ids == ()
    assert protocol.conversation.item_ids == ("vx_item_1", "vx_item_2")


def test_given_ids_are_kept() -> None:
    protocol = RealtimeProtocol()
    event = protocol.send_item_create(user_message("x", id="mine"), previous_item_id=ROOT)
    assert event.item.id == "mine"
    assert json.loads(protocol.data_to_send()[0])["previous_item_id"] == "root"


def test_a_rejected_create_stops_being_pending() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    event = protocol.send_item_create(user_message("x"))
    feed(protocol, server.error(event.event_id, code="invalid_value"))
    assert protocol.conversation.pending_ids == ()


def test_deletion_is_applied_when_the_server_confirms_it() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.item_added("a", None), server.item_added("b", "a"))
    protocol.send_item_delete("a")
    assert protocol.conversation.item_ids == ("a", "b")
    feed(protocol, server.deleted("a"))
    assert protocol.conversation.item_ids == ("b",)
    assert protocol.conversation.is_deleted("a")
    assert protocol.conversation.get("a") is None
    # Deleting an item never seen is recorded without error.
    feed(protocol, server.deleted("ghost"))
    assert protocol.conversation.is_deleted("ghost")


def test_a_deleted_id_can_come_back() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.item_added("a", None), server.deleted("a"), server.item_added("a", None))
    assert protocol.conversation.item_ids == ("a",)
    assert not protocol.conversation.is_deleted("a")


def test_conversation_item_created_orders_like_added() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.item_added("a", None))
    created = json.loads(server.item_added("b", "a"))
    created["type"] = "conversation.item.created"
    feed(protocol, json.dumps(created))
    assert protocol.conversation.item_ids == ("a", "b")
    assert isinstance(protocol.conversation.items()[1], MessageItem)


def test_output_item_done_updates_a_known_item() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(
        protocol,
        server.output_item_added("resp_1", "item_a"),
        server.item_added("item_a", None, role="assistant", status="in_progress", content=[]),
    )
    done = json.loads(server.output_item_added("resp_1", "item_a"))
    done["type"] = "response.output_item.done"
    done["item"].update(status="completed", content=[{"type": "output_text", "text": "hi"}])
    feed(protocol, json.dumps(done))
    item = protocol.conversation.get("item_a")
    assert isinstance(item, MessageItem)
    assert item.status == "completed"
    assert protocol.conversation.response_of("item_a") == "resp_1"
