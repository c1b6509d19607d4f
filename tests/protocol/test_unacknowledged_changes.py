"""RealtimeProtocol.unacknowledged_item_deletes / unacknowledged_item_truncates: the deletes and
truncates the server has not answered, oldest first, as sent; cleared by the server's
confirmation (``conversation.item.deleted`` / ``.truncated``), by the item's deletion, or by an
``error`` naming the request's event_id — and by nothing else (an announcement of the item does
not answer a delete)."""

from __future__ import annotations

import json

import pytest

from voxwire.exceptions import InvalidState
from voxwire.protocol import (
    ConversationItemDelete,
    ConversationItemTruncate,
    RealtimeProtocol,
    user_message,
)

from .scenario import ScriptedServer, feed, ga_turn_with_audio


def deletes(protocol: RealtimeProtocol) -> list[str]:
    return [d.item_id for d in protocol.unacknowledged_item_deletes]


def truncates(protocol: RealtimeProtocol) -> list[tuple[str, int, int]]:
    return [
        (t.item_id, t.content_index, t.audio_end_ms) for t in protocol.unacknowledged_item_truncates
    ]


def with_items(*item_ids: str) -> tuple[ScriptedServer, RealtimeProtocol]:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    previous = None
    for item_id in item_ids:
        feed(protocol, server.item_added(item_id, previous))
        previous = item_id
    return server, protocol


# --- deletes --------------------------------------------------------------------------------------


def test_deletes_are_pending_as_sent_oldest_first_until_the_server_confirms_each() -> None:
    server, protocol = with_items("a", "b", "c")
    assert protocol.unacknowledged_item_deletes == ()
    first = protocol.send_item_delete("b")
    second = protocol.send_item_delete("a")
    # Queued and not yet handed to the I/O layer counts too: the server has not seen them.
    assert protocol.unacknowledged_item_deletes == (first, second)
    assert all(isinstance(d, ConversationItemDelete) for d in (first, second))
    sent = [json.loads(frame) for frame in protocol.data_to_send()]
    assert [s["event_id"] for s in sent] == [first.event_id, second.event_id]
    # Asking changes nothing in the conversation; the confirmation does, by item id.
    assert protocol.conversation.item_ids == ("a", "b", "c")
    feed(protocol, server.deleted("a"))
    assert deletes(protocol) == ["b"]
    feed(protocol, server.deleted("b"))
    assert protocol.unacknowledged_item_deletes == ()
    assert protocol.conversation.item_ids == ("c",)


def test_an_announcement_of_the_item_does_not_answer_its_delete() -> None:
    # The server may announce an item (the end of its create, a conversation.item.done) before
    # it reads the delete that follows: the delete still waits.
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    protocol.send_item_create(user_message("one", id="mine"))
    protocol.send_item_delete("mine")
    feed(protocol, server.item_added("mine", None), server.item_done("mine", None))
    assert protocol.unacknowledged_item_creates == ()
    assert deletes(protocol) == ["mine"]
    feed(protocol, server.deleted("mine"))
    assert protocol.unacknowledged_item_deletes == ()


def test_an_error_naming_the_delete_clears_it_and_leaves_the_items_create_pending() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    create = protocol.send_item_create(user_message("one", id="mine"))
    refused = protocol.send_item_delete("mine")
    kept = protocol.send_item_delete("other")
    feed(
        protocol,
        server.error(None, message="an error naming no event"),
        server.error("evt_unknown", message="some other client event failed"),
    )
    assert protocol.unacknowledged_item_deletes == (refused, kept)
    feed(protocol, server.error(refused.event_id, code="item_not_found"))
    assert protocol.unacknowledged_item_deletes == (kept,)
    # The failed delete is not the create's answer: the item is still on its way.
    assert protocol.unacknowledged_item_creates == (create,)
    assert protocol.conversation.pending_ids == ("mine",)


