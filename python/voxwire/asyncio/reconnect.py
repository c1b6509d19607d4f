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

What was in flight is settled by the session (docs/session.md, "Reconnection") — item deletes
and truncates the lost server never acknowledged are taken as done before the restoration is
planned, so a deleted item is not recreated. Once the new connection is swapped in, the session
sends the application's session updates again (:class:`SessionUpdateLog`: the resumption sent
the agent's configuration only), then what the lost server never acknowledged — item creates
(:func:`items_to_resend`), then ``response.create`` requests. The protocol core
holds per-connection state (the gate, pending requests, the server's session), so every
connection gets a fresh :class:`~voxwire.protocol.RealtimeProtocol` (sharing the session's id
factory, so ids never repeat); the conversation is carried over by recreating it.

Ownership: :meth:`Reconnector.run` runs in the session's receive-loop task (the loop pumps a
connection, reconnects, pumps the next). ``close()`` cancels that task, which aborts a backoff
sleep, a handshake or a restoration at once; a connection opened by an aborted attempt is closed
before the cancellation propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from voxwire.asyncio import events as ev
from voxwire.asyncio.errors import ConnectionFailed, SessionClosed
from voxwire.asyncio.transport import Transport, TransportClosed
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import server_events as se
from voxwire.protocol.client_events import ConversationItemCreate
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.conversation import ROOT, ConversationState
from voxwire.protocol.items import (
    ContentPart,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputAudio,
    InputImage,
    InputText,
    Item,
    MessageItem,
    OutputAudio,
    OutputText,
    check_item_for_create,
)
from voxwire.protocol.protocol import RealtimeProtocol

