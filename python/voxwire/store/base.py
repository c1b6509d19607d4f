"""The :class:`ConversationStore` interface: what a session needs from a store.

A store holds conversations by id. A session creates (or opens) its conversation, then writes
:mod:`operations <voxwire.store.ops>` as the server confirms items — each
:meth:`~ConversationStore.apply` is one short transaction — and a session in another process
loads the whole conversation back (:meth:`~ConversationStore.load`) to resume it.

Implementations: :class:`~voxwire.store.sqlite.SQLiteStore` (one file, the embedded default) and
:class:`~voxwire.store.postgres.PostgresStore` (``pip install "voxwire[postgres]"``, for many
agent processes on many machines). Both are safe to share between the sessions of one process
(every method may be awaited concurrently) and between processes.

One live session per conversation: a session acquires the conversation's lease
(:meth:`~ConversationStore.acquire`, or :meth:`~ConversationStore.hold` which also renews it)
and passes it to every write; another process is refused while the lease is live, and a holder
whose lease was taken over cannot write any more (:mod:`voxwire.store.lease`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

from msgspec import Struct

from voxwire.exceptions import StoreError
from voxwire.store.lease import DEFAULT_LEASE_TTL_S, HeldConversation, Lease
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

    Errors: every failure is a :class:`~voxwire.exceptions.StoreError` (the tree is drawn in
    :mod:`voxwire.exceptions`) naming the store, the conversation, what is wrong and what to do:
    :class:`~voxwire.exceptions.ConversationNotFound` for an id that is not stored,
    :class:`~voxwire.exceptions.ConversationExists` when :meth:`create` finds one,
    :class:`~voxwire.exceptions.StoreVersionError` when the store was written by a newer voxwire,
    :class:`~voxwire.exceptions.StoreCorrupt` for a damaged file or conversation,
    :class:`~voxwire.exceptions.StoreReadOnly`, :class:`~voxwire.exceptions.StoreFull`,
    :class:`~voxwire.exceptions.ConversationHeld` and :class:`~voxwire.exceptions.LeaseLost`.
    Bad arguments (an empty id, a value that is not JSON) raise
    :class:`~voxwire.exceptions.ConfigurationError` at once.
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
    async def delete_conversation(
        self, conversation_id: str, *, lease: Lease | None = None
    ) -> bool:
        """Remove a conversation and everything in it; ``False`` if it was not stored. Refused
        (:class:`~voxwire.exceptions.ConversationHeld`) while another holds its lease."""

    # --- reading and writing --------------------------------------------------------------------

    @abstractmethod
    async def apply(
        self, conversation_id: str, ops: Sequence[StoreOp], *, lease: Lease | None = None
    ) -> None:
        """Write ``ops`` in order, in one transaction, and set the conversation's ``updated_at``.
        When this returns, the operations survive a crash of the process.

        ``lease``: the writer's lease; the write is refused
        (:class:`~voxwire.exceptions.LeaseLost`) unless it is still the conversation's current
        one. Without it, the write is refused (:class:`~voxwire.exceptions.ConversationHeld`)
        while anyone holds a live lease."""

    @abstractmethod
    async def load(self, conversation_id: str) -> SessionSnapshot:
        """The whole conversation, read in one consistent transaction."""

    @abstractmethod
    async def import_snapshot(
        self, snapshot: SessionSnapshot, *, replace: bool = False, lease: Lease | None = None
    ) -> None:
        """Store ``snapshot`` as its conversation (``replace``: over an existing one, which
        keeps its lease — refused like :meth:`apply` if another holds it; otherwise an existing
        one is an error)."""

    # --- leases (voxwire.store.lease) -------------------------------------------------------------

    @abstractmethod
    async def acquire(
        self,
        conversation_id: str,
        *,
        ttl_s: float = DEFAULT_LEASE_TTL_S,
        holder: str | None = None,
    ) -> Lease:
        """Take the conversation for one writer: a lease for ``ttl_s`` seconds (by the
        database's clock) with the next fencing token. Refused
        (:class:`~voxwire.exceptions.ConversationHeld`, naming the holder) while another lease
        is live; an expired one is taken over. ``holder`` names this writer in others' error
        messages (default ``host:pid:random``)."""

    @abstractmethod
    async def renew(self, lease: Lease) -> Lease:
        """Extend ``lease`` by its ``ttl_s`` from now; :class:`~voxwire.exceptions.LeaseLost`
        if it was taken over (after it had expired)."""

    @abstractmethod
    async def release(self, lease: Lease) -> None:
        """Free the conversation now (nothing happens if the lease was taken over)."""

    async def hold(
        self,
        conversation_id: str,
        *,
        ttl_s: float = DEFAULT_LEASE_TTL_S,
        holder: str | None = None,
        on_lost: Callable[[StoreError], None] | None = None,
    ) -> HeldConversation:
        """:meth:`acquire`, then renew in the background every ``ttl_s / 3`` until
        :meth:`HeldConversation.release <voxwire.store.lease.HeldConversation.release>`;
        ``on_lost`` is called if a renewal finds the lease taken over."""
        lease = await self.acquire(conversation_id, ttl_s=ttl_s, holder=holder)
        return HeldConversation(self, lease, on_lost)

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
