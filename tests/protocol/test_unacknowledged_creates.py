"""RealtimeProtocol.unacknowledged_item_creates: the item creates the server has not answered,
oldest first, as sent; cleared by the item's announcement, its deletion or an error naming the
create's event_id, and by nothing else (matching is by item id, never by arrival order)."""

from __future__ import annotations

import json

from voxwire.protocol import (
    ROOT,
    ConversationItemCreate,
    RealtimeProtocol,
    function_call_output,
    user_message,
)

from .scenario import ScriptedServer, feed


def pending(protocol: RealtimeProtocol) -> list[tuple[str | None, str | None]]:
    """(item id, previous_item_id) of each unacknowledged create, oldest first."""
    return [(c.item.id, c.previous_item_id) for c in protocol.unacknowledged_item_creates]


def test_creates_are_pending_as_sent_oldest_first_until_each_is_announced() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    assert protocol.unacknowledged_item_creates == ()
    first = protocol.send_item_create(user_message("one"))
    second = protocol.send_item_create(user_message("two", id="mine"), previous_item_id=ROOT)
    third = protocol.send_item_create(function_call_output("call_1", "{}"), previous_item_id="mine")
    # Queued and not yet handed to the I/O layer counts too: the server has not seen them.
    creates = protocol.unacknowledged_item_creates
    assert creates == (first, second, third)
    assert all(isinstance(c, ConversationItemCreate) for c in creates)
    assert pending(protocol) == [("vx_item_1", None), ("mine", ROOT), ("vx_item_2", "mine")]
    assert creates[0].item == user_message("one", id="vx_item_1")
    # The events are exactly the frames that went out.
    sent = [json.loads(frame) for frame in protocol.data_to_send()]
    assert [s["event_id"] for s in sent] == [c.event_id for c in creates]
    # Answered out of order: each announcement clears its own create, by item id.
    feed(protocol, server.item_added("mine", None))
    assert pending(protocol) == [("vx_item_1", None), ("vx_item_2", "mine")]
    output = {
        "id": "vx_item_2",
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "{}",
    }
    feed(protocol, server.frame("conversation.item.added", previous_item_id="mine", item=output))
    assert pending(protocol) == [("vx_item_1", None)]
    feed(protocol, server.item_added("vx_item_1", None))
    assert protocol.unacknowledged_item_creates == ()


def test_the_older_conversation_item_created_acknowledges_too() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    protocol.send_item_create(user_message("one"))
    created = json.loads(server.item_added("vx_item_1", None))
    created["type"] = "conversation.item.created"
    feed(protocol, json.dumps(created))
    assert protocol.unacknowledged_item_creates == ()


def test_an_error_naming_the_create_clears_it_and_other_errors_do_not() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    rejected = protocol.send_item_create(user_message("bad"))
    kept = protocol.send_item_create(user_message("good"))
    request = protocol.send_response_create()
    assert request is not None
    feed(
        protocol,
        server.error(None, message="an error naming no event"),
        server.error(request.event_id, message="the response.create failed"),
        server.error("evt_unknown", message="some other client event failed"),
    )
    assert protocol.unacknowledged_item_creates == (rejected, kept)
    feed(protocol, server.error(rejected.event_id, code="invalid_value"))
    assert protocol.unacknowledged_item_creates == (kept,)
    assert protocol.conversation.pending_ids == ("vx_item_2",)


def test_the_items_deletion_clears_its_create() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    protocol.send_item_create(user_message("one"))
    protocol.send_item_create(user_message("two"))
    protocol.send_item_delete("vx_item_1")
    # Asking for the deletion changes nothing; the server's confirmation does.
    assert pending(protocol) == [("vx_item_1", None), ("vx_item_2", None)]
    feed(protocol, server.deleted("vx_item_1"))
    assert pending(protocol) == [("vx_item_2", None)]


def test_server_made_items_and_unrelated_events_leave_pending_creates_alone() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    create = protocol.send_item_create(user_message("typed while the user spoke"))
    feed(
        protocol,
        server.session_updated(instructions="x"),
        # Committed audio and a response's output: items the server made, announced while the
        # create is in flight. An order-based match would take the first for its answer.
        server.item_added("item_server_1", None, content=[{"type": "input_audio"}]),
        server.response_created("resp_1"),
        server.output_item_added("resp_1", "item_server_2"),
        server.item_added("item_server_2", "item_server_1", role="assistant", content=[]),
        server.transcript_delta("resp_1", "item_server_2", "Hi"),
        server.response_done("resp_1"),
        server.deleted("item_server_1"),
        server.frame("response.voxwire_unknown_event"),
        "{not json",
    )
    assert protocol.unacknowledged_item_creates == (create,)
    assert protocol.conversation.item_ids == ("item_server_2",)


def test_creates_planned_by_update_history_are_tracked() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.item_added("a", None))
    protocol.update_history([user_message("a", id="a"), user_message("b", id="b")])
    assert pending(protocol) == [("b", "a")]
    feed(protocol, server.item_added("b", "a"))
    assert protocol.unacknowledged_item_creates == ()
