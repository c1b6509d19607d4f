"""Fault injection: a server that misbehaves on purpose, so clients can be tested against it.

A fault is a small frozen dataclass. A list of them is a schedule, armed afresh on every
connection (``RealtimeServer(faults=[...])``) or on one live connection
(``await server.connections[-1].inject(...)``), counted from the moment it is armed.

When does a fault fire? ``after`` and ``of_type`` say it:

* neither: at once (a server-wide fault: before ``session.created``);
* ``after=N``: right after the N-th event sent;
* ``of_type="response.output_text.delta"``: right after the first event of that type
  (``after=N`` with it: the N-th of that type) — e.g. mid-response.

The faults:

========================  =========================================================================
:class:`Drop`             the connection ends abnormally: with ``code=None`` (default) the TCP
                          connection is aborted with no close frame (the client sees 1006); with
                          ``code=1011`` (or any code) a close frame with that code and ``reason``
:class:`SendMalformed`    a text frame that is not JSON (a truncated event by default)
:class:`SendUnknown`      a well-formed event of a type no client knows
:class:`Delay`            hold events of a type (or all) for ``ms`` before sending; later events
                          wait behind them, as on a slow network (order is kept)
:class:`RejectResponse`   the next client ``response.create`` (``count`` of them) gets an
                          ``error`` naming its ``event_id`` instead of a response — by default
                          the service's ``server_error`` ("The server had an error…")
:class:`Expire`           ``error`` ``session_expired``, then a clean close (1000), as when the
                          session's maximum duration is reached
========================  =========================================================================

:func:`faults_from_data` reads a schedule from JSON-like data (``voxwire serve --faults FILE``)::

    [{"fault": "drop", "of_type": "response.output_audio.delta", "code": 1011},
     {"fault": "reject_response"},
     {"fault": "delay", "ms": 300, "of_type": "response.done"}]
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosedError

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import ServerEvent
from voxwire.server.errors import ServerError
from voxwire.server.wire import encode_server_event

__all__ = [
    "Delay",
    "Drop",
    "Expire",
    "Fault",
    "FaultInjector",
    "RejectResponse",
    "SendMalformed",
    "SendUnknown",
    "faults_from_data",
]

#: The service's answer when it fails internally (public issue threads quote it).
SERVER_ERROR_MESSAGE: Final = (
    "The server had an error while processing your request. Sorry about that! You can retry "
    "your request, or contact us through our help center at help.openai.com if the error "
    "persists. (Please include the session ID {session_id} in your message.)"
)


def _check_trigger(fault: object, after: int | None, of_type: str | None) -> None:
    name = type(fault).__name__
    if after is not None and (not isinstance(after, int) or after < 0):
        raise ConfigurationError(f"{name}: after={after!r} is invalid: expected an integer >= 0")
    if of_type is not None and (not isinstance(of_type, str) or not of_type):
        raise ConfigurationError(f"{name}: of_type={of_type!r} is invalid: expected an event type")
    if of_type is not None and after == 0:
        raise ConfigurationError(
            f"{name}: after=0 with of_type fires never; use after=1 for the first "
            f"{of_type!r} or leave of_type out to fire at once"
        )


@dataclass(frozen=True)
class Drop:
    """End the connection abnormally. ``code=None``: abort the TCP connection, no close frame
    (a network failure; clients see 1006). A code: send a close frame with it (1011: the
    service's "internal error")."""

    after: int | None = None
    of_type: str | None = None
    code: int | None = None
    reason: str = "voxwire fault injection: connection dropped"

    def __post_init__(self) -> None:
        _check_trigger(self, self.after, self.of_type)
        if self.code is not None and not (
            self.code in (1001, 1008, 1011, 1012, 1013, 1014) or 3000 <= self.code < 5000
        ):
            raise ConfigurationError(
                f"Drop: code={self.code!r} cannot be sent in a close frame by a server: use "
                "1011 (internal error), 1001, 1008, 1012-1014 or 3000-4999; None aborts the "
                "connection with no close frame"
            )


@dataclass(frozen=True)
class SendMalformed:
    """Send a frame that is not valid JSON."""

    after: int | None = None
    of_type: str | None = None
    frame: str = '{"type": "response.output_text.delta", "event_id": "event_broken", "delta": "'

    def __post_init__(self) -> None:
        _check_trigger(self, self.after, self.of_type)


@dataclass(frozen=True)
class SendUnknown:
    """Send a well-formed event of a type clients do not know (a newer server's event)."""

    after: int | None = None
    of_type: str | None = None
    unknown_type: str = "response.voxwire_unknown_event"

    def __post_init__(self) -> None:
        _check_trigger(self, self.after, self.of_type)


@dataclass(frozen=True)
class Delay:
    """Hold each event of ``of_type`` (every event if ``None``) for ``ms`` before sending it;
    ``count`` events at most (``None``: every one). Events after it wait behind it."""

    ms: float
    of_type: str | None = None
    count: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.ms, int | float) or self.ms < 0:
            raise ConfigurationError(f"Delay: ms={self.ms!r} is invalid: expected a number >= 0")
        if self.count is not None and (not isinstance(self.count, int) or self.count < 1):
            raise ConfigurationError(
                f"Delay: count={self.count!r} is invalid: expected >= 1 or None (every event)"
            )
        _check_trigger(self, None, self.of_type)


