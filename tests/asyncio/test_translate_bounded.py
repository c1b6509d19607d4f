"""The translator over a protocol core with a bounded history: every new item is announced once,
``history_updated`` carries what is held, and events about items no longer held (forgotten or
deleted) emit nothing — driven with plain calls, no event loop."""

from __future__ import annotations

import json
from typing import Any

import voxwire.asyncio.events as ev
from voxwire.asyncio.events.translate import EventTranslator
from voxwire.protocol import RealtimeProtocol
from voxwire.protocol.conversation import MIN_HISTORY_ITEMS

BOUND = MIN_HISTORY_ITEMS


def feed(protocol: RealtimeProtocol, translator: EventTranslator, **frame: Any) -> list[Any]:
    protocol.receive_text(json.dumps({"event_id": "e", **frame}))
    return [out for event in protocol.events_received() for out in translator.translate(event)]


def added(item_id: str, previous: str | None, kind: str = "conversation.item.added") -> Any:
    item = {"id": item_id, "type": "message", "role": "user", "status": "completed"}
    content = [{"type": "input_text", "text": item_id}]
    return {"type": kind, "previous_item_id": previous, "item": {**item, "content": content}}


def test_a_bounded_history_is_announced_once_per_item_and_updated_with_what_is_held() -> None:
    protocol = RealtimeProtocol(beta=False, max_history_items=BOUND)
    translator = EventTranslator(protocol, raw=False, audio_events=False)
    out: list[Any] = []
    previous = None
    for n in range(10 * BOUND):
        out += feed(protocol, translator, **added(f"i{n}", previous))
        out += feed(protocol, translator, **added(f"i{n}", previous, "conversation.item.done"))
        previous = f"i{n}"
    announced = [e.item.item_id for e in out if isinstance(e, ev.HistoryAddedEvent)]
    completed = [e.item.item_id for e in out if isinstance(e, ev.ConversationItemAddedEvent)]
    assert announced == completed == [f"i{n}" for n in range(10 * BOUND)]
    last = [e for e in out if isinstance(e, ev.HistoryUpdatedEvent)][-1]
    assert [i.item_id for i in last.history] == [f"i{n}" for n in range(9 * BOUND, 10 * BOUND)]
    # A duplicate of a forgotten item's events: nothing new.
    again = feed(protocol, translator, **added("i0", None, "conversation.item.done"))
    assert not [e for e in again if not isinstance(e, ev.HistoryUpdatedEvent)]
    # A duplicate of a held one: an update, not a second announcement.
    held = f"i{10 * BOUND - 1}"
    again = feed(protocol, translator, **added(held, f"i{10 * BOUND - 2}"))
    assert [type(e) for e in again] == [ev.HistoryUpdatedEvent]
    # Deleted, then created again under the same id: announced again.
    feed(protocol, translator, type="conversation.item.deleted", item_id=held)
    again = feed(protocol, translator, **added(held, f"i{10 * BOUND - 2}"))
    assert [type(e) for e in again] == [ev.HistoryAddedEvent]