def test_every_delete_of_an_item_is_answered_by_its_deletion() -> None:
    server, protocol = with_items("a", "b")
    protocol.send_item_delete("a")
    protocol.send_item_delete("a")
    kept = protocol.send_item_delete("b")
    feed(protocol, server.deleted("a"))
    assert protocol.unacknowledged_item_deletes == (kept,)


def test_the_interruption_tracks_the_deletes_and_truncates_it_queues() -> None:
    protocol = ga_turn_with_audio()
    sent = protocol.interrupt({}, cancel_response=False)
    (delete,) = sent
    assert protocol.unacknowledged_item_deletes == (delete,)
    protocol = ga_turn_with_audio()
    sent = protocol.interrupt({("item_a", 0): 2_400}, cancel_response=False)
    (truncate,) = sent
    assert protocol.unacknowledged_item_truncates == (truncate,)
    assert truncates(protocol) == [("item_a", 0, 100)]


def test_update_history_waits_for_pending_deletes_but_not_for_announcements() -> None:
    server, protocol = with_items("a", "b")
    protocol.update_history([user_message("a", id="a")])
    assert deletes(protocol) == ["b"]
    with pytest.raises(InvalidState, match="1 item create/delete request"):
        protocol.update_history([])
    # An announcement of the item (here a late conversation.item.done) is not the answer.
    feed(protocol, server.item_done("b", "a"))
    with pytest.raises(InvalidState):
        protocol.update_history([])
    feed(protocol, server.deleted("b"))
    protocol.update_history([])
    assert deletes(protocol) == ["a"]


# --- truncates ------------------------------------------------------------------------------------


def test_truncates_are_pending_as_sent_until_confirmed_oldest_first_per_part() -> None:
    server = ScriptedServer()
    protocol = ga_turn_with_audio(server)
    assert protocol.unacknowledged_item_truncates == ()
    # audio_end_ms as sent: clamped to the 1 000 ms received.
    first = protocol.send_item_truncate("item_a", 0, 5_000)
    second = protocol.send_item_truncate("item_a", 0, 300)
    other_part = protocol.send_item_truncate("item_a", 1, 0)
    assert protocol.unacknowledged_item_truncates == (first, second, other_part)
    assert all(isinstance(t, ConversationItemTruncate) for t in (first, second, other_part))
    assert truncates(protocol) == [("item_a", 0, 1_000), ("item_a", 0, 300), ("item_a", 1, 0)]
    # Another item's confirmation answers nothing here.
    feed(protocol, server.truncated("item_u", 0))
    assert len(protocol.unacknowledged_item_truncates) == 3
    # The server answers in order: the first confirmation of the part answers the oldest.
    feed(protocol, server.truncated("item_a", 1_000))
    assert protocol.unacknowledged_item_truncates == (second, other_part)
    feed(protocol, server.truncated("item_a", 0, content_index=1))
    assert protocol.unacknowledged_item_truncates == (second,)
    feed(protocol, server.truncated("item_a", 300))
    assert protocol.unacknowledged_item_truncates == ()


def test_an_error_naming_the_truncate_or_the_items_deletion_clears_it() -> None:
    server = ScriptedServer()
    protocol = ga_turn_with_audio(server)
    refused = protocol.send_item_truncate("item_a", 0, 100)
    kept = protocol.send_item_truncate("item_a", 0, 200)
    on_user = protocol.send_item_truncate("item_u", 0, 0)
    feed(protocol, server.error(None), server.error("evt_unknown"))
    assert protocol.unacknowledged_item_truncates == (refused, kept, on_user)
    feed(protocol, server.error(refused.event_id, code="invalid_value"))
    assert protocol.unacknowledged_item_truncates == (kept, on_user)
    # The item is gone: there is nothing left to truncate.
    feed(protocol, server.deleted("item_a"))
    assert protocol.unacknowledged_item_truncates == (on_user,)
    assert protocol.unacknowledged_item_deletes == ()
