"""DTMF: collect the keys a caller presses (an account number, a menu choice).

On a SIP call the service reports each key as ``input_audio_buffer.dtmf_event_received``
(typed: :class:`voxwire.protocol.InputAudioBufferDtmfEventReceived`). :class:`DigitCollector`
takes those events — as the protocol types them, wrapped in the session's
:class:`~voxwire.asyncio.RawServerEvent` (``RealtimeSession(raw_server_events=True)``), or as raw
mappings — from the application's own event loop through :meth:`DigitCollector.feed`; other
events are ignored, so every session event can be fed. :meth:`DigitCollector.result` waits for
the end: the terminator key (not part of the digits), ``max_digits`` keys, or a timeout — the
whole ``timeout_s`` or ``inter_digit_timeout_s`` of silence after a key.
:func:`collect_digits` does the same over an async iterable of events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from voxwire.asyncio.events import RawServerEvent
from voxwire.exceptions import ConfigurationError
from voxwire.protocol.server_events import InputAudioBufferDtmfEventReceived

__all__ = ["DigitCollector", "Digits", "collect_digits", "dtmf_key"]

KEYS: Final = frozenset("0123456789*#ABCD")
EndReason = Literal["terminator", "max_digits", "timeout"]


@dataclass(frozen=True)
class Digits:
    """What was collected: ``digits`` (without the terminator) and why collection ended."""

    digits: str
    reason: EndReason

    @property
    def complete(self) -> bool:
        return self.reason != "timeout"


def dtmf_key(event: object) -> str | None:
    """The key of a DTMF event in any of its forms (``None``: not a DTMF event, or a key that
    is not one of ``0-9 * # A-D``)."""
    if isinstance(event, RawServerEvent):
        event = event.event
    if isinstance(event, InputAudioBufferDtmfEventReceived):
        key: object = event.event
    elif (
        isinstance(event, Mapping) and event.get("type") == "input_audio_buffer.dtmf_event_received"
    ):
        key = event.get("event")
    elif getattr(event, "type", None) == "dtmf":  # a session-level event: type "dtmf", .key
        key = getattr(event, "key", None)
    else:
        return None
    return key.upper() if isinstance(key, str) and key.upper() in KEYS else None


class DigitCollector:
    """Collects keys until the terminator, ``max_digits`` or a timeout (see the module)."""

    def __init__(
        self,
        *,
        max_digits: int | None = None,
        terminator: str | None = "#",
        timeout_s: float = 15.0,
        inter_digit_timeout_s: float | None = 5.0,
    ) -> None:
        if max_digits is not None and (isinstance(max_digits, bool) or max_digits < 1):
            raise ConfigurationError(f"max_digits={max_digits!r} is invalid: expected >= 1")
        if terminator is not None and terminator not in KEYS:
            raise ConfigurationError(
                f"terminator={terminator!r} is invalid: expected one key of 0-9 * # A-D, or None"
            )
        if max_digits is None and terminator is None:
            raise ConfigurationError("give max_digits, a terminator, or both: else nothing ends")
        if timeout_s <= 0 or (inter_digit_timeout_s is not None and inter_digit_timeout_s <= 0):
            raise ConfigurationError("timeouts must be > 0 seconds")
        self.max_digits, self.terminator = max_digits, terminator
        self.timeout_s, self.inter_digit_timeout_s = timeout_s, inter_digit_timeout_s
        self._digits: list[str] = []
        self._reason: EndReason | None = None
        self._changed = asyncio.Event()

    @property
    def digits(self) -> str:
        return "".join(self._digits)

    @property
    def done(self) -> bool:
        return self._reason is not None

    def feed(self, event: Any) -> bool:
        """Take one event (any event: non-DTMF ones are ignored); ``True`` once collection is
        over. Keys after the end are ignored."""
        key = dtmf_key(event)
        if key is None or self._reason is not None:
            return self._reason is not None
        if key == self.terminator:
            self._reason = "terminator"
        else:
            self._digits.append(key)
            if self.max_digits is not None and len(self._digits) >= self.max_digits:
                self._reason = "max_digits"
        self._changed.set()
        return self._reason is not None

    async def result(self) -> Digits:
        """Wait for the end (terminator, ``max_digits`` or a timeout) and return the digits."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        while self._reason is None:
            wait_s = deadline - loop.time()
            if self._digits and self.inter_digit_timeout_s is not None:
                wait_s = min(wait_s, self.inter_digit_timeout_s)
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), max(0.0, wait_s))
            except asyncio.TimeoutError:
                self._reason = "timeout"
        return Digits(self.digits, self._reason)


async def collect_digits(
    events: AsyncIterable[Any],
    *,
    max_digits: int | None = None,
    terminator: str | None = "#",
    timeout_s: float = 15.0,
    inter_digit_timeout_s: float | None = 5.0,
) -> Digits:
    """Read ``events`` (e.g. a session's, with ``raw_server_events=True``) until the digits are
    collected or a timeout passes; the events read are consumed."""
    collector = DigitCollector(
        max_digits=max_digits,
        terminator=terminator,
        timeout_s=timeout_s,
        inter_digit_timeout_s=inter_digit_timeout_s,
    )

    async def read() -> None:
        async for event in events:
            if collector.feed(event):
                return

    reader = asyncio.ensure_future(read())
    try:
        return await collector.result()
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
