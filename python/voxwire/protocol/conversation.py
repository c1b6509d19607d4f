"""The conversation as the server holds it: items in server order, transcripts, truncations.

Order comes from ``previous_item_id`` on ``conversation.item.added`` (GA: "the ID of the item
that precedes this one, if any, used to maintain ordering when items are inserted"). ``None``
means the item has no predecessor: it goes first. ``"root"`` — the client's word for "at the
start" in ``conversation.item.create`` — is read the same way. A predecessor this state never
saw (a deleted item, a session joined midway) puts the item at the end.

Nothing here changes on the client's say-so: a ``conversation.item.create`` is remembered as
pending until the server announces the item, a ``conversation.item.delete`` changes nothing
until ``conversation.item.deleted``.

``max_items`` bounds what is held in memory: past it, the items at the start of the conversation
are forgotten here (:attr:`ConversationState.forgotten` counts them) — not deleted: the server
still has them, and a store still holds them. What is held is always the end of the server's
conversation: an item announced at the start once items were forgotten is forgotten with them,
and one announced after a forgotten item goes at the end. ``None`` (the default) keeps every
item.
"""

from __future__ import annotations

from typing import Final

from voxwire.exceptions import ConfigurationError
from voxwire.protocol.audio_ledger import SegmentKey
from voxwire.protocol.items import FunctionCallOutputItem, Item

__all__ = ["MIN_HISTORY_ITEMS", "ROOT", "ConversationState"]

#: ``previous_item_id`` value that puts an item at the start of the conversation.
ROOT = "root"

#: The smallest ``max_items``: the items of the responses being played (and cut) must stay.
MIN_HISTORY_ITEMS: Final = 8

#: Producing responses remembered for output items not (yet) in the conversation, the most recent.
_UNANNOUNCED_KEPT: Final = 64

#: Ids of deleted items remembered (late deltas of a deleted item are dropped), the most recent.
_DELETED_KEPT: Final = 256


