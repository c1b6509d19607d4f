"""The bridge's side of one Twilio Media Stream, sans I/O: text messages in, events out, the
messages to send queued in order.

Rules (from Twilio's "Media Streams - WebSocket Messages" page; see :mod:`.messages`):

* ``connected`` comes first, then one ``start``; ``media``, ``dtmf`` and ``mark`` follow;
  ``stop`` ends the stream. Anything out of that order is reported as a :class:`StreamError`
  and ignored; nothing received ever raises.
* The bridge's audio goes out as ``media`` messages, each followed by a ``mark`` whose name this
  core chooses and remembers with the ring position the audio ends at. Twilio sends a mark back
  once the audio before it has played, in order; the core turns that into
  :class:`Played` with the position, which is what the caller has heard.
* A ``clear`` drops the audio Twilio buffered, and Twilio then sends back *every* pending mark —
  which does not mean that audio was played. Marks sent before a clear are therefore forgotten
  as played: their echoes are swallowed (counted in :attr:`TwilioStream.cleared_marks_returned`).
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass
from typing import Final, TypeAlias

from voxwire.exceptions import InvalidState
from voxwire.telephony.twilio import messages as m

__all__ = ["Played", "StreamState", "TwilioStream", "TwilioStreamEvent"]


@dataclass(frozen=True, slots=True)
class Played:
    """Twilio played the bridge's audio up to ring ``position`` (a mark of ours came back)."""

    mark: str
    position: int


TwilioStreamEvent: TypeAlias = (
    m.Connected
    | m.StreamStarted
    | m.CallerAudio
    | m.Dtmf
    | Played
    | m.StreamStopped
    | m.StreamError
)


class StreamState(enum.Enum):
    AWAITING_START = "awaiting_start"
    STREAMING = "streaming"
    STOPPED = "stopped"


MAX_PENDING_MARKS: Final = 1 << 16
"""Marks sent and not yet returned (at 40 ms a chunk: 43 minutes of audio queued at Twilio)."""


class TwilioStream:
    """One Twilio Media Stream as the bridge (the websocket server) sees it."""

    def __init__(self, *, mark_prefix: str = "vw") -> None:
        self.state = StreamState.AWAITING_START
        self.started: m.StreamStarted | None = None
        self._sid_json = ""
        self._prefix = mark_prefix
        self._marks_sent = 0
        self._pending: deque[tuple[str, int]] = deque()  # (mark name, ring position), in order
        self._pending_names: set[str] = set()
        self._cleared: set[str] = set()
        self._events: list[TwilioStreamEvent] = []
        self._out: list[str] = []
        self.cleared_marks_returned = 0
        """Marks Twilio sent back after a clear dropped their audio (not played)."""
        self.clears_sent = 0

    # -- received ---------------------------------------------------------------------------

    @property
    def stream_sid(self) -> str | None:
        return None if self.started is None else self.started.stream_sid

    @property
    def pending_marks(self) -> int:
        """Marks sent whose audio Twilio has not played yet (nor dropped)."""
        return len(self._pending)

    def receive_text(self, text: str | bytes) -> None:
        """One message from Twilio. Never raises."""
        event, sid = m.decode(text)
        if isinstance(event, m.StreamError):
            self._events.append(event)
            return
        if self.state is StreamState.STOPPED:
            self._events.append(m.StreamError(f"{type(event).__name__} after stop ignored"))
            return
        if isinstance(event, m.Connected):
            self._events.append(event)
        elif isinstance(event, m.StreamStarted):
            self._start(event)
        elif self.state is StreamState.AWAITING_START:
            self._events.append(m.StreamError(f"{type(event).__name__} before start ignored"))
        elif sid is not None and sid != self.stream_sid:
            self._events.append(m.StreamError(f"a message of another stream ({sid[:40]!r})"))
        elif isinstance(event, m.MarkEcho):
            self._mark_returned(event.name)
        else:
            if isinstance(event, m.StreamStopped):
                self.state = StreamState.STOPPED
            self._events.append(event)

    def _start(self, event: m.StreamStarted) -> None:
        if self.state is not StreamState.AWAITING_START:
            self._events.append(m.StreamError("a second start ignored"))
            return
        if (event.encoding, event.sample_rate_hz, event.channels) != ("audio/x-mulaw", 8000, 1):
            self._events.append(
                m.StreamError(
                    f"media format {event.encoding} {event.sample_rate_hz} Hz x"
                    f"{event.channels}: only audio/x-mulaw 8000 Hz mono is bridged"
                )
            )
            return
        self.started = event
        self._sid_json = m.stream_sid_json(event.stream_sid)
        self.state = StreamState.STREAMING
        self._events.append(event)

    def _mark_returned(self, name: str) -> None:
        if name in self._cleared:
            self._cleared.discard(name)
            self.cleared_marks_returned += 1
            return
        if name not in self._pending_names:
            self._events.append(m.StreamError(f"a mark the bridge did not send: {name[:40]!r}"))
            return
        # Twilio plays in order: a mark coming back means every earlier one has played too.
        while self._pending:
            pending, position = self._pending.popleft()
            self._pending_names.discard(pending)
            if pending == name:
                self._events.append(Played(name, position))
                return

    def events_received(self) -> list[TwilioStreamEvent]:
        """The events decoded since the last call, in order."""
        events, self._events = self._events, []
        return events

    # -- to send ----------------------------------------------------------------------------

    def send_audio(self, ulaw: bytes, position: int) -> None:
        """Queue ``ulaw`` (µ-law 8 kHz) and a mark for ``position``: the ring position right
        after this audio, reported back as :class:`Played` once Twilio has played it."""
        self._require_streaming("send audio")
        if len(self._pending) >= MAX_PENDING_MARKS:
            raise InvalidState(
                f"{MAX_PENDING_MARKS} marks are waiting for Twilio: send larger chunks, or check "
                "that Twilio plays (marks come back)"
            )
        self._marks_sent += 1
        name = f"{self._prefix}{self._marks_sent}"
        self._out.append(m.encode_media(self._sid_json, ulaw))
        self._out.append(m.encode_mark(self._sid_json, name))
        self._pending.append((name, position))
        self._pending_names.add(name)

    def send_clear(self) -> bool:
        """Queue a ``clear`` (Twilio drops what it buffered); the marks pending now will come
        back without having played and are swallowed. ``False`` (nothing queued) once the
        stream is not streaming."""
        if self.state is not StreamState.STREAMING:
            return False
        self._cleared |= self._pending_names
        self._pending_names = set()
        self._pending.clear()
        self._out.append(m.encode_clear(self._sid_json))
        self.clears_sent += 1
        return True

    def data_to_send(self) -> list[str]:
        """The messages queued since the last call, in order."""
        out, self._out = self._out, []
        return out

    def _require_streaming(self, what: str) -> None:
        if self.state is not StreamState.STREAMING:
            raise InvalidState(f"cannot {what}: the stream is {self.state.value}")
