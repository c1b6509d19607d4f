"""Reconnection and resumption after a lost connection (opt-in: ``RealtimeSession(reconnect=...)``).

A Realtime server session lives as long as its websocket: when the connection is lost, the
conversation on the server is gone with it. With a :class:`ReconnectPolicy` the session tries
again — the primary URL, then the fallbacks, like ``connect()`` — and *resumes* on the new
server session:

1. wait for the new ``session.created``;
2. send the current agent's configuration as ``session.update`` (tracing included again: it is
   sent once per *server* session);
3. recreate the conversation from the local history (:func:`restoration_items`): messages (user
   audio as its transcript, assistant audio as ``output_text`` holding its transcript — a client
   cannot hand audio back to the server), function calls and their outputs, each with its old
   item id and chained by ``previous_item_id``;
4. wait until the server acknowledged the update and every item, then hand the new connection to
   the session, which swaps it in and goes on.

What was in flight is settled first (:meth:`Reconnector.recover`): playback stops as at an
interruption, and the protocol core's :meth:`~voxwire.protocol.RealtimeProtocol.connection_lost`
ends the responses in progress (``cancelled``, reason ``connection_lost``) and takes item
deletes and truncates the lost server never acknowledged as done — its events reach the
application like received ones — and returns the
:class:`~voxwire.protocol.restoration.RestorationPlan` (pure planning, in
:mod:`voxwire.protocol.restoration`). Once the new connection is swapped in, its protocol core
sends the application's session updates again (the
:class:`~voxwire.protocol.updates.SessionUpdateLog` every connection's core shares: the
resumption sent the agent's configuration only), the tool runner sends its undelivered outputs
again, then the core sends what the lost server never acknowledged — item creates, then
``response.create`` requests with their sources
(:meth:`~voxwire.protocol.RealtimeProtocol.resend_unanswered`). The protocol core holds
per-connection state (the gate, pending requests, the server's session), so every connection
gets a fresh :class:`~voxwire.protocol.RealtimeProtocol` (sharing the session's id factory, so
ids never repeat); the conversation is carried over by recreating it.

The same handshake (:func:`restore_on`) serves a renewal
(:mod:`voxwire.asyncio.connection.renewal`): planned, on a connection prepared beside the live one;
after a ``session_expired``, here, with the renewal's attempts and a ``renewed`` event instead of
``reconnecting`` / ``reconnected``.

Ownership: :meth:`Reconnector.recover` runs in the session's receive-loop task (the loop pumps a
connection, reconnects, pumps the next). ``close()`` cancels that task, which aborts a backoff
sleep, a handshake or a restoration at once; a connection opened by an aborted attempt is closed
before the cancellation propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

import voxwire.asyncio.events as ev
from voxwire.asyncio.connection.transport import Transport, TransportClosed
from voxwire.asyncio.errors import ConnectionFailed, SessionClosed
from voxwire.asyncio.events.history import HistoryItem
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import server_events as se
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.conversation import ROOT
from voxwire.protocol.objects import ErrorInfo
from voxwire.protocol.protocol import RealtimeProtocol
from voxwire.protocol.restoration import RestorationPlan

__all__ = [
    "ReconnectHost",
    "ReconnectPolicy",
    "Reconnector",
    "RestoreHost",
    "Resumed",
    "SessionReconnecting",
    "carry_over",
    "renewed_event",
    "report_resumed",
    "restore_on",
    "server_session_id",
]

log = logging.getLogger("voxwire.session")


class SessionReconnecting(SessionClosed):
    """The connection was lost and the session is reconnecting: nothing can be sent until the
    ``reconnected`` event (then send again), or the ``close`` event if it gives up.

    A :class:`~voxwire.exceptions.SessionClosed`, so code that stops at ``SessionClosed`` stops
    here too; catch this one to wait and retry instead."""


@dataclass(frozen=True, kw_only=True)
class ReconnectPolicy:
    """How a session reconnects after an abnormal end of its connection.

    ``attempts``: how many reconnections to try (each tries the primary URL, then the fallback
    URLs) before giving up with a ``close`` event. ``backoff_s``: seconds to wait before each
    attempt — one number for every attempt, or one per attempt (the last one repeats). A
    ``reconnecting`` event announces each attempt with its delay.
    ``restore_history``: recreate the conversation on the new server session (default); off,
    the new session starts empty and ``session.history`` follows it.
    """

    attempts: int = 3
    backoff_s: float | Sequence[float] = (0.5, 1.0, 2.0)
    restore_history: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise ConfigurationError(
                f"ReconnectPolicy attempts={self.attempts!r} is invalid: expected an int >= 1"
            )
        if self.attempts < 1:
            raise ConfigurationError(
                f"ReconnectPolicy attempts={self.attempts!r} is invalid: expected an int >= 1 "
                "(leave reconnect=None for no reconnection)"
            )
        raw = self.backoff_s
        delays = (raw,) if isinstance(raw, int | float) else raw
        if isinstance(delays, str) or not isinstance(delays, Sequence) or not delays:
            raise ConfigurationError(
                f"ReconnectPolicy backoff_s={raw!r} is invalid: expected seconds >= 0, or a "
                "non-empty sequence of them (one per attempt, the last repeating)"
            )
        for delay in delays:
            if (
                isinstance(delay, bool)
                or not isinstance(delay, int | float)
                or not math.isfinite(delay)
                or delay < 0
            ):
                raise ConfigurationError(
                    f"ReconnectPolicy backoff_s={raw!r} is invalid: {delay!r} is not a finite "
                    "number of seconds >= 0"
                )
        object.__setattr__(self, "backoff_s", tuple(float(d) for d in delays))
        if not isinstance(self.restore_history, bool):
            raise ConfigurationError(
                f"ReconnectPolicy restore_history={self.restore_history!r} is invalid: "
                "expected True or False"
            )

    def delay_s(self, attempt: int) -> float:
        """Seconds to wait before ``attempt`` (counted from 1)."""
        delays = self.backoff_s
        assert isinstance(delays, tuple)
        return float(delays[min(attempt, len(delays)) - 1])


# --- the attempts ---------------------------------------------------------------------------------


class ReconnectHost(Protocol):
    """What the reconnector needs of the session."""

    @property
    def protocol(self) -> RealtimeProtocol:
        """The protocol core of the connection in use (the lost one, until the swap)."""

    def emit(self, event: ev.SessionEvent) -> None:
        """Queue a session event for the application."""

    def dispatch(self, events: Iterable[se.ReceivedEvent]) -> None:
        """Hand events to the session's consumers as if they had been received."""

    def stop_playback(self) -> None:
        """If audio plays or a response is in progress: stop playback and truncate what was
        heard, as at an interruption the server started (no cancel: the response is gone with
        the server)."""

    def connection_gone(self, failure: BaseException) -> None:
        """Fail what waits for the lost server (agent updates), drop unsent frames."""

    async def open_connection(self) -> tuple[Transport, str]:
        """Open a connection (API key resolved again, the primary URL then the fallbacks);
        the transport and its URL. Raises :class:`ConnectionFailed`."""

    def new_protocol(self) -> RealtimeProtocol:
        """A protocol core for a new connection."""

    def resume_config(self) -> SessionConfig:
        """The ``session.update`` to send on a new server session."""

    def swap_in(self, resumed: Resumed) -> bool:
        """Make ``resumed`` the session's connection, unless the session is closing
        (``False``: then the reconnector closes it)."""

    def connection_replaced(self) -> None:
        """The new connection is in: the tool runner sends its undelivered outputs again."""

    def user_state(self) -> ev.UserState: ...

    def history(self) -> tuple[HistoryItem, ...]: ...

    def now(self) -> float:
        """The session's clock (monotonic seconds)."""

    @property
    def restore_timeout_s(self) -> float:
        """How long the new server may take to acknowledge the restoration."""


