"""Restoration planning after a lost connection, pure: which unacknowledged creates go again
(:func:`items_to_resend`) and how the application's session updates are replayed
(:class:`SessionUpdateLog`). Moved here from tests/asyncio with the code they test."""

from __future__ import annotations

from voxwire.protocol import (
    ROOT,
    ConversationItemCreate,
    ConversationState,
    InputText,
    MessageItem,
    SessionConfig,
    user_message,
)
from voxwire.protocol.restoration import items_to_resend
from voxwire.protocol.updates import SessionUpdateLog

# --- the log on its own ---------------------------------------------------------------------------


def test_the_log_replays_around_the_last_agent_change_and_forgets_rejected_updates() -> None:
    log = SessionUpdateLog()
    sent: list[SessionConfig] = []

    def send(config: SessionConfig) -> str:
        sent.append(config)
        return f"again_{len(sent)}"

    def update(name: str) -> SessionConfig:
        return SessionConfig(instructions=name)

    assert log.replay(send) == 0
    assert sent == []
    log.sent("e1", update("u1"))
    log.sent("e2", update("rejected"))
    first_mark = log.mark()
    log.sent("e3", update("u3"))  # sent while the first agent change waited for its answer
    log.agent_applied(first_mark, update("agent one"))
    second_mark = log.mark()
    log.agent_applied(second_mark, update("agent two"))
    log.sent("e4", update("u4"))
    log.rejected("e2")
    log.rejected("unknown")
    log.rejected(None)
    assert len(log) == 3
    assert log.replay(send) == 3
    assert [c.instructions for c in sent] == ["u1", "u3", "agent two", "u4"]
    # Replayed under new event ids: a rejection on the new server names those.
    log.rejected("again_1")
    sent.clear()
    assert log.replay(send) == 2
    assert [c.instructions for c in sent] == ["u3", "agent two", "u4"]


# --- the plan (pure) ------------------------------------------------------------------------------


def create(item_id: str, previous_item_id: str | None = None) -> ConversationItemCreate:
    return ConversationItemCreate(
        item=MessageItem(id=item_id, role="user", content=[InputText(text=item_id)]),
        previous_item_id=previous_item_id,
        event_id=f"evt_{item_id}",
    )


def test_the_plan_keeps_the_order_and_the_predecessors_the_new_server_has() -> None:
    restored = ConversationState()
    restored.item_added(user_message("r", id="restored"), None)
    unacknowledged = [
        create("a"),
        create("b", ROOT),
        create("c", "restored"),
        create("d", "a"),  # a predecessor sent again before it
        create("e", "skipped"),  # a predecessor that could not be restored: at the end
        create("f", "by_runner"),  # a predecessor the tool runner sent again
        create("by_runner"),  # sent again by the tool runner already
        create("restored"),  # already on the new server
        create("a"),  # the same id twice: once
    ]
    plan = items_to_resend(unacknowledged, restored, {"by_runner"})
    assert [(c.item.id, c.previous_item_id) for c in plan] == [
        ("a", None),
        ("b", ROOT),
        ("c", "restored"),
        ("d", "a"),
        ("e", None),
        ("f", "by_runner"),
    ]
    # New requests: the lost connection's event ids are not reused.
    assert all(c.event_id is None for c in plan)
    assert plan[0].item == unacknowledged[0].item
    assert items_to_resend([], restored) == ()


# --- what of a conversation can be recreated ------------------------------------------------------


