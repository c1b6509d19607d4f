"""The :class:`ConversationStore` interface: what a session needs from a store.

A store holds conversations by id. A session creates (or opens) its conversation, then writes
:mod:`operations <voxwire.store.ops>` as the server confirms items — each
:meth:`~ConversationStore.apply` is one short transaction — and a session in another process
loads the whole conversation back (:meth:`~ConversationStore.load`) to resume it.

Implementations: :class:`~voxwire.store.sqlite.SQLiteStore` (one file, the embedded default) and
:class:`~voxwire.store.postgres.PostgresStore` (``pip install "voxwire[postgres]"``, for many
agent processes on many machines). Both are safe to share between the sessions of one process
(every method may be awaited concurrently) and between processes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

from msgspec import Struct

from voxwire.store.ops import (
    DeleteItem,
    DropApproval,
    DropOutput,
    PutApproval,
    PutItem,
    PutOutput,
    SetAgent,
    SetUsage,
    StoreOp,
)
from voxwire.store.snapshot import SessionSnapshot, StoredItem, UsageTotals

__all__ = ["ConversationInfo", "ConversationStore"]


class ConversationInfo(Struct, frozen=True, kw_only=True):
    """What :meth:`ConversationStore.list_conversations` tells about a conversation."""

    conversation_id: str
    created_at: datetime
    updated_at: datetime
    agent: str | None
    item_count: int


class ConversationStore(ABC):
    """Conversations by id: items in order, agent, approvals, undelivered outputs, usage.

    Errors: :class:`~voxwire.exceptions.ConversationNotFound` for an id that is not stored,
    :class:`~voxwire.exceptions.ConversationExists` when :meth:`create` finds one,
    :class:`~voxwire.exceptions.StoreVersionError` when the store was written by a newer voxwire.
    """

    # --- conversations --------------------------------------------------------------------------

    @abstractmethod
    async def create(
        self, conversation_id: str | None = None, *, agent: str | None = None
    ) -> ConversationInfo:
        """Store a new, empty conversation (a random id if none is given)."""

    @abstractmethod
    async def open_conversation(
        self, conversation_id: str, *, agent: str | None = None
    ) -> ConversationInfo:
        """The conversation ``conversation_id``, created empty (with ``agent``) if not stored."""

    @abstractmethod
    async def info(self, conversation_id: str) -> ConversationInfo:
        """Times, agent and item count of one conversation."""

    @abstractmethod
    async def list_conversations(
        self, *, limit: int = 100, updated_before: datetime | None = None
    ) -> list[ConversationInfo]:
        """Conversations, most recently updated first; page with ``updated_before`` (the
        ``updated_at`` of the last one of the previous page)."""

    @abstractmethod
    async def delete_conversation(self, conversation_id: str) -> bool:
        """Remove a conversation and everything in it; ``False`` if it was not stored."""

    # --- reading and writing --------------------------------------------------------------------

    @abstractmethod
    async def apply(self, conversation_id: str, ops: Sequence[StoreOp]) -> None:
        """Write ``ops`` in order, in one transaction, and set the conversation's ``updated_at``.
        When this returns, the operations survive a crash of the process."""

    @abstractmethod
    async def load(self, conversation_id: str) -> SessionSnapshot:
        """The whole conversation, read in one consistent transaction."""

    @abstractmethod
    async def import_snapshot(self, snapshot: SessionSnapshot, *, replace: bool = False) -> None:
        """Store ``snapshot`` as its conversation (``replace``: over an existing one; otherwise
        an existing one is an error)."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections and threads; idempotent."""

    async def __aenter__(self) -> ConversationStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- one operation each (shorthands for apply) ----------------------------------------------

    async def put_item(self, conversation_id: str, item: StoredItem) -> None:
        """Insert or replace an item (upsert by item id)."""
        await self.apply(conversation_id, [PutItem(item=item)])

    async def delete_item(self, conversation_id: str, item_id: str) -> None:
        await self.apply(conversation_id, [DeleteItem(item_id=item_id)])

    async def set_agent(self, conversation_id: str, name: str | None) -> None:
        await self.apply(conversation_id, [SetAgent(name=name)])

    async def put_approval(self, conversation_id: str, call_id: str, call: dict[str, Any]) -> None:
        await self.apply(conversation_id, [PutApproval(call_id=call_id, call=call)])

    async def drop_approval(self, conversation_id: str, call_id: str) -> None:
        await self.apply(conversation_id, [DropApproval(call_id=call_id)])

    async def put_output(self, conversation_id: str, call_id: str, output: Any) -> None:
        await self.apply(conversation_id, [PutOutput(call_id=call_id, output=output)])

    async def drop_output(self, conversation_id: str, call_id: str) -> None:
        await self.apply(conversation_id, [DropOutput(call_id=call_id)])

    async def set_usage(self, conversation_id: str, usage: UsageTotals) -> None:
        await self.apply(conversation_id, [SetUsage(usage=usage)])
