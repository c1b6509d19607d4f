"""Renewal past the maximum session duration (opt-in: ``RealtimeSession(renewal=...)``).

A Realtime server session has a maximum duration (60 minutes on the hosted service; its
``session.created`` says when, as ``expires_at``): then the server sends an ``error`` with code
``session_expired`` and closes the connection. With a :class:`RenewalPolicy` the session moves
to a new server session before that, between two turns:

1. ``after_s`` seconds after a server session started (default 55 minutes), the renewer waits
   for a *turn boundary*: the session open, no response in progress or asked for, no session
   update waiting for its answer, the user not speaking (server VAD), no assistant audio still
   playing in an attached audio output. It looks every ``BOUNDARY_POLL_S``.
2. It opens a new connection (the endpoints in their order of health: :mod:`~voxwire.asyncio.
   health`) and restores the conversation on it through the resumption handshake of
   :mod:`voxwire.asyncio.connection.reconnect` (the agent's configuration, the items of the
   conversation with their ids) — while the old connection goes on serving.
3. In one step with nothing running in between, it checks the boundary still holds and
   switches: the old connection's protocol core settles (:meth:`~voxwire.protocol.
   RealtimeProtocol.connection_lost`), the new connection is swapped in, the application's
   session updates are replayed, and what was sent during the preparation goes to the new
   connection — items the old server acknowledged meanwhile are created after the restored
   ones, item creates and response requests it never answered are sent again. A ``renewed``
   event reports it; the old connection is then closed (its late frames are dropped).

If the conversation changed under the preparation in a way that cannot be carried over (a
response started, an item was deleted or truncated) the prepared connection is closed and the
renewer tries again at the next boundary. If preparing fails (no endpoint answers, the new
server refuses the configuration), an ``error`` event says so and the renewer tries again
``retry_s`` later. An expiry that arrives anyway (no boundary in time, or a server with a
shorter limit) is handled by :class:`~voxwire.asyncio.connection.reconnect.Reconnector` the same
way: the conversation is restored on a new connection and ``renewed`` (``reason="expired"``)
follows.

Off by default, like reconnection: a renewal rebuilds the server's conversation from the local
history, and the model then sees assistant audio as its transcript (a client cannot hand audio
back), pays again for the replayed input tokens, and gets a new server session id — an
application opts in with ``renewal=RenewalPolicy()`` (55 of 60 minutes).

Ownership: the renewer's one task (the timer, the wait for a boundary, the preparation) is owned
by the renewer and stopped by ``close()`` (:meth:`Renewer.aclose`); a connection it opened is
closed before a cancellation propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from dataclasses import dataclass
from typing import Final, Protocol

import voxwire.asyncio.events as ev
from voxwire.asyncio.connection.reconnect import (
    ReconnectHost,
    ReconnectPolicy,
    Resumed,
    carry_over,
    renewed_event,
    report_resumed,
    restore_on,
    server_session_id,
)
from voxwire.asyncio.connection.transport import Transport, TransportClosed
from voxwire.asyncio.errors import ConnectionFailed, SessionClosed
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import server_events as se
from voxwire.protocol.conversation import ROOT
from voxwire.protocol.items import Item
from voxwire.protocol.restoration import RestorationPlan, restoration_items

__all__ = ["BOUNDARY_POLL_S", "RenewHost", "RenewalPolicy", "Renewer"]

log = logging.getLogger("voxwire.session")

#: How often a due renewal looks for a turn boundary.
BOUNDARY_POLL_S: Final = 0.05


@dataclass(frozen=True, kw_only=True)
class RenewalPolicy:
    """When and how a session renews itself on a new connection (module docstring).

    ``after_s``: seconds after a server session started at which to renew, at the next turn
    boundary (default 55 minutes of the hosted service's 60). ``attempts``: connections to try
    when an expiry arrives first (the first at once, then after 0.5 s and 1 s). ``retry_s``:
    seconds before a planned renewal that failed is tried again.
    """

    after_s: float = 55 * 60
    attempts: int = 3
    retry_s: float = 5.0

    def __post_init__(self) -> None:
        for name, value, low in (("after_s", self.after_s, 0.0), ("retry_s", self.retry_s, 0.0)):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < low
                or (name == "after_s" and value == 0)
            ):
                bound = "> 0" if name == "after_s" else ">= 0"
                raise ConfigurationError(
                    f"RenewalPolicy {name}={value!r} is invalid: expected a finite number of "
                    f"seconds {bound}"
                )
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise ConfigurationError(
                f"RenewalPolicy attempts={self.attempts!r} is invalid: expected an int >= 1"
            )
        if self.attempts < 1:
            raise ConfigurationError(
                f"RenewalPolicy attempts={self.attempts!r} is invalid: expected an int >= 1"
            )

    def expiry_policy(self) -> ReconnectPolicy:
        """How the session renews after an expiry: ``attempts``, the first at once."""
        return ReconnectPolicy(attempts=self.attempts, backoff_s=(0.0, 0.5, 1.0))


class RenewHost(ReconnectHost, Protocol):
    """What the renewer needs of the session (beyond what the reconnector needs)."""

    @property
    def transport(self) -> Transport | None:
        """The connection in use."""

    def is_open(self) -> bool: ...

    def playing(self) -> bool:
        """Assistant audio is queued in the attached output that the listener has not heard."""

    def install(self, resumed: Resumed) -> None:
        """Make ``resumed`` the session's connection, now (the session is open)."""

    async def flush(self) -> None:
        """Send what the protocol core queued, on the connection in use."""


class Renewer:
    """Renews one session's server session on time (see the module docstring)."""

    server_event_types: Final = frozenset({se.SessionCreated})

    def __init__(self, policy: RenewalPolicy, host: RenewHost) -> None:
        self.policy = policy
        self._host = host
        self._tasks = OwnedTasks(self._crashed)
        self._started_s: float | None = None
        self._task: asyncio.Task[None] | None = None

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        """``session.created`` of the first connection: the clock starts."""
        self.server_session_started()

    def server_session_started(self) -> None:
        """A server session took over (the first, or a new one after a reconnection or a
        renewal): its ``after_s`` count from now."""
        self._started_s = self._host.now()
        if self._task is None and not self._tasks.closed:
            self._task = self._tasks.spawn(
                self._run(), name="voxwire-client-renewal", kind="session renewal"
            )

    @property
    def due_in_s(self) -> float | None:
        """Seconds until the renewal is due (negative: overdue, waiting for a boundary);
        ``None`` before the first server session."""
        if self._started_s is None:
            return None
        return self._started_s + self.policy.after_s - self._host.now()

    async def aclose(self) -> None:
        """Stop the renewer's task and wait for it (idempotent)."""
        await self._tasks.aclose()

    def _crashed(self, kind: str, exc: BaseException) -> None:
        self._host.emit(ev.failure(f"the {kind}", exc, "session"))

    async def _run(self) -> None:
        while True:
            due_in_s = self.due_in_s
            assert due_in_s is not None
            if due_in_s > 0:
                # Sleep, then look again: a reconnection meanwhile restarts the count.
                await asyncio.sleep(due_in_s)
                continue
            await self._until_boundary()
            if not await self._renew():
                await asyncio.sleep(self.policy.retry_s)

    def at_turn_boundary(self, *, strict: bool = True) -> bool:
        """Nothing is under way that a switch would cut (module docstring, step 1). Not
        ``strict`` (at the switch itself): creates and response requests the old server has
        not answered yet are allowed — they go to the new connection."""
        host = self._host
        protocol = host.protocol
        if not host.is_open() or protocol.responses_in_progress or protocol.updates_in_flight:
            return False
        if host.playing() or host.user_state() != "listening":
            return False
        if not strict:
            return True
        return not (
            protocol.unanswered_response_requests
            or protocol.unacknowledged_item_creates
            or protocol.unacknowledged_item_deletes
            or protocol.unacknowledged_item_truncates
        )

    async def _until_boundary(self) -> None:
        # Polled, not woken by events: whether the listener still hears audio is a position of
        # the playback clock, which no event announces (as PlaybackMonitor polls it too).
        while True:
            if self.at_turn_boundary():
                return
            await asyncio.sleep(BOUNDARY_POLL_S)

    async def _renew(self) -> bool:
        """One renewal from a boundary: ``False`` if preparing the new connection failed."""
        host = self._host
        started_s = host.now()
        old_transport = host.transport
        items, skipped = restoration_items(host.protocol.conversation)
        snapshot = RestorationPlan(items=items, skipped=skipped)
        try:
            transport, url = await host.open_connection()
            prepared = await restore_on(host, transport, url, snapshot)
        except (ConnectionFailed, TransportClosed, SessionClosed) as exc:
            log.info("renewing the session failed: %s", exc)
            host.emit(
                ev.ErrorEvent(
                    message=f"renewing the session failed ({exc}); trying again in "
                    f"{self.policy.retry_s:g} s",
                    source="session",
                    exception=exc,
                )
            )
            return False
        try:
            switched = self._switch(prepared, snapshot.items, old_transport, started_s)
        except BaseException:
            await _close_quietly(prepared.transport)
            raise
        if not switched:  # the conversation moved on: again at the next boundary
            await _close_quietly(prepared.transport)
            return True
        await host.flush()
        if old_transport is not None:
            await _close_quietly(old_transport)
        return True

    def _switch(
        self,
        prepared: Resumed,
        restored: tuple[Item, ...],
        old_transport: Transport | None,
        started_s: float,
    ) -> bool:
        """Swap ``prepared`` in, if the boundary holds and what was ``restored`` is still the
        start of the conversation (module docstring, step 3). Synchronous: nothing runs in
        between."""
        host = self._host
        if host.transport is not old_transport or not self.at_turn_boundary(strict=False):
            return False
        old = host.protocol
        current, _ = restoration_items(old.conversation)
        if current[: len(restored)] != restored:
            return False
        old_session_id = server_session_id(old)
        user_state = host.user_state()
        loss = old.connection_lost()
        host.dispatch(loss.events)
        host.install(prepared)
        protocol = prepared.protocol
        previous = restored[-1].id if restored else ROOT
        for item in current[len(restored) :]:  # acknowledged by the old server meanwhile
            protocol.send_item_create(item, previous_item_id=previous)
            previous = item.id
        resent = carry_over(host, protocol, loss.plan) + len(current) - len(restored)
        host.emit(renewed_event("planned", prepared, old_session_id, started_s, resent, host))
        report_resumed(host, prepared, user_state)
        return True


async def _close_quietly(transport: Transport) -> None:
    with contextlib.suppress(Exception):
        await transport.close()