@dataclass
class Resumed:
    """A new connection, its conversation restored, ready to be swapped in."""

    transport: Transport
    protocol: RealtimeProtocol
    url: str
    items_restored: int
    items_skipped: int
    errors: list[ev.ErrorEvent] = field(default_factory=list)
    """Server errors met while restoring (an item the new server refused), reported after the
    ``reconnected`` event."""


class _RestoreFailed(Exception):
    """The new server refused the session configuration: this attempt failed."""


class Reconnector:
    """Runs the attempts of one session (see the module docstring for the owner).

    ``policy``: how a lost connection is reconnected (``None``: it is not). ``expiry``: how the
    session renews itself on a new connection after the server expired it (``session_expired``;
    :mod:`voxwire.asyncio.connection.renewal`) — ``None``: an expiry ends the session."""

    server_event_types: Final = frozenset({se.ErrorEvent})

    def __init__(
        self,
        policy: ReconnectPolicy | None,
        host: ReconnectHost,
        *,
        expiry: ReconnectPolicy | None = None,
    ) -> None:
        self.policy = policy
        self.expiry = expiry
        self._host = host
        self._expired = False

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        """Every event received: a ``session_expired`` error means the server ended the session
        on purpose: the end of the connection after it is renewed (with ``expiry``) or ends the
        session, never reconnected."""
        if isinstance(event, se.ErrorEvent) and event.error.code == "session_expired":
            self._expired = True

    def server_session_replaced(self) -> None:
        """A renewal moved the session to a new server session: an expiry of the old one no
        longer counts."""
        self._expired = False

    def should_reconnect(self, close: ev.CloseEvent) -> bool:
        """After an expiry: renew (with ``expiry``), whatever the close. Otherwise only an
        abnormal end (no close frame, or a code other than 1000/1001), with a ``policy``."""
        if self._expired:
            return self.expiry is not None and close.reason != "error"
        return self.policy is not None and close.reason == "connection_lost"

    async def recover(self, lost: ev.CloseEvent) -> Transport | ev.CloseEvent:
        """The connection was lost (or expired): settle what was in flight, reconnect and
        resume; the new transport, swapped in, or the ``close`` event to end the session with."""
        host = self._host
        started_s = host.now()
        expired, old_session_id = self._expired, server_session_id(host.protocol)
        policy = self.expiry if expired else self.policy
        assert policy is not None
        user_state = host.user_state()
        plan = self._settle()
        outcome = await self.run(lost, plan, policy, announce=not expired)
        if isinstance(outcome, ev.CloseEvent):
            return outcome
        if not host.swap_in(outcome):  # close() came first
            await outcome.transport.close()
            return ev.CloseEvent(reason="client_closed")
        items_resent = carry_over(host, outcome.protocol, plan)
        if expired:
            event = renewed_event("expired", outcome, old_session_id, started_s, items_resent, host)
            host.emit(event)
        else:
            host.emit(
                ev.ReconnectedEvent(
                    url=outcome.url,
                    items_restored=outcome.items_restored,
                    items_skipped=outcome.items_skipped,
                    items_resent=items_resent,
                )
            )
        report_resumed(host, outcome, user_state)
        return outcome.transport

    def _settle(self) -> RestorationPlan:
        """What was in flight on the lost connection ends here, reported as the application
        would see an interruption (docs/session.md, "Reconnection")."""
        host = self._host
        host.stop_playback()
        loss = host.protocol.connection_lost()
        host.dispatch(loss.events)
        host.connection_gone(
            SessionReconnecting(
                "the connection was lost before the server acknowledged the session.update"
            )
        )
        return loss.plan

    async def run(
        self,
        lost: ev.CloseEvent,
        restoration: RestorationPlan,
        policy: ReconnectPolicy,
        *,
        announce: bool = True,
    ) -> Resumed | ev.CloseEvent:
        """Try the policy's attempts (each announced with a ``reconnecting`` event unless not
        ``announce``); the resumed connection, or the ``close`` event to end the session with
        (``connection_lost``, carrying the last attempt's error)."""
        error: BaseException | None = lost.error
        host = self._host
        for attempt in range(1, policy.attempts + 1):
            delay_s = policy.delay_s(attempt)
            if announce:
                host.emit(ev.ReconnectingEvent(attempt=attempt, delay_s=delay_s, error=error))
            if delay_s > 0:
                await asyncio.sleep(delay_s)
            try:
                transport, url = await host.open_connection()
            except Exception as exc:  # refused, timed out, the key function failed: try again
                log.info("reconnection attempt %d failed: %s", attempt, exc)
                error = exc
                continue
            try:
                resumed = await restore_on(
                    host, transport, url, restoration, restore_history=policy.restore_history
                )
            except (ConnectionFailed, TransportClosed, SessionClosed) as exc:
                error = exc
                log.info("reconnection attempt %d failed: %s", attempt, error)
                continue
            self._expired = False
            return resumed
        return ev.CloseEvent(
            reason="connection_lost",
            error=error,
            code=error.code if isinstance(error, TransportClosed) else None,
            detail=f"gave up reconnecting after {policy.attempts} attempt(s): {error}",
        )


