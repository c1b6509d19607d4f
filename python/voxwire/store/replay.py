"""Item integrity on replay: from stored items back to what may be sent to a new server.

The rules (openai-agents' run-item lifecycle notes, applied to the Realtime protocol):

* Only the wire form is ever sent: :func:`wire_item` reads :attr:`StoredItem.wire
  <voxwire.store.snapshot.StoredItem.wire>` (and stored audio, when there is some) and nothing
  of the SDK's own bookkeeping beside it (transcripts, origin, response id).
* Provider ids are kept: a replayed item has the id the server gave it, a call and its output
  the same ``call_id`` as before. No id is invented for an item that has none.
* An orphaned function call — made by the model, with no output in the conversation, not
  waiting for an approval and with no computed output waiting to be delivered — is dropped from
  replay, because a server that sees a call with no output waits for one that will never come.
  What is tied only to it goes with it: in the Realtime protocol that is an output the SDK
  delivered for a call that is no longer there (reasoning items, which openai-agents also drops
  with an orphaned call, do not exist in Realtime conversations). Items created by the caller
  (:data:`~voxwire.store.snapshot.Origin` ``"caller"``) are never dropped.
* Tool outputs are values: ``""``, ``"0"``, ``"false"``, ``"{}"`` are outputs like any other.
  Whether a call has an output is decided by the presence of its call id, never by truthiness.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, get_args

import msgspec
from msgspec import Struct

from voxwire.protocol.conversation import ROOT, ConversationState
from voxwire.protocol.items import Item
from voxwire.store.snapshot import SessionSnapshot, StoredItem

__all__ = ["Replay", "conversation_state", "orphaned_call_ids", "replay_items", "wire_item"]

_CALL: Final = "function_call"
_OUTPUT: Final = "function_call_output"
# Each item type by its ``type`` tag: converting a wire dict to the one type it names is ~25x
# quicker with msgspec than converting it to the ``Item`` union (which reads the same tag).
_ITEM_TYPES: Final[dict[str, type[Any]]] = {
    kind.__struct_config__.tag: kind for kind in get_args(Item)
}


class Replay(Struct, frozen=True, kw_only=True):
    """The items to replay, in order, and the ids of the items left out (with why)."""

    items: tuple[StoredItem, ...]
    dropped: dict[str, str]


def wire_item(stored: StoredItem) -> Item:
    """The typed protocol item of ``stored``: its wire form, with stored audio put back into
    the content parts it came from. Fields this SDK does not model stay in ``stored.wire``
    (they are not sent: the server rejects parameters it does not know)."""
    wire = stored.wire
    if stored.audio and isinstance(wire.get("content"), list):
        content: list[Any] = list(wire["content"])
        for index, pcm in stored.audio.items():
            if 0 <= index < len(content) and isinstance(content[index], dict):
                content[index] = {**content[index], "audio": pcm}
        wire = {**wire, "content": content}
    tag = wire.get("type")
    kind = _ITEM_TYPES.get(tag) if isinstance(tag, str) else None
    item: Item = msgspec.convert(wire, Item if kind is None else kind)
    return item


def orphaned_call_ids(snapshot: SessionSnapshot) -> set[str]:
    """Call ids of the model's function calls that nothing will ever answer (see the module
    docstring); a model call without a ``call_id`` is reported under its item id."""
    answered = {item.call_id for item in snapshot.items if item.type == _OUTPUT}
    waiting = set(snapshot.approvals) | set(snapshot.outputs)
    orphans: set[str] = set()
    for item in snapshot.items:
        if item.type != _CALL or item.origin != "model":
            continue
        call_id = item.call_id
        if call_id is None:
            orphans.add(item.id)
        elif call_id not in answered and call_id not in waiting:
            orphans.add(call_id)
    return orphans


def replay_items(snapshot: SessionSnapshot) -> Replay:
    """The conversation as it may be replayed: orphaned model calls and the SDK outputs whose
    call is gone left out, every other item kept in order with its ids."""
    orphans = orphaned_call_ids(snapshot)
    kept: list[StoredItem] = []
    dropped: dict[str, str] = {}
    for item in snapshot.items:
        if item.type == _CALL and item.origin == "model" and (item.call_id or item.id) in orphans:
            dropped[item.id] = f"function call {item.call_id!r} has no output and none is pending"
        else:
            kept.append(item)
    calls = {item.call_id for item in kept if item.type == _CALL}
    items: list[StoredItem] = []
    for item in kept:
        if item.type == _OUTPUT and item.origin == "sdk" and item.call_id not in calls:
            dropped[item.id] = f"output of function call {item.call_id!r}, which is not replayed"
        else:
            items.append(item)
    return Replay(items=tuple(items), dropped=dropped)


def conversation_state(items: Iterable[StoredItem]) -> ConversationState:
    """A :class:`~voxwire.protocol.ConversationState` holding ``items`` in the given order, with
    their transcripts and truncations: the input of the session's restoration path
    (``voxwire.protocol.restoration.restoration_items``)."""
    state = ConversationState()
    previous = ROOT
    for stored in items:
        state.item_added(wire_item(stored), previous)
        for index, text in stored.transcripts.items():
            state.transcript_done(stored.id, index, text)
        for index, end_ms in stored.truncated_ms.items():
            state.item_truncated(stored.id, index, end_ms)
        previous = stored.id
    return state
