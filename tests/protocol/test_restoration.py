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