class RestoreHost(Protocol):
    """What the resumption handshake needs of the session."""

    def new_protocol(self) -> RealtimeProtocol:
        """A protocol core for a new connection."""

    def resume_config(self) -> SessionConfig:
        """The ``session.update`` to send on a new server session."""

    @property
    def restore_timeout_s(self) -> float:
        """How long the new server may take to acknowledge the restoration."""


async def restore_on(
    host: RestoreHost,
    transport: Transport,
    url: str,
    restoration: RestorationPlan,
    *,
    restore_history: bool = True,
) -> Resumed:
    """The resumption handshake on the new connection ``transport`` (module docstring, steps
    1-4), bounded by ``host.restore_timeout_s``. On failure the transport is closed and the
    attempt's error raised (:class:`ConnectionFailed` — a refused configuration, no answer in
    time — or the new connection's :class:`TransportClosed` / :class:`SessionClosed`); a
    cancellation closes it too."""
    timeout_s = host.restore_timeout_s
    try:
        return await asyncio.wait_for(
            _restore(host, transport, url, restoration, restore_history), timeout_s
        )
    except (TransportClosed, SessionClosed, _RestoreFailed, asyncio.TimeoutError) as exc:
        await _close_quietly(transport)
        raise _attempt_error(exc, url, timeout_s)  # noqa: B904 - the cause is set as it should be
    except BaseException:
        await _close_quietly(transport)
        raise