__all__ = [
    "ReconnectHost",
    "ReconnectPolicy",
    "Reconnector",
    "Restoration",
    "Resumed",
    "SessionReconnecting",
    "SessionUpdateLog",
    "items_to_resend",
    "restoration_items",
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


# --- what to restore (pure) -----------------------------------------------------------------------


@dataclass(frozen=True)
class Restoration:
    """The items to recreate on the new server session, in conversation order, and the ids of
    the items of the lost conversation that cannot be (``skipped``)."""

    items: tuple[Item, ...] = ()
    skipped: tuple[str, ...] = ()


def restoration_items(
    conversation: ConversationState, lost_responses: Collection[str] = ()
) -> Restoration:
    """What of ``conversation`` can be recreated by ``conversation.item.create``.

    * messages keep their text and images; audio cannot be handed back, so user audio becomes
      ``input_text`` and assistant audio ``output_text`` holding the transcript (a part with no
      transcript — transcription off, or truncated audio, whose transcript the server drops — is
      left out, and a message left with no part is skipped);
    * function calls that are complete, and function call outputs, as they are;
    * items of ``lost_responses`` (in progress when the connection was lost) only if they were
      complete; MCP items never (the server makes them).
    """
    items: list[Item] = []
    skipped: list[str] = []
    for item in conversation.items():
        if item.id is None:
            continue
        restored = _restorable(conversation, item, lost_responses)
        if restored is None:
            skipped.append(item.id)
        else:
            items.append(restored)
    return Restoration(items=tuple(items), skipped=tuple(skipped))


def _restorable(
    conversation: ConversationState, item: Item, lost_responses: Collection[str]
) -> Item | None:
    assert item.id is not None
    status = getattr(item, "status", None)
    if conversation.response_of(item.id) in lost_responses and status != "completed":
        return None
    if isinstance(item, MessageItem):
        content = [
            part
            for index, original in enumerate(item.content)
            if (part := _restorable_part(conversation, item.id, index, original)) is not None
        ]
        if not content:
            return None
        restored: Item = MessageItem(id=item.id, role=item.role, content=content)
    elif isinstance(item, FunctionCallItem):
        if status in ("in_progress", "incomplete"):
            return None
        restored = FunctionCallItem(
            id=item.id, name=item.name, arguments=item.arguments, call_id=item.call_id
        )
    elif isinstance(item, FunctionCallOutputItem):
        restored = FunctionCallOutputItem(id=item.id, call_id=item.call_id, output=item.output)
    else:
        return None
    try:
        check_item_for_create(restored)
    except ConfigurationError:
        return None
    return restored


def _restorable_part(
    conversation: ConversationState, item_id: str, index: int, part: ContentPart
) -> ContentPart | None:
    if isinstance(part, InputText | InputImage):
        return part
    transcript = conversation.transcript(item_id, index)
    if isinstance(part, InputAudio):
        text = transcript if transcript is not None else part.transcript
        return InputText(text=text) if text else None
    if isinstance(part, OutputAudio):
        # A truncated part's transcript is gone on the server too (the conversation state
        # drops it): what the user heard of it is unknown, so nothing of it is restored.
        if conversation.truncated_at_ms(item_id, index) is not None:
            return None
        text = transcript if transcript is not None else part.transcript
        return OutputText(text=text) if text else None
    if isinstance(part, OutputText):
        text = part.text if part.text is not None else transcript
        return OutputText(text=text) if text else None
    return None  # pragma: no cover - every content part is handled above


def items_to_resend(
    unacknowledged: Sequence[ConversationItemCreate],
    conversation: ConversationState,
    already_sent: Collection[str] = (),
) -> tuple[ConversationItemCreate, ...]:
    """Which of the lost connection's ``unacknowledged`` item creates (oldest first:
    :attr:`RealtimeProtocol.unacknowledged_item_creates`) to send again on the new one, whose
    restored ``conversation`` is given, and where.

    * each item once, in the original order; an item whose id is in ``already_sent`` (a tool
      output the tool runner sent again itself) or already in ``conversation`` is left out;
    * ``previous_item_id`` is kept when it still means something on the new server: ``None``
      or ``"root"``, a restored item, or an item sent again before this one; a predecessor the
      new server does not have (an item that could not be restored) would get the create
      rejected, so the item goes at the end instead (``None``).
    """
    sent = set(already_sent)
    resend: list[ConversationItemCreate] = []
    for create in unacknowledged:
        item_id = create.item.id
        if item_id is None or item_id in sent or item_id in conversation:
            continue
        previous = create.previous_item_id
        if previous not in (None, ROOT) and previous not in conversation and previous not in sent:
            previous = None
        resend.append(ConversationItemCreate(item=create.item, previous_item_id=previous))
        sent.add(item_id)
    return tuple(resend)


# --- the application's session updates -----------------------------------------------------------


@dataclass
class _LoggedUpdate:
    number: int  # counts every update logged, from 0: its place among the agent changes
    event_id: str  # of its latest sending (a replay sends it under a new event_id)
    config: SessionConfig


class SessionUpdateLog:
    """The application's ``session.update`` changes, kept to be made again on a new server
    session (the session's ``update_session()`` and ``send_raw`` session updates; not the
    agents' updates, which the session knows how to make itself).

    ``session.update`` is a patch the server merges into the session, so the new server ends up
    as the lost one was when it gets the same patches in the same order. The agent's
    configuration goes first on a new server (the resumption's own update), so the replay
    (:meth:`replay`) is: the updates sent before the last agent change, then — only if there
    were any — the current agent's update again (it had overridden them on the lost server),
    then the updates sent after it.

    * An update the server rejected (an ``error`` naming its ``event_id``: :meth:`rejected`)
      changed nothing and is dropped: it is not replayed.
    * An update not answered when the connection was lost is replayed (the lost server may have
      applied it; applying a patch again is harmless, and the order is kept).
    * Memory: every accepted update is kept, one :class:`~voxwire.protocol.SessionConfig` per
      call, for the session's life. They are small (a few hundred bytes, more with long
      instructions or many tools) and an application sends few. They are not merged: the
      server's merge rules for nested objects (``audio``, turn detection changing type) are the
      server's, not the protocol's, and a merge that differed would configure the new server
      differently.
    """

    def __init__(self) -> None:
        self._updates: list[_LoggedUpdate] = []
        self._count = 0
        self._agent_mark = 0  # updates numbered below it were sent before the last agent change
        self._agent_config: SessionConfig | None = None

    def __len__(self) -> int:
        return len(self._updates)

    def sent(self, event_id: str, config: SessionConfig) -> None:
        """The application sent ``config`` as the ``session.update`` ``event_id``."""
        self._updates.append(_LoggedUpdate(self._count, event_id, config))
        self._count += 1

    def rejected(self, event_id: str | None) -> None:
        """The server rejected the update ``event_id`` (other event ids are ignored)."""
        self._updates = [u for u in self._updates if u.event_id != event_id]

    def mark(self) -> int:
        """Where an agent change being sent now falls among the updates (pass it to
        :meth:`agent_applied` once the server accepted the change)."""
        return self._count

    def agent_applied(self, mark: int, config: SessionConfig) -> None:
        """The server accepted the agent change sent as ``config`` at ``mark``: updates sent
        before it were overridden by it where they overlap."""
        self._agent_mark = mark
        self._agent_config = config

    def replay(self, send: Callable[[SessionConfig], str]) -> int:
        """Send the updates again, in the order described above (``send`` queues one and
        returns its event_id); how many of the application's updates went."""
        before = [u for u in self._updates if u.number < self._agent_mark]
        after = [u for u in self._updates if u.number >= self._agent_mark]
        for update in before:
            update.event_id = send(update.config)
        if before:
            assert self._agent_config is not None  # a mark above 0 comes with its agent
            send(self._agent_config)
        for update in after:
            update.event_id = send(update.config)
        return len(before) + len(after)


# --- the attempts ---------------------------------------------------------------------------------


class ReconnectHost(Protocol):
    """What the reconnector needs of the session."""

    def emit(self, event: ev.SessionEvent) -> None:
        """Queue a session event for the application."""

    async def open_connection(self) -> tuple[Transport, str]:
        """Open a connection (API key resolved again, the primary URL then the fallbacks);
        the transport and its URL. Raises :class:`ConnectionFailed`."""

    def new_protocol(self) -> RealtimeProtocol:
        """A protocol core for a new connection."""

    def resume_config(self) -> SessionConfig:
        """The ``session.update`` to send on a new server session."""

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
    """Runs the attempts of one session (see the module docstring for the owner)."""

    def __init__(self, policy: ReconnectPolicy, host: ReconnectHost) -> None:
        self.policy = policy
        self._host = host
        self._expired = False

    def observe(self, event: se.ReceivedEvent) -> None:
        """Every event received: a ``session_expired`` error means the server ended the session
        on purpose, and a lost connection after it is not reconnected."""
        if isinstance(event, se.ErrorEvent) and event.error.code == "session_expired":
            self._expired = True

    def should_reconnect(self, close: ev.CloseEvent) -> bool:
        """Only an abnormal end (no close frame, or a code other than 1000/1001), and never
        after the server expired the session."""
        return close.reason == "connection_lost" and not self._expired

    async def run(self, lost: ev.CloseEvent, restoration: Restoration) -> Resumed | ev.CloseEvent:
        """Try the policy's attempts; the resumed connection, or the ``close`` event to end
        the session with (``connection_lost``, carrying the last attempt's error)."""
        error: BaseException | None = lost.error
        policy = self.policy
        for attempt in range(1, policy.attempts + 1):
            delay_s = policy.delay_s(attempt)
            self._host.emit(ev.ReconnectingEvent(attempt=attempt, delay_s=delay_s, error=error))
            if delay_s > 0:
                await asyncio.sleep(delay_s)
            try:
                transport, url = await self._host.open_connection()
            except Exception as exc:  # refused, timed out, the key function failed: try again
                log.info("reconnection attempt %d failed: %s", attempt, exc)
                error = exc
                continue
            try:
                resumed = await asyncio.wait_for(
                    self._restore(transport, url, restoration), self._host.restore_timeout_s
                )
            except (TransportClosed, SessionClosed, _RestoreFailed, asyncio.TimeoutError) as exc:
                await _close_quietly(transport)
                error = _attempt_error(exc, url, self._host.restore_timeout_s)
                log.info("reconnection attempt %d failed: %s", attempt, error)
                continue
            except BaseException:
                await _close_quietly(transport)
                raise
            self._expired = False
            return resumed
        return ev.CloseEvent(
            reason="connection_lost",
            error=error,
            code=error.code if isinstance(error, TransportClosed) else None,
            detail=f"gave up reconnecting after {policy.attempts} attempt(s): {error}",
        )

    async def _restore(self, transport: Transport, url: str, restoration: Restoration) -> Resumed:
        """The resumption handshake on a new connection (module docstring, steps 1-4)."""
        protocol = self._host.new_protocol()
        await _receive_until(transport, protocol, lambda e: isinstance(e, se.SessionCreated))
        update_id = protocol.send_session_update(self._host.resume_config()).event_id
        waiting: dict[str, str] = {}  # create event_id -> item id
        previous = ROOT
        items = restoration.items if self.policy.restore_history else ()
        for item in items:
            create = protocol.send_item_create(item, previous_item_id=previous)
            assert create.event_id is not None
            assert create.item.id is not None
            waiting[create.event_id] = create.item.id
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
                acked = [k for k, item_id in waiting.items() if item_id == event.item.id]
                for event_id in acked:
                    del waiting[event_id]
                restored += len(acked)
            elif isinstance(event, se.ErrorEvent):
                failed = event.error
                if failed.event_id is not None and failed.event_id == update_id:
                    raise _RestoreFailed(
                        f"{url} rejected the session configuration on resumption: {failed.message}"
                    )
                waiting.pop(failed.event_id or "", None)
                errors.append(
                    ev.ErrorEvent(
                        message=f"restoring the conversation: {failed.message}",
                        source="server",
                        code=failed.code,
                        param=failed.param,
                        event_id=failed.event_id,
                    )
                )
            return updated and not waiting

        await _receive_until(transport, protocol, acknowledged)
        return Resumed(
            transport=transport,
            protocol=protocol,
            url=url,
            items_restored=restored,
            items_skipped=len(restoration.skipped) if self.policy.restore_history else 0,
            errors=errors,
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