class ConversationState:
    """Items in server order with their transcripts; updated by the protocol from server events.
    ``max_items``: see the module docstring."""

    def __init__(self, max_items: int | None = None) -> None:
        if max_items is not None and (
            not isinstance(max_items, int)
            or isinstance(max_items, bool)
            or max_items < MIN_HISTORY_ITEMS
        ):
            raise ConfigurationError(
                f"max_history_items={max_items!r} is invalid: expected an int >= "
                f"{MIN_HISTORY_ITEMS} (the items being played must stay), or None to keep all"
            )
        self._max_items = max_items
        self._order: list[str] = []
        self._items: dict[str, Item] = {}
        self._response_of: dict[str, str] = {}
        self._pending: dict[str, Item] = {}
        self._deleted: dict[str, None] = {}  # the most recent, oldest first
        self._transcripts: dict[SegmentKey, str] = {}
        self._truncated_ms: dict[SegmentKey, int] = {}
        self.forgotten = 0
        """Items forgotten for ``max_items`` so far (still on the server)."""
        # call_id -> ids of the function_call_output items answering it (see call_output).
        self._outputs: dict[str, list[str]] = {}

    @property
    def max_items(self) -> int | None:
        return self._max_items

    # --- reading ----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items

    @property
    def item_ids(self) -> tuple[str, ...]:
        """Ids in conversation order."""
        return tuple(self._order)

    def items(self) -> list[Item]:
        """The items in conversation order, as the server last described them."""
        return [self._items[item_id] for item_id in self._order]

    def get(self, item_id: str) -> Item | None:
        return self._items.get(item_id)

    def call_output(self, call_id: str) -> FunctionCallOutputItem | None:
        """The ``function_call_output`` answering ``call_id`` (of several, the last in
        conversation order), found by a look-up rather than a scan of the conversation."""
        found = [
            output
            for output_id in self._outputs.get(call_id, ())
            if isinstance(output := self._items.get(output_id), FunctionCallOutputItem)
            and output.call_id == call_id
        ]
        if len(found) > 1:
            position = {item_id: index for index, item_id in enumerate(self._order)}
            found.sort(key=lambda output: position[output.id or ""])
        return found[-1] if found else None

    def response_of(self, item_id: str) -> str | None:
        """The response that produced ``item_id``, if it came from one."""
        return self._response_of.get(item_id)

    def is_deleted(self, item_id: str) -> bool:
        """The server confirmed this item's deletion."""
        return item_id in self._deleted

    @property
    def pending_ids(self) -> tuple[str, ...]:
        """Client-created items sent but not yet announced by the server."""
        return tuple(self._pending)

    def transcript(self, item_id: str, content_index: int = 0) -> str | None:
        """The text of one content part so far: what the model said (audio transcript or text)
        or, with input transcription on, what the user said.

        ``None`` after a truncation: the server removes the transcript of truncated audio.
        """
        return self._transcripts.get((item_id, content_index))

    def truncated_at_ms(self, item_id: str, content_index: int = 0) -> int | None:
        """Where the server cut this part's audio, if it did."""
        return self._truncated_ms.get((item_id, content_index))

    # --- server events ----------------------------------------------------------------------------

    def item_added(self, item: Item, previous_item_id: str | None) -> None:
        """``conversation.item.added`` (or ``.created``): insert after its predecessor."""
        item_id = item.id
        if item_id is None:
            return
        self._pending.pop(item_id, None)
        self._deleted.pop(item_id, None)
        self._index_output(item)
        if item_id in self._items:
            # Announced twice (added, then done): update in place, keep the position.
            self._items[item_id] = item
            return
        self._items[item_id] = item
        index = self._position_after(previous_item_id)
        self._order.insert(index, item_id)
        if self._max_items is not None:
            if index == 0 and self.forgotten:  # before the forgotten items: goes with them
                self._forget(item_id)
                self.forgotten += 1
            while len(self._order) > self._max_items:
                self._forget(self._order[0])
                self.forgotten += 1

    def item_done(self, item: Item, previous_item_id: str | None) -> None:
        """``conversation.item.done``: the item's final content."""
        self.item_added(item, previous_item_id)

    def output_item(self, item: Item, response_id: str) -> None:
        """``response.output_item.added`` / ``.done``: remember the producing response and, for
        an item already in the conversation, its newer content."""
        if item.id is None:
            return
        self._response_of[item.id] = response_id
        if item.id in self._items:
            self._items[item.id] = item
            self._index_output(item)
        elif len(self._response_of) > len(self._items) + 2 * _UNANNOUNCED_KEPT:
            # Output of responses that write to no conversation (out of band) is never
            # announced: keep only the most recent such entries.
            unannounced = [key for key in self._response_of if key not in self._items]
            for key in unannounced[:-_UNANNOUNCED_KEPT]:
                del self._response_of[key]

    def item_deleted(self, item_id: str) -> None:
        self._pending.pop(item_id, None)
        self._deleted[item_id] = None
        if len(self._deleted) > _DELETED_KEPT:
            del self._deleted[next(iter(self._deleted))]
        self._forget(item_id)

    def _forget(self, item_id: str) -> None:
        item = self._items.pop(item_id, None)
        if item is not None:
            self._order.remove(item_id)
        if isinstance(item, FunctionCallOutputItem):
            answering = self._outputs.get(item.call_id, [])
            if item_id in answering:
                answering.remove(item_id)
            if not answering:
                self._outputs.pop(item.call_id, None)
        self._response_of.pop(item_id, None)
        for table in (self._transcripts, self._truncated_ms):
            for key in [key for key in table if key[0] == item_id]:
                del table[key]

    def item_truncated(self, item_id: str, content_index: int, audio_end_ms: int) -> None:
        key = (item_id, content_index)
        self._truncated_ms[key] = audio_end_ms
        self._transcripts.pop(key, None)

    def transcript_delta(self, item_id: str, content_index: int, delta: str) -> None:
        key = (item_id, content_index)
        if key not in self._truncated_ms:
            self._transcripts[key] = self._transcripts.get(key, "") + delta

    def transcript_done(self, item_id: str, content_index: int, text: str) -> None:
        key = (item_id, content_index)
        if key not in self._truncated_ms:
            self._transcripts[key] = text

    # --- client events ----------------------------------------------------------------------------

    def create_sent(self, item: Item) -> None:
        """Remember a ``conversation.item.create`` until the server announces the item."""
        if item.id is not None:
            self._pending[item.id] = item

    def create_failed(self, item_id: str) -> None:
        """The server rejected a create: the item will not be announced."""
        self._pending.pop(item_id, None)

    # --- helpers ----------------------------------------------------------------------------------

    def _index_output(self, item: Item) -> None:
        if isinstance(item, FunctionCallOutputItem) and item.id is not None:
            answering = self._outputs.setdefault(item.call_id, [])
            if item.id not in answering:
                answering.append(item.id)

    def _position_after(self, previous_item_id: str | None) -> int:
        if previous_item_id is None or previous_item_id == ROOT:
            return 0
        if self._order and self._order[-1] == previous_item_id:
            return len(self._order)  # appending, the usual case: no scan (linear replays)
        try:
            return self._order.index(previous_item_id) + 1
        except ValueError:
            return len(self._order)
