"""The recorder's items in memory: the recent ones as structs, the older ones packed.

A :class:`~voxwire.store.recorder.ConversationRecorder` keeps every item it recorded, so that
``session.snapshot()`` is the whole conversation without reading the store. Kept as decoded
structs, an item costs several times its encoded size (a dict per JSON object, a str per key),
and a session of many hours records thousands. So only the :data:`HOT_ITEMS` items touched last
stay decoded (they are the ones events still change: the response being streamed, the item
being cut); the others are packed — the item encoded once with msgpack, one ``bytes`` object —
and decoded again when an event changes them or a snapshot is taken.

A packed item is always the form last written to the store (an item with changes not written
yet is handed back by :meth:`ItemTable.pack_old` to be written first), so whether an update
changes the stored row is answered by comparing with what is unpacked.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import msgspec

from voxwire.store.snapshot import StoredItem

__all__ = ["HOT_ITEMS", "ItemTable"]

#: Items kept decoded: the most recently touched ones.
HOT_ITEMS: Final = 16

_encoder: Final = msgspec.msgpack.Encoder()
_decoder: Final = msgspec.msgpack.Decoder(StoredItem)


class ItemTable:
    """Items by id: :data:`HOT_ITEMS` decoded (with the form last written), the rest packed."""

    def __init__(self) -> None:
        self._hot: dict[str, StoredItem] = {}  # least recently touched first
        self._written: dict[str, StoredItem] = {}  # of hot items: as last written
        self._cold: dict[str, bytes] = {}  # packed: as last written

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._hot or item_id in self._cold

    def __len__(self) -> int:
        return len(self._hot) + len(self._cold)

    def get(self, item_id: str) -> StoredItem | None:
        """The item as known now (unpacked if it was packed: it is touched)."""
        stored = self._hot.pop(item_id, None)
        if stored is None:
            packed = self._cold.pop(item_id, None)
            if packed is None:
                return None
            stored = self._written[item_id] = _decoder.decode(packed)
        self._hot[item_id] = stored
        return stored

    def peek(self, item_id: str) -> StoredItem:
        """The item, without touching it (a neighbour's position, a snapshot)."""
        stored = self._hot.get(item_id)
        return stored if stored is not None else _decoder.decode(self._cold[item_id])

    def set(self, stored: StoredItem) -> None:
        """The item as known now (not written yet: see :meth:`written`)."""
        self.get(stored.id)
        self._hot[stored.id] = stored

    def written(self, stored: StoredItem) -> bool:
        """Record ``stored`` as written; ``False`` if it is what was written last already."""
        if self._written.get(stored.id) == stored:
            return False
        self._written[stored.id] = stored
        return True

    def pop(self, item_id: str) -> StoredItem | None:
        """Forget the item; returns it as known now if that was not written yet."""
        if self._cold.pop(item_id, None) is not None:
            return None
        stored = self._hot.pop(item_id, None)
        if stored is None or self._written.pop(item_id, None) == stored:
            return None
        return stored

    def move(self, item_id: str, position: int) -> None:
        """Give the item a new position, in the form known now and the form written (the move
        is written as it is made: :class:`~voxwire.store.ops.MoveItems`)."""
        if item_id in self._cold:
            moved = msgspec.structs.replace(self.peek(item_id), position=position)
            self._cold[item_id] = _encoder.encode(moved)
            return
        for table in (self._hot, self._written):
            if item_id in table:
                table[item_id] = msgspec.structs.replace(table[item_id], position=position)

    def pack_old(self) -> list[StoredItem]:
        """Pack the items touched least recently beyond :data:`HOT_ITEMS`. Returns those whose
        changes were not written yet (transcript deltas): to be written before anything else."""
        unwritten: list[StoredItem] = []
        while len(self._hot) > HOT_ITEMS:
            item_id = next(iter(self._hot))
            stored = self._hot.pop(item_id)
            if self._written.pop(item_id, None) != stored:
                unwritten.append(stored)
            self._cold[item_id] = _encoder.encode(stored)
        return unwritten

    def in_order(self, order: Iterable[str]) -> tuple[StoredItem, ...]:
        return tuple(self.peek(item_id) for item_id in order)
