"""A barge-in before an answer's first audio: the answer's item is deleted, not left whole.

The sequence of issue 30: ``response.created`` and ``response.output_item.added`` arrive, the user
starts speaking (the client interrupts), then a transcript delta, an audio delta and a cancelled
``response.done`` whose item keeps the text. Nothing of it was heard, so the model must not keep
it: the client sends ``conversation.item.delete``.
"""

from __future__ import annotations

import json

from voxwire.protocol import (
    ConversationItemDelete,
    RealtimeProtocol,
    ResponseCancel,
    ResponseDone,
)

from .scenario import ScriptedServer, feed


def wire(protocol: RealtimeProtocol) -> list[dict[str, object]]:
    return [json.loads(frame) for frame in protocol.data_to_send()]


def answer_started(
    server: ScriptedServer, *, modalities: list[str] | None = None
) -> RealtimeProtocol:
    """A user item, then response ``resp_a`` whose message ``item_a`` is announced: no audio."""
    protocol = RealtimeProtocol()
    created = json.loads(server.response_created("resp_a"))
    if modalities is not None:
        created["response"]["output_modalities"] = modalities
    feed(
        protocol,
        server.session_created(),
        server.item_added("item_u", None),
        json.dumps(created),
        server.output_item_added("resp_a", "item_a"),
        server.item_added("item_a", "item_u", role="assistant", status="in_progress", content=[]),
    )
    return protocol


def test_an_answer_cut_before_its_first_audio_is_deleted() -> None:
    server = ScriptedServer()
    protocol = answer_started(server)
    # Server VAD heard the user (interrupt_response: the server cancels by itself).
    events = protocol.interrupt({}, cancel_response=False)
    assert events == [ConversationItemDelete(item_id="item_a", event_id="vx_evt_1")]
    assert [f["type"] for f in wire(protocol)] == ["conversation.item.delete"]
    # What the server still sends of the cancelled answer is not handed out, and no truncate
    # follows it.
    received = feed(
        protocol,
        server.transcript_delta("resp_a", "item_a", "Thank"),
        server.audio_delta("resp_a", "item_a", 4_800),
        server.response_done(
            "resp_a",
            status="cancelled",
            output=[
                {
                    "id": "item_a",
                    "type": "message",
                    "role": "assistant",
                    "status": "incomplete",
                    "content": [{"type": "output_audio", "transcript": "Thank"}],
                }
            ],
        ),
    )
    assert [type(e) for e in received] == [ResponseDone]
    assert wire(protocol) == []
    assert protocol.unacknowledged_item_deletes == tuple(events)
    feed(protocol, server.deleted("item_a"))
    assert protocol.conversation.item_ids == ("item_u",)
    assert protocol.unacknowledged_item_deletes == ()


def test_a_client_interruption_cancels_then_deletes() -> None:
    protocol = answer_started(ScriptedServer())
    events = protocol.interrupt({})
    assert events == [
        ResponseCancel(response_id="resp_a", event_id="vx_evt_1"),
        ConversationItemDelete(item_id="item_a", event_id="vx_evt_2"),
    ]
    record = protocol.responses.get("resp_a")
    assert record is not None
    assert record.interrupted


def test_an_item_announced_after_the_interruption_is_deleted_as_it_arrives() -> None:
    server = ScriptedServer()
    protocol = answer_started(server)
    protocol.interrupt({}, cancel_response=False)
    wire(protocol)
    feed(
        protocol,
        server.output_item_added("resp_a", "item_b", output_index=1),
        server.item_added("item_b", "item_a", role="assistant", status="in_progress", content=[]),
        server.audio_delta("resp_a", "item_b", 960),
        # Announced again (conversation.item.done): one delete is enough.
        server.item_done("item_b", "item_a", role="assistant", content=[]),
    )
    assert wire(protocol) == [
        {"type": "conversation.item.delete", "item_id": "item_b", "event_id": "vx_evt_2"}
    ]


def test_an_item_joining_the_conversation_after_the_cut_is_deleted_then() -> None:
    """``output_item.added`` came before the interruption, ``conversation.item.added`` after:
    the item is not in the conversation at the cut (nothing to delete yet), and is deleted as soon
    as it is."""
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(
        protocol,
        server.session_created(),
        server.response_created("resp_a"),
        server.output_item_added("resp_a", "item_a"),
    )
    assert protocol.interrupt({}, cancel_response=False) == []
    feed(protocol, server.item_added("item_a", None, role="assistant", content=[]))
    assert [f["type"] for f in wire(protocol)] == ["conversation.item.delete"]


def test_text_answers_and_tool_calls_are_not_deleted() -> None:
    server = ScriptedServer()
    protocol = answer_started(server, modalities=["text"])
    assert protocol.interrupt({}, cancel_response=False) == []
    feed(
        protocol,
        server.output_item_added("resp_a", "item_c", output_index=1),
        server.item_added("item_c", "item_a", role="assistant", content=[]),
    )
    assert wire(protocol) == []

    spoken = answer_started(server, modalities=["audio"])
    feed(
        spoken,
        server.frame(
            "conversation.item.added",
            previous_item_id="item_a",
            item={"id": "call_1", "type": "function_call", "call_id": "c", "name": "f"},
        ),
    )
    spoken.interrupt({}, cancel_response=False)
    assert [f.get("item_id") for f in wire(spoken)] == ["item_a"]


def test_an_item_with_audio_before_it_joined_is_left_to_the_heard_rule() -> None:
    """Audio that arrived before the item was announced is counted; the item is not deleted on
    arrival (what was heard of it is for the playback clock to say at the next cut)."""
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(
        protocol,
        server.session_created(),
        server.response_created("resp_a"),
        server.output_item_added("resp_a", "item_a"),
        server.audio_delta("resp_a", "item_a", 960),
    )
    protocol.interrupt({}, cancel_response=False)
    feed(protocol, server.item_added("item_a", None, role="assistant", content=[]))
    assert wire(protocol) == []
