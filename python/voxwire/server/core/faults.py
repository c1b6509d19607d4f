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

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from voxwire.exceptions import ConfigurationError

__all__ = [
    "SERVER_ERROR_MESSAGE",
    "Delay",
    "Drop",
    "Expire",
    "Fault",
    "RejectResponse",
    "SendMalformed",
    "SendUnknown",
    "Triggered",
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
