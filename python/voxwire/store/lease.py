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
held. A holder on this machine that provably died does not wait for its lease to run out: the
default holder name (:func:`default_holder`) says which process holds the lease, on which host,
boot and pid namespace, and an ``acquire`` there takes the lease of a process that no longer
runs at once (:func:`dead_here`). A released lease is fenced like a taken-over one: its token
writes and renews no more.
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

__all__ = [
    "DEFAULT_LEASE_TTL_S",
    "HeldConversation",
    "Lease",
    "check_ttl",
    "dead_here",
    "default_holder",
    "describe_holder",
]

log = logging.getLogger("voxwire.store")


class LeaseKeeper(Protocol):
    """What a held lease needs of its store (a :class:`~voxwire.store.ConversationStore`; the
    store imports this module, so it is named here by what it does)."""

    async def renew(self, lease: Lease) -> Lease: ...

    async def release(self, lease: Lease) -> None: ...


#: How long a lease lasts without renewal unless told otherwise (renewed every third of it
#: while held): how long a resume on another machine waits after its holder died.
DEFAULT_LEASE_TTL_S: Final = 10.0


class Lease(Struct, frozen=True, kw_only=True):
    """A held conversation: who holds it, its fencing token, until when (UTC, by the database's
    clock) unless renewed."""

    conversation_id: str
    holder: str
    token: int
    ttl_s: float
    expires_at: datetime


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii") as file:
            return file.read()
    except (OSError, ValueError):
        return ""


def _machine() -> str:
    """This boot of this machine and this pid namespace (``BOOT-NAMESPACE``), or ``""`` where
    they cannot be read (then no holder is ever judged dead)."""
    boot = _read("/proc/sys/kernel/random/boot_id").strip().replace("-", "")[:12]
    try:
        namespace = os.readlink("/proc/self/ns/pid").strip("pid:[]")
    except OSError:
        return ""
    return f"{boot}-{namespace}" if boot and namespace.isdigit() else ""


_MACHINE: Final = _machine()


def default_holder() -> str:
    """``host:pid:random:boot-pidns``: who holds a lease, as error messages name it (the
    process, its host, a random tag per lease, and this boot and pid namespace, which let
    :func:`dead_here` tell that the process is gone)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}:{_MACHINE or '-'}"


def _process(holder: str) -> tuple[str, int, str] | None:
    """(host, pid, machine) of a :func:`default_holder` name, or None for any other name."""
    parts = holder.rsplit(":", 3)
    if len(parts) != 4 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1]), parts[3]


def describe_holder(holder: str) -> str:
    """The holder as an error message names it: with its process and host if it is a
    :func:`default_holder` name."""
    process = _process(holder)
    if process is None:
        return holder
    return f"{holder} (process {process[1]} on host {process[0]})"


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (no right to signal it: it exists)
        return True
    # Exited but not yet reaped by its parent (a zombie) is dead too.
    state = _read(f"/proc/{pid}/stat").rpartition(")")[2].split()[:1]
    return state not in (["Z"], ["X"])


def dead_here(holder: str | None) -> bool:
    """Whether ``holder`` names a process of this machine — same host, same boot, same pid
    namespace — that no longer runs: its lease can be taken at once. False for any other holder
    (another machine, a name given with ``holder=``, a process that runs): its lease expires."""
    process = _process(holder) if holder else None
    if process is None or not _MACHINE:
        return False
    host, pid, machine = process
    if host != socket.gethostname() or machine != _MACHINE or pid <= 0:
        return False
    return not _running(pid)


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