async def _restore(
    host: RestoreHost,
    transport: Transport,
    url: str,
    restoration: RestorationPlan,
    restore_history: bool,
) -> Resumed:
    protocol = host.new_protocol()
    await _receive_until(transport, protocol, lambda e: isinstance(e, se.SessionCreated))
    update_id = protocol.send_session_update(host.resume_config(), origin="session").event_id
    waiting: dict[str, str] = {}  # create event_id -> item id
    created: dict[str, str] = {}  # item id -> create event_id (each ack found in one step)
    previous = ROOT
    items = restoration.items if restore_history else ()
    for item in items:
        create = protocol.send_item_create(item, previous_item_id=previous)
        assert create.event_id is not None
        assert create.item.id is not None
        waiting[create.event_id] = create.item.id
        created[create.item.id] = create.event_id
        previous = create.item.id
    for frame in protocol.data_to_send():
        await transport.send(frame)

    updated = False
    restored = 0
    errors: list[ev.ErrorEvent] = []

    def acknowledged(event: se.ReceivedEvent) -> bool:
        nonlocal updated, restored
        if isinstance(event, se.SessionUpdated):
            updated = True
        elif isinstance(event, se.ConversationItemAdded | se.ConversationItemCreated):
            event_id = created.pop(event.item.id or "", None)
            if event_id is not None and waiting.pop(event_id, None) is not None:
                restored += 1
        elif isinstance(event, se.ErrorEvent):
            failed = event.error
            if failed.event_id is not None and failed.event_id == update_id:
                raise _RestoreFailed(
                    f"{url} rejected the session configuration on resumption: {failed.message}"
                )
            waiting.pop(failed.event_id or "", None)
            errors.append(_restore_error(failed))
        return updated and not waiting

    await _receive_until(transport, protocol, acknowledged)
    return Resumed(
        transport=transport,
        protocol=protocol,
        url=url,
        items_restored=restored,
        items_skipped=len(restoration.skipped) if restore_history else 0,
        errors=errors,
    )


