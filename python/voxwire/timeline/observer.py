"""``Timeline``: a session's event stream as timed records, the data the page and the report draw.

A timeline is an *observer*: it needs nothing of the session but its events. Feed it every event
the application takes from the session (``async for event in session: timeline.observe(event)``)
and, when the session plays into an output, what the output's playback clock says was heard
(:meth:`Timeline.observe_playback`, called as often as you like; only changes are recorded) —
with an output attached, the session hands out no audio events, and the clock is also what says
an item's audio arrived.
``RealtimeSession(raw_server_events=True)`` adds what server VAD saw (``audio_start_ms`` /
``audio_end_ms`` of the input stream) and the server's acknowledgement of each truncation; without
it the user's speech comes from the user state changes.

Each record is a plain JSON object ``{"t": seconds since the timeline began, "kind": ..., ...}``;
:attr:`Timeline.records` is the whole list, ``on_record`` receives each one as it is made (the
page streams them). The kinds, and what the page draws of them (``web/static/timeline.js``):

=================== ===========================================================================
``speech_started``  server VAD heard the user start (``audio_ms``: its position in the input
                    stream); from raw server events
``speech_stopped``  ... and stop: a turn's latency is measured from here
``response``        a response started (``response_id``)
``audio_first``     the first audio delta of an assistant item (``item_id``, ``content_index``)
``audio_done``      its last one (``received_ms``: all audio received for it)
``heard``           the listener has heard ``heard_ms`` of the item (from the playback clock)
``cut``             the session cut the item at ``audio_end_ms`` (what was heard; ``None``:
                    nothing was attached to count it)
``truncated``       the server accepted the truncation (``conversation.item.truncated``)
``cut_error``       how true the cut is (``InterruptionMetrics``): ``audio_end_ms`` claimed (0:
                    deleted), ``clock_ms`` the playback clock knew heard, ``error_ms`` the claim
                    minus that, ``bound_ms`` how far past the clock the listener may be (one
                    chunk for Twilio, one render quantum for the page; ``None``: unknown)
``transcript``      ``role`` said ``text`` (item ``item_id``)
``tool_start``,     a function tool ran (``call_id``, ``name``, ``arguments`` / ``output``,
``tool_end``        ``error``)
``handoff``         ``from_agent`` -> ``to_agent``
``guardrail``       output guardrails tripped (``guardrails``, ``item_id``); input guardrails too
``agent_state``     the agent's state (``state``: idle, thinking, speaking, ...)
``user_state``      the user's (``speaking`` / ``listening``): the user's speech when server
                    VAD's own records are missing (no raw server events)
``user_text``       the user typed ``text`` (noted by the page)
``error``, ``close`` the session's error and close events
=================== ===========================================================================
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from voxwire._core import ItemPlayback, PlaybackClock
from voxwire.asyncio import events as ev
from voxwire.asyncio.observability.metrics import InterruptionMetrics, Metrics
from voxwire.protocol import server_events as se

__all__ = ["Record", "Timeline"]

Record = dict[str, Any]


@dataclass
class _Item:
    # Received audio, counted from whichever source the application has: audio events (no
    # output attached) or the playback clock's queued samples (an output attached: the session
    # hands out no audio events then, and raw events leave audio deltas out).
    event_bytes: int = 0
    queued_ms: int = 0
    heard_ms: int = 0
    heard_at: float = 0.0

    def received_ms(self, bytes_per_ms: float) -> int:
        return max(round(self.event_bytes / bytes_per_ms), self.queued_ms)


def _nothing(_: Record) -> None:
    return None


class Timeline:
    """Timed records of one session (see the module docstring for the kinds).

    ``clock``: seconds, monotonic (``time.monotonic`` by default); ``t`` counts from the moment
    the timeline was made. ``on_record``: called with each new record (more with
    :meth:`subscribe`). ``bytes_per_ms``: the size of one millisecond of the session's output
    audio (48 for PCM16 at 24 kHz, 8 for G.711), to say how much audio was received.
    ``playback``: the session's output clock (``output.clock``), read at every event (call
    :meth:`observe_playback` for more); ``heard`` records come at most every ``heard_every_s``
    per item, the first at once.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_record: Callable[[Record], None] = _nothing,
        bytes_per_ms: float = 48.0,
        playback: PlaybackClock | None = None,
        heard_every_s: float = 0.1,
    ) -> None:
        self._playback = playback
        self._heard_every_s = heard_every_s
        self._clock = clock
        self._start = clock()
        self._listeners: list[Callable[[Record], None]] = [on_record]
        self._bytes_per_ms = bytes_per_ms
        self.records: list[Record] = []
        self._items: dict[tuple[str, int], _Item] = {}

    @classmethod
    def replay(cls, events: Iterable[tuple[float, ev.SessionEvent]]) -> Timeline:
        """The timeline of events recorded earlier as ``(seconds, event)`` pairs (any clock;
        the first pair is time 0), e.g. kept by an application's own event loop."""
        now = [0.0]
        timeline = cls(clock=lambda: now[0])
        for n, (at, event) in enumerate(events):
            if not isinstance(at, int | float):
                raise ValueError(f"event {n}: expected (seconds, event), got a time of {at!r}")
            if n == 0:
                timeline._start = float(at)
            now[0] = float(at)
            timeline.observe(event)
        return timeline

    def note(self, kind: str, **fields: Any) -> Record:
        """Add a record of ``kind`` now (the application's own marks: ``user_text``, ...)."""
        record: Record = {"t": round(self._clock() - self._start, 4), "kind": kind, **fields}
        self.records.append(record)
        for listener in tuple(self._listeners):
            listener(record)
        return record

    def subscribe(self, listener: Callable[[Record], None]) -> Callable[[], None]:
        """Call ``listener`` with every new record (a page watching); returns the function that
        stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    @property
    def subscribers(self) -> int:
        """Listeners now (``on_record`` included)."""
        return len(self._listeners)

    def to_json(self) -> str:
        """The records as a JSON array (what :func:`voxwire.web.write_report` reads back)."""
        return json.dumps(self.records, separators=(",", ":"))

    # -- the session's events -------------------------------------------------------------------

    def observe(self, event: ev.SessionEvent) -> None:
        """Record what ``event`` means for the timeline (events it does not draw are skipped);
        with a ``playback`` clock, what it says first."""
        if self._playback is not None:
            self.observe_playback(self._playback.items())
        if isinstance(event, ev.AudioEvent):
            self._item(event.item_id, event.content_index).event_bytes += len(event.pcm)
        elif isinstance(event, ev.AudioEndEvent):
            item = self._items.get((event.item_id, event.content_index))
            received = 0 if item is None else item.received_ms(self._bytes_per_ms)
            self.note(
                "audio_done",
                item_id=event.item_id,
                content_index=event.content_index,
                received_ms=received,
            )
        elif isinstance(event, ev.AudioInterruptedEvent):
            self.note(
                "cut",
                item_id=event.item_id,
                content_index=event.content_index,
                audio_end_ms=event.played_ms,
            )
        elif isinstance(event, ev.RawServerEvent):
            self._raw(event.event)
        else:
            self._other(event)

    def _item(self, item_id: str, content_index: int) -> _Item:
        key = (item_id, content_index)
        item = self._items.get(key)
        if item is None:
            item = self._items[key] = _Item()
            self.note("audio_first", item_id=item_id, content_index=content_index)
        return item

    def _raw(self, event: se.ReceivedEvent) -> None:
        if isinstance(event, se.InputAudioBufferSpeechStarted):
            self.note("speech_started", item_id=event.item_id, audio_ms=event.audio_start_ms)
        elif isinstance(event, se.InputAudioBufferSpeechStopped):
            self.note("speech_stopped", item_id=event.item_id, audio_ms=event.audio_end_ms)
        elif isinstance(event, se.ConversationItemTruncated):
            self.note(
                "truncated",
                item_id=event.item_id,
                content_index=event.content_index,
                audio_end_ms=event.audio_end_ms,
            )

    def _other(self, event: ev.SessionEvent) -> None:
        describe = _DESCRIBE.get(type(event))
        for kind, fields in [] if describe is None else describe(event):
            self.note(kind, **fields)

    # -- what was heard ---------------------------------------------------------------------------

    def observe_playback(self, items: Iterable[ItemPlayback], *, heard: bool = True) -> None:
        """What the output's playback clock says of each item (``output.clock.items()``): its
        audio arrived (``audio_first`` for a new one) and, unless ``heard=False``, a ``heard``
        record for each item whose heard count moved."""
        for playback in items:
            if playback.queued_samples == 0:
                continue
            item = self._item(playback.item_id, playback.content_index)
            item.queued_ms = max(item.queued_ms, playback.queued_samples * 1000 // playback.rate_hz)
            if not heard or playback.played_ms <= item.heard_ms:
                continue
            now = self._clock()
            # The first sample heard is recorded at once (a turn's latency ends there), then at
            # most every heard_every_s, and the end of the item.
            finished = playback.played_samples >= playback.queued_samples
            if item.heard_ms and not finished and now - item.heard_at < self._heard_every_s:
                continue
            item.heard_ms, item.heard_at = playback.played_ms, now
            self.note(
                "heard",
                item_id=playback.item_id,
                content_index=playback.content_index,
                heard_ms=playback.played_ms,
            )


def _error_text(error: BaseException | None) -> str | None:
    return None if error is None else f"{type(error).__name__}: {error}"[:500]


_Made = list[tuple[str, dict[str, Any]]]


def _cut_error(metrics: Metrics) -> _Made:
    if not isinstance(metrics, InterruptionMetrics) or metrics.clock_heard_ms is None:
        return []
    fields = {
        "item_id": metrics.item_id,
        "content_index": metrics.content_index,
        "audio_end_ms": metrics.played_ms or 0,
        "clock_ms": round(metrics.clock_heard_ms, 3),
        "error_ms": round(metrics.truncation_error_ms or 0.0, 3),
        "bound_ms": None if metrics.clock_bound_ms is None else round(metrics.clock_bound_ms, 3),
    }
    return [("cut_error", fields)]


_DESCRIBE: dict[type[Any], Callable[[Any], _Made]] = {
    ev.ResponseStartedEvent: lambda e: [("response", {"response_id": e.response_id})],
    ev.AssistantTranscriptDoneEvent: lambda e: [
        ("transcript", {"role": "assistant", "item_id": e.item_id, "text": e.transcript})
    ],
    ev.UserInputTranscribedEvent: lambda e: (
        [("transcript", {"role": "user", "item_id": e.item_id, "text": e.transcript})]
        if e.is_final
        else []
    ),
    ev.ToolStartEvent: lambda e: [
        ("tool_start", {"call_id": e.call_id, "name": e.name, "arguments": e.arguments[:2000]})
    ],
    ev.ToolEndEvent: lambda e: [
        (
            "tool_end",
            {
                "call_id": e.call_id,
                "name": e.name,
                "output": e.output[:2000],
                "error": _error_text(e.error),
            },
        )
    ],
    ev.HandoffEvent: lambda e: [
        ("handoff", {"from_agent": e.from_agent.name, "to_agent": e.to_agent.name})
    ],
    ev.GuardrailTrippedEvent: lambda e: [
        ("guardrail", {"guardrails": list(e.guardrails), "item_id": e.item_id})
    ],
    ev.InputGuardrailTrippedEvent: lambda e: [
        ("guardrail", {"guardrails": list(e.guardrails), "item_id": e.item_id, "input": True})
    ],
    ev.MetricsCollectedEvent: lambda e: _cut_error(e.metrics),
    ev.AgentStateChangedEvent: lambda e: [("agent_state", {"state": e.new_state})],
    ev.UserStateChangedEvent: lambda e: [("user_state", {"state": e.new_state})],
    ev.ErrorEvent: lambda e: [
        ("error", {"message": e.message[:500], "source": e.source, "code": e.code})
    ],
    ev.CloseEvent: lambda e: [("close", {"reason": e.reason, "detail": e.detail[:500]})],
}