def test_restoration_keeps_text_turns_audio_into_its_transcript_and_skips_the_rest() -> None:
    from voxwire.protocol import RealtimeProtocol
    from voxwire.protocol.restoration import restoration_items

    from .scenario import ScriptedServer, feed

    server = ScriptedServer()
    protocol = RealtimeProtocol()
    audio_in = {"type": "input_audio", "transcript": None}
    out_audio = {"type": "output_audio", "transcript": "Hello there."}
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
    frames = [
        server.item_added("text", None, content=[{"type": "input_text", "text": "hi"}, image]),
        server.item_added("spoken", "text", content=[audio_in]),
        server.item_added("silent", "spoken", content=[{"type": "input_audio"}]),
        server.item_added("said", "silent", role="assistant", content=[out_audio]),
        server.item_added("cut", "said", role="assistant", content=[dict(out_audio)]),
        server.item_added(
            "written", "cut", role="assistant", content=[{"type": "output_text", "text": "ok"}]
        ),
        server.item_added("odd", "written", content=[{"type": "output_text", "text": "?"}]),
        server.frame(
            "conversation.item.added",
            previous_item_id="odd",
            item={
                "id": "call",
                "type": "function_call",
                "name": "f",
                "call_id": "c1",
                "arguments": "{}",
                "status": "completed",
            },
        ),
        server.frame(
            "conversation.item.added",
            previous_item_id="call",
            item={
                "id": "half",
                "type": "function_call",
                "name": "f",
                "call_id": "c2",
                "arguments": "{",
                "status": "in_progress",
            },
        ),
        server.frame(
            "conversation.item.added",
            previous_item_id="half",
            item={"id": "out", "type": "function_call_output", "call_id": "c1", "output": ""},
        ),
        server.frame(
            "conversation.item.added",
            previous_item_id="out",
            item={"id": "mcp", "type": "mcp_list_tools", "server_label": "s", "tools": []},
        ),
        server.frame(
            "conversation.item.input_audio_transcription.completed",
            item_id="spoken",
            content_index=0,
            transcript="what time is it",
        ),
        server.truncated("cut", 100),
    ]
    feed(protocol, *frames)
    items, skipped = restoration_items(protocol.conversation)
    restored = {item.id: item for item in items}
    assert list(restored) == ["text", "spoken", "said", "written", "call", "out"]
    assert skipped == ("silent", "cut", "odd", "half", "mcp")
    assert [p.type for p in restored["text"].content] == ["input_text", "input_image"]  # type: ignore[union-attr]
    assert restored["spoken"].content[0].text == "what time is it"  # type: ignore[union-attr]
    assert restored["said"].content[0].text == "Hello there."  # type: ignore[union-attr]
    assert restored["out"].output == ""  # type: ignore[union-attr]  # empty is a value


def test_with_a_bounded_history_an_output_whose_call_was_forgotten_is_not_restored() -> None:
    from voxwire.protocol import RealtimeProtocol
    from voxwire.protocol.conversation import MIN_HISTORY_ITEMS
    from voxwire.protocol.restoration import restoration_items

    from .scenario import ScriptedServer

    server = ScriptedServer()
    protocol = RealtimeProtocol(max_history_items=MIN_HISTORY_ITEMS)
    call = {"type": "function_call", "name": "f", "call_id": "c1", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "7"}
    frames = [
        server.frame("conversation.item.added", previous_item_id=None, item={"id": "call", **call}),
        server.frame(
            "conversation.item.added", previous_item_id="call", item={"id": "out", **output}
        ),
    ]
    previous = "out"
    for n in range(MIN_HISTORY_ITEMS - 1):
        content = [{"type": "input_text", "text": f"turn {n}"}]
        frames.append(server.item_added(f"m{n}", previous, content=content))
        previous = f"m{n}"
    for frame in frames:
        protocol.receive_text(frame)
    conversation = protocol.conversation
    assert (conversation.item_ids[0], conversation.forgotten) == ("out", 1)
    items, skipped = restoration_items(conversation)
    assert [i.id for i in items] == [f"m{n}" for n in range(MIN_HISTORY_ITEMS - 1)]
    assert skipped == ("out",)
    # Without a bound the same pair is restored, call and output.
    whole = RealtimeProtocol()
    for frame in frames:
        whole.receive_text(frame)
    assert [i.id for i in restoration_items(whole.conversation)[0]][:2] == ["call", "out"]