def _restore_error(failed: ErrorInfo) -> ev.ErrorEvent:
    return ev.ErrorEvent(
        message=f"restoring the conversation: {failed.message}",
        source="server",
        code=failed.code,
        param=failed.param,
        event_id=failed.event_id,
    )


def server_session_id(protocol: RealtimeProtocol) -> str | None:
    """The server's id of the session ``protocol`` is connected to (``None`` before
    ``session.created``, or from a server that sends none)."""
    session = protocol.session
    value = session.extra.get("id") if session is not None else None
    return value if isinstance(value, str) else None


def carry_over(host: ReconnectHost, protocol: RealtimeProtocol, plan: RestorationPlan) -> int:
    """The new connection ``protocol`` is in: the application's session updates again, the
    tool runner's undelivered outputs, then what the lost server never acknowledged (item
    creates, response requests); how many of its unacknowledged creates went again."""
    protocol.replay_session_updates()
    host.connection_replaced()
    return protocol.resend_unanswered(plan)


def report_resumed(host: ReconnectHost, outcome: Resumed, user_state: ev.UserState) -> None:
    """After the ``reconnected`` / ``renewed`` event: the user state the new server starts
    with, the restoration's errors, the history."""
    if user_state != "listening":  # the new server has heard nothing yet
        host.emit(ev.UserStateChangedEvent(old_state=user_state, new_state="listening"))
    for error in outcome.errors:
        host.emit(error)
    host.emit(ev.HistoryUpdatedEvent(history=host.history()))


def renewed_event(
    reason: ev.RenewalReason,
    outcome: Resumed,
    old_session_id: str | None,
    started_s: float,
    items_resent: int,
    host: ReconnectHost,
) -> ev.RenewedEvent:
    return ev.RenewedEvent(
        reason=reason,
        url=outcome.url,
        old_session_id=old_session_id,
        new_session_id=server_session_id(outcome.protocol),
        switch_s=max(0.0, host.now() - started_s),
        items_replayed=outcome.items_restored,
        items_skipped=outcome.items_skipped,
        items_resent=items_resent,
    )


async def _receive_until(
    transport: Transport, protocol: RealtimeProtocol, done: _Predicate
) -> None:
    """Feed frames into ``protocol`` until an event satisfies ``done`` (the events are the
    handshake's: the application does not see them; the state they make is the protocol's)."""
    while True:
        protocol.receive_text(await transport.recv())
        finished = False
        for event in protocol.events_received():
            finished = done(event) or finished
        if finished:
            return


class _Predicate(Protocol):
    def __call__(self, event: se.ReceivedEvent, /) -> bool: ...


def _attempt_error(exc: BaseException, url: str, timeout_s: float) -> BaseException:
    if isinstance(exc, asyncio.TimeoutError):
        failed = ConnectionFailed(
            f"{url} did not acknowledge the resumption within {timeout_s:g} s"
        )
        failed.__cause__ = exc
        return failed
    if isinstance(exc, _RestoreFailed):
        failed = ConnectionFailed(str(exc))
        failed.__cause__ = exc
        return failed
    if isinstance(exc, SessionClosed) and isinstance(exc.__cause__, TransportClosed):
        return exc.__cause__
    return exc


async def _close_quietly(transport: Transport) -> None:
    with contextlib.suppress(Exception):
        await transport.close()
