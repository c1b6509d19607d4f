"""Store operations: what a :class:`~voxwire.store.ConversationStore` is asked to write.

Every operation is idempotent (a put replaces, a drop of something absent does nothing), so a
batch that is applied twice — a retry after a lost acknowledgement — leaves the same store.
:class:`~voxwire.store.recorder.ConversationRecorder` turns server events into them;
:meth:`ConversationStore.apply <voxwire.store.ConversationStore.apply>` writes a batch in one
transaction.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from msgspec import Struct

from voxwire.store.snapshot import StoredItem, UsageTotals

__all__ = [
    "DeleteItem",
    "DropApproval",
    "DropOutput",
    "MoveItems",
    "PutApproval",
    "PutItem",
    "PutOutput",
    "SetAgent",
    "SetUsage",
    "StoreOp",
]


class _Op(Struct, kw_only=True, frozen=True):
    pass


class PutItem(_Op, frozen=True):
    """Insert the item, or replace the stored item with the same id (position included)."""

    item: StoredItem


class DeleteItem(_Op, frozen=True):
    """Remove the item ``item_id`` (the server confirmed ``conversation.item.deleted``)."""

    item_id: str


class MoveItems(_Op, frozen=True):
    """Give items new positions (item id -> position); ids not stored are ignored."""

    positions: dict[str, int]


class SetAgent(_Op, frozen=True):
    """The active agent is now ``name`` (``None``: no agent)."""

    name: str | None


class PutApproval(_Op, frozen=True):
    """The function call ``call_id`` waits for an approval; ``call`` is its wire item."""

    call_id: str
    call: dict[str, Any]


class DropApproval(_Op, frozen=True):
    """The approval of ``call_id`` is no longer pending (answered, or its output arrived)."""

    call_id: str


class PutOutput(_Op, frozen=True):
    """The output of ``call_id`` is computed but not yet delivered; any JSON value (``""`` and
    other falsy values included)."""

    call_id: str
    output: Any


class DropOutput(_Op, frozen=True):
    """The output of ``call_id`` was delivered (the server confirmed the output item)."""

    call_id: str


class SetUsage(_Op, frozen=True):
    """The conversation's usage totals are now ``usage``."""

    usage: UsageTotals


StoreOp: TypeAlias = (
    PutItem
    | DeleteItem
    | MoveItems
    | SetAgent
    | PutApproval
    | DropApproval
    | PutOutput
    | DropOutput
    | SetUsage
)
