"""History diff: the deletes and creates that reach a desired history."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from voxwire.exceptions import HistoryError, InvalidState
from voxwire.protocol import (
    ConversationItemCreate,
    ConversationItemDelete,
    FunctionCallOutputItem,
    InputAudio,
    MessageItem,
    OutputAudio,
    OutputText,
    RealtimeProtocol,
    assistant_message,
    plan_history,
    system_message,
    user_message,
)

from .scenario import ScriptedServer, feed


def new_id_factory() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"new_{next(counter)}"


A = user_message("a", id="a")
B = assistant_message("b", id="b")
C = user_message("c", id="c")


def summary(events: list[ConversationItemDelete | ConversationItemCreate]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for event in events:
        if isinstance(event, ConversationItemDelete):
            out.append(("delete", event.item_id))
        else:
            out.append(("create", str(event.item.id), str(event.previous_item_id)))
    return out


def test_same_history_needs_nothing() -> None:
    assert plan_history([A, B, C], [A, B, C], new_id_factory()) == []


def test_server_fields_do_not_count_as_changes() -> None:
    served = MessageItem(
        id="a", object="realtime.item", status="completed", role="user", content=A.content
    )
    assert plan_history([served], [A], new_id_factory()) == []


def test_removing_items_deletes_them() -> None:
    assert summary(plan_history([A, B, C], [A, C], new_id_factory())) == [("delete", "b")]


def test_new_items_chain_after_their_predecessor() -> None:
    events = plan_history(
        [A], [system_message("rules"), A, user_message("x"), user_message("y")], new_id_factory()
    )
    assert summary(events) == [
        ("create", "new_1", "root"),
        ("create", "new_2", "a"),
        ("create", "new_3", "new_2"),
    ]


def test_reordering_keeps_the_longest_ordered_run() -> None:
    # Desired C, A, B: keep A, B (in order already), delete and re-create C at the start.
    events = plan_history([A, B, C], [C, A, B], new_id_factory())
    assert summary(events) == [("delete", "c"), ("create", "c", "root")]


def test_longest_run_is_chosen_over_a_greedy_one() -> None:
    items = [user_message(str(n), id=str(n)) for n in range(6)]
    desired = [items[5], items[0], items[1], items[2], items[3], items[4]]
    assert summary(plan_history(items, desired, new_id_factory())) == [
        ("delete", "5"),
        ("create", "5", "root"),
    ]


def test_changed_content_is_deleted_and_recreated_in_place() -> None:
    edited = user_message("c, edited", id="c")
    assert summary(plan_history([A, B, C], [A, B, edited], new_id_factory())) == [
        ("delete", "c"),
        ("create", "c", "b"),
    ]


def test_assistant_audio_cannot_be_recreated() -> None:
    spoken = MessageItem(id="b", role="assistant", content=[OutputAudio(transcript="hello")])
    changed = MessageItem(id="b", role="assistant", content=[OutputAudio(transcript="hello!")])
    assert plan_history([A, spoken], [A, spoken], new_id_factory()) == []  # kept: fine
    with pytest.raises(HistoryError) as excinfo:
        plan_history([A, spoken], [A, changed], new_id_factory())
    message = str(excinfo.value)
    assert "desired[1] (id 'b')" in message
    assert "assistant audio cannot be recreated" in message
    assert "output_text" in message


def test_assistant_text_can_be_created_from_a_transcript() -> None:
    replacement = MessageItem(id="b2", role="assistant", content=[OutputText(text="hello")])
    assert summary(plan_history([A], [A, replacement], new_id_factory())) == [("create", "b2", "a")]


def test_user_audio_can_be_created() -> None:
    spoken = MessageItem(role="user", content=[InputAudio(audio=b"\x00\x00")])
    assert summary(plan_history([], [spoken], new_id_factory())) == [("create", "new_1", "root")]


def test_only_messages_can_be_created() -> None:
    with pytest.raises(HistoryError, match=r"desired\[0\] is a function_call_output item"):
        plan_history([], [FunctionCallOutputItem(call_id="c", output="{}")], new_id_factory())


def test_existing_non_message_items_can_be_kept() -> None:
    output = FunctionCallOutputItem(id="f", call_id="c", output="{}")
    assert summary(plan_history([A, output], [output], new_id_factory())) == [("delete", "a")]


def test_invalid_content_for_the_role_is_named() -> None:
    bad = MessageItem(role="system", content=[OutputText(text="x")])
    with pytest.raises(
        HistoryError,
        match=r"desired\[0\]: item.content\[0\].type='output_text' is invalid in a system message",
    ):
        plan_history([], [bad], new_id_factory())


def test_duplicate_ids_are_rejected() -> None:
    with pytest.raises(HistoryError, match=r"desired\[1\].id='a' appears twice"):
        plan_history([A], [A, A], new_id_factory())


def test_protocol_queues_the_plan_and_refuses_while_changes_are_unanswered() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.item_added("a", None), server.item_added("b", "a"))
    events = protocol.update_history([user_message("new first"), user_message("b", id="b")])
    assert [type(e) for e in events] == [ConversationItemDelete, ConversationItemCreate]
    assert len(protocol.data_to_send()) == 2
    with pytest.raises(InvalidState, match="2 item create/delete request"):
        protocol.update_history([])
    created = events[1]
    assert isinstance(created, ConversationItemCreate)
    assert created.item.id == "vx_item_1"
    assert created.previous_item_id == "root"
    feed(protocol, server.deleted("a"), server.item_added("vx_item_1", None))
    assert protocol.conversation.item_ids == ("vx_item_1", "b")
    assert protocol.update_history(protocol.conversation.items()) == []


def test_a_failed_request_stops_blocking_history_updates() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    delete = protocol.send_item_delete("ghost")
    feed(protocol, server.error(delete.event_id, code="item_not_found"))
    assert protocol.update_history([]) == []