@dataclass(frozen=True)
class RejectResponse:
    """Answer the next ``count`` client ``response.create`` events with an ``error`` (naming the
    client's ``event_id``) instead of a response. ``message`` may use ``{session_id}``."""

    count: int = 1
    error_type: str = "server_error"
    code: str | None = None
    message: str = SERVER_ERROR_MESSAGE

    def __post_init__(self) -> None:
        if not isinstance(self.count, int) or self.count < 1:
            raise ConfigurationError(f"RejectResponse: count={self.count!r} must be >= 1")


@dataclass(frozen=True)
class Expire:
    """Expire the session: ``error`` ``session_expired``, then close (1000)."""

    after: int | None = None
    of_type: str | None = None

    def __post_init__(self) -> None:
        _check_trigger(self, self.after, self.of_type)


Fault = Drop | SendMalformed | SendUnknown | Delay | RejectResponse | Expire
Triggered = Drop | SendMalformed | SendUnknown | Expire

_KINDS: Final[Mapping[str, type[Fault]]] = {
    "drop": Drop,
    "malformed": SendMalformed,
    "unknown_event": SendUnknown,
    "delay": Delay,
    "reject_response": RejectResponse,
    "expire": Expire,
}


def faults_from_data(data: object, *, where: str = "faults") -> tuple[Fault, ...]:
    """A schedule from a list of objects with a ``fault`` kind and that fault's fields."""
    if not isinstance(data, list):
        raise ConfigurationError(f"{where} must be a list of objects like {{'fault': 'drop'}}")
    faults: list[Fault] = []
    for index, raw in enumerate(data):
        if not isinstance(raw, dict) or raw.get("fault") not in _KINDS:
            raise ConfigurationError(
                f"{where}[{index}] needs 'fault', one of: {', '.join(sorted(_KINDS))}"
            )
        kind = _KINDS[raw["fault"]]
        options = {key: value for key, value in raw.items() if key != "fault"}
        known = {f.name for f in dataclasses.fields(kind)}
        if unknown := set(options) - known:
            raise ConfigurationError(
                f"{where}[{index}] ({raw['fault']}) has unknown keys {sorted(unknown)}: "
                f"expected {', '.join(sorted(known))}"
            )
        try:
            faults.append(kind(**options))
        except TypeError as exc:  # a required field missing (Delay's ms)
            raise ConfigurationError(f"{where}[{index}] ({raw['fault']}): {exc}") from None
    return tuple(faults)


