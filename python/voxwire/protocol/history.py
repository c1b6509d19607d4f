"""Reach a desired conversation history with ``conversation.item.delete`` / ``.create``.

The protocol has no "move" and no "edit": an item is kept where it is, or deleted and (if it is
still wanted) created again. The plan keeps as many existing items as possible — the longest
run of wanted, unchanged items whose order already matches — deletes the rest, then creates
each missing item right after its predecessor in the desired list (``previous_item_id``, or
``"root"`` for the first).

Only message items can be created here, and assistant audio cannot be: the server keeps audio
it generated, but a client cannot hand it back (nor would a transcript-less copy say the same
thing). Both raise :class:`~voxwire.exceptions.HistoryError` naming the item and what to do.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence

import msgspec

from voxwire.exceptions import ConfigurationError, HistoryError
from voxwire.protocol.client_events import ConversationItemCreate, ConversationItemDelete
from voxwire.protocol.conversation import ROOT
from voxwire.protocol.items import Item, MessageItem, OutputAudio, check_item_for_create

__all__ = ["plan_history"]


def plan_history(
    current: Sequence[Item], desired: Sequence[Item], new_item_id: Callable[[], str]
) -> list[ConversationItemDelete | ConversationItemCreate]:
    """Deletes (first) and creates (in desired order) that turn ``current`` into ``desired``.

    ``current`` is the conversation in server order; items in ``desired`` that have no id get one
    from ``new_item_id`` so the creates can chain their ``previous_item_id``. The events carry
    no ``event_id``; the caller assigns them when it sends.
    """
    current_index: dict[str | None, int] = {
        item.id: index for index, item in enumerate(current) if item.id is not None
    }
    _check_unique_ids(desired)
    kept = _kept_ids(current, current_index, desired)

    events: list[ConversationItemDelete | ConversationItemCreate] = [
        ConversationItemDelete(item_id=item.id)
        for item in current
        if item.id is not None and item.id not in kept
    ]
    previous_id = ROOT
    for index, item in enumerate(desired):
        if item.id is not None and item.id in kept:
            previous_id = item.id
            continue
        _check_creatable(item, index)
        item_id = item.id or new_item_id()
        if item_id != item.id:
            item = msgspec.structs.replace(item, id=item_id)
        events.append(ConversationItemCreate(item=item, previous_item_id=previous_id))
        previous_id = item_id
    return events


def _check_unique_ids(desired: Sequence[Item]) -> None:
    seen: set[str] = set()
    for index, item in enumerate(desired):
        if item.id is None:
            continue
        if item.id in seen:
            raise HistoryError(
                f"desired[{index}].id={item.id!r} appears twice: every item id must be unique"
            )
        seen.add(item.id)


def _comparable(item: Item) -> Item:
    """The item without the fields the server sets (``object``, ``status``)."""
    if isinstance(item, MessageItem):
        return msgspec.structs.replace(item, object=None, status=None)
    return item


def _kept_ids(
    current: Sequence[Item], current_index: dict[str | None, int], desired: Sequence[Item]
) -> set[str]:
    """Ids of the longest run of unchanged desired items already in the right order."""
    candidates: list[tuple[int, str]] = []
    for item in desired:
        index = current_index.get(item.id)
        if index is not None and _comparable(current[index]) == _comparable(item):
            candidates.append((index, str(item.id)))
    return set(_longest_increasing(candidates))


def _longest_increasing(pairs: list[tuple[int, str]]) -> list[str]:
    """Ids of a longest subsequence whose positions increase (patience sorting, O(n log n))."""
    tails: list[int] = []
    tail_at: list[int] = []
    parent: list[int] = [-1] * len(pairs)
    for i, (position, _) in enumerate(pairs):
        length = bisect.bisect_left(tails, position)
        if length == len(tails):
            tails.append(position)
            tail_at.append(i)
        else:
            tails[length] = position
            tail_at[length] = i
        parent[i] = tail_at[length - 1] if length > 0 else -1
    ids: list[str] = []
    i = tail_at[-1] if tail_at else -1
    while i >= 0:
        ids.append(pairs[i][1])
        i = parent[i]
    return ids[::-1]


def _check_creatable(item: Item, index: int) -> None:
    label = f"desired[{index}]" + (f" (id {item.id!r})" if item.id is not None else "")
    if not isinstance(item, MessageItem):
        raise HistoryError(
            f"{label} is a {item.type} item, which a history update cannot create: only message "
            "items can be (re)created; keep the existing item unchanged or leave it out"
        )
    if item.role == "assistant" and any(isinstance(p, OutputAudio) for p in item.content):
        raise HistoryError(
            f"{label} is an assistant message with output_audio content: assistant audio cannot "
            "be recreated; keep the existing item unchanged, or replace the part with output_text "
            "holding its transcript (assistant_message(transcript))"
        )
    try:
        check_item_for_create(item)
    except ConfigurationError as exc:
        raise HistoryError(f"{label}: {exc}") from None
