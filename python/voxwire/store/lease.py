"""Leases: one live session per conversation, with a fencing token.

A session that takes a conversation (new or resumed) acquires its lease
(:meth:`ConversationStore.acquire <voxwire.store.ConversationStore.acquire>`); while the lease
is live nobody else can acquire it, and writes without it are refused
(:class:`~voxwire.exceptions.ConversationHeld`). Each acquisition increments the
conversation's **fencing token**; every write that carries a lease is accepted only while its
token is the conversation's current one, in the same transaction as the write. So a holder that
stalled past its lease (a long GC pause, a frozen VM) and whose lease was taken over cannot
write any more (:class:`~voxwire.exceptions.LeaseLost`): two writers are refused, never
interleaved.

A lease lasts ``ttl_s`` from its last renewal, measured by the database's clock (PostgreSQL's
``clock_timestamp()``; SQLite's, which is the machine's), so holders on several machines with
skewed clocks agree. A dead holder stops renewing, its lease expires after at most ``ttl_s``,
and then the conversation can be acquired again (with the next token).
:class:`HeldConversation` renews a lease in the background every ``ttl_s / 3`` while it is
held.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Callable
from datetime import datetime
from typing import Final, Protocol

from msgspec import Struct

from voxwire.exceptions import ConfigurationError, ConversationNotFound, LeaseLost, StoreError

__all__ = ["DEFAULT_LEASE_TTL_S", "HeldConversation", "Lease", "check_ttl", "default_holder"]

log = logging.getLogger("voxwire.store")


class LeaseKeeper(Protocol):
    """What a held lease needs of its store (a :class:`~voxwire.store.ConversationStore`; the
    store imports this module, so it is named here by what it does)."""

    async def renew(self, lease: Lease) -> Lease: ...

    async def release(self, lease: Lease) -> None: ...


#: How long a lease lasts without renewal unless told otherwise.
DEFAULT_LEASE_TTL_S: Final = 30.0


class Lease(Struct, frozen=True, kw_only=True):
    """A held conversation: who holds it, its fencing token, until when (UTC, by the database's
    clock) unless renewed."""

    conversation_id: str
    holder: str
    token: int
    ttl_s: float
    expires_at: datetime


def default_holder() -> str:
    """``host:pid:random``: who holds a lease, as error messages name it."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def check_ttl(ttl_s: object) -> float:
    if (
        isinstance(ttl_s, bool)
        or not isinstance(ttl_s, int | float)
        or not 0.05 <= float(ttl_s) <= 86_400
    ):
        raise ConfigurationError(
            f"ttl_s={ttl_s!r}: expected seconds in 0.05..86400 (a lease is renewed every "
            "ttl_s / 3 while held; a dead holder's lease frees the conversation after ttl_s)"
        )
    return float(ttl_s)


class HeldConversation:
    """A lease held and renewed in the background (:meth:`ConversationStore.hold
    <voxwire.store.ConversationStore.hold>`); :meth:`release` stops renewing and frees the
    conversation at once. Pass :attr:`lease` to every write.

    If a renewal finds the lease taken over, renewing stops, :attr:`lost` holds the
    :class:`~voxwire.exceptions.LeaseLost` and ``on_lost`` (if given) is called with it; a
    renewal that fails for another reason (the database unreachable for a moment) is logged and
    tried again at the next period — the lease survives as long as one renewal per ``ttl_s``
    gets through.
    """

    def __init__(
        self,
        store: LeaseKeeper,
        lease: Lease,
        on_lost: Callable[[StoreError], None] | None = None,
    ) -> None:
        self._store = store
        self._lease = lease
        self._on_lost = on_lost
        self.lost: StoreError | None = None
        self._task: asyncio.Task[None] | None = asyncio.create_task(
            self._renew(), name=f"voxwire-lease-{lease.conversation_id}"
        )

    @property
    def lease(self) -> Lease:
        """The lease as last renewed (its token never changes)."""
        return self._lease

    async def _renew(self) -> None:
        period = self._lease.ttl_s / 3
        while True:
            await asyncio.sleep(period)
            try:
                self._lease = await self._store.renew(self._lease)
            except (LeaseLost, ConversationNotFound) as exc:
                self._lost(exc)
                return
            except StoreError as exc:
                log.warning("renewing the lease of %s failed: %s", self._lease.conversation_id, exc)

    def _lost(self, exc: StoreError) -> None:
        self.lost = exc
        log.error("%s", exc)
        if self._on_lost is not None:
            self._on_lost(exc)

    async def release(self) -> None:
        """Stop renewing and free the conversation (nothing happens if the lease was lost);
        idempotent."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        await asyncio.wait([task])  # (a cancellation of the caller is not swallowed)
        if self.lost is None:
            with contextlib.suppress(StoreError):
                await self._store.release(self._lease)

    async def __aenter__(self) -> HeldConversation:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()