def faults_from_file(path: str | Path) -> tuple[Fault, ...]:
    """A schedule from a JSON file (see :func:`faults_from_data`)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"faults file {path} is not valid JSON: {exc}") from None
    return faults_from_data(data, where=f"faults file {path}")


@dataclass
class _Armed:
    fault: Triggered
    remaining: int  # matching events still to send before it fires


@dataclass
class _Delaying:
    fault: Delay
    remaining: int | None


class FaultInjector:
    """The faults armed on one connection, and the sending path they act on.

    Every event of the connection goes through :meth:`send` under one lock once anything was
    armed, so delays keep the order of events and a drop stops every sender.
    """

    def __init__(
        self,
        ws: ServerConnection,
        expired_event: Callable[[], ServerEvent],
        session_id: Callable[[], str],
    ) -> None:
        self._ws = ws
        self._expired_event = expired_event
        self._session_id = session_id
        self._armed: list[_Armed] = []
        self._delays: list[_Delaying] = []
        self._rejections: list[tuple[RejectResponse, int]] = []
        self._lock = asyncio.Lock()
        self._dropped = False

    @property
    def active(self) -> bool:
        """Something was armed (from then on every event goes through :meth:`send`)."""
        return bool(self._armed or self._delays or self._rejections or self._dropped)

    async def arm(self, faults: Sequence[Fault]) -> None:
        """Arm ``faults``; those with no trigger fire now."""
        now: list[Triggered] = []
        for fault in faults:
            if isinstance(fault, Delay):
                self._delays.append(_Delaying(fault, fault.count))
            elif isinstance(fault, RejectResponse):
                self._rejections.append((fault, fault.count))
            elif fault.after is None and fault.of_type is None:
                now.append(fault)
            else:
                self._armed.append(_Armed(fault, fault.after or 1))
        if now:
            async with self._lock:
                for fault in now:
                    await self._fire(fault)

    def take_rejection(self) -> ServerError | None:
        """The error for a client ``response.create`` if a :class:`RejectResponse` is armed."""
        if not self._rejections:
            return None
        fault, left = self._rejections[0]
        if left <= 1:
            self._rejections.pop(0)
        else:
            self._rejections[0] = (fault, left - 1)
        message = fault.message.replace("{session_id}", self._session_id())
        return ServerError(fault.code, message, error_type=fault.error_type)

    async def send(self, events: Sequence[ServerEvent]) -> None:
        async with self._lock:
            for event in events:
                if self._dropped:
                    raise ConnectionClosedError(None, None)
                await self._hold(event.type)
                await self._ws.send(encode_server_event(event))
                for fault in self._due(event.type):
                    await self._fire(fault)

    async def _hold(self, event_type: str) -> None:
        for delaying in self._delays:
            of_type = delaying.fault.of_type
            if of_type is not None and of_type != event_type:
                continue
            if delaying.remaining is not None:
                delaying.remaining -= 1
            await asyncio.sleep(delaying.fault.ms / 1000)
        self._delays = [d for d in self._delays if d.remaining is None or d.remaining > 0]

    def _due(self, event_type: str) -> list[Triggered]:
        due: list[Triggered] = []
        for armed in self._armed:
            if armed.fault.of_type is None or armed.fault.of_type == event_type:
                armed.remaining -= 1
                if armed.remaining == 0:
                    due.append(armed.fault)
        self._armed = [armed for armed in self._armed if armed.remaining > 0]
        return due

    async def _fire(self, fault: Triggered) -> None:
        if isinstance(fault, Drop):
            self._dropped = True
            if fault.code is None:
                # No close frame: the peer sees the TCP connection end (1006).
                self._ws.transport.abort()
            else:
                await self._ws.close(fault.code, fault.reason)
            raise ConnectionClosedError(None, None)
        if isinstance(fault, SendMalformed):
            await self._ws.send(fault.frame)
        elif isinstance(fault, SendUnknown):
            frame = {"type": fault.unknown_type, "event_id": "event_voxwire_fault_injected"}
            await self._ws.send(json.dumps(frame))
        else:  # Expire
            self._dropped = True
            await self._ws.send(encode_server_event(self._expired_event()))
            await self._ws.close(1000, "session expired")
            raise ConnectionClosedError(None, None)
