"""Session events in, metric updates out: :class:`MetricsExport` and its per-session observer.

One :class:`MetricsExport` per process holds the backends (:class:`Sink`: OpenTelemetry,
Prometheus, or both); each session gets an observer (:meth:`MetricsExport.session`) that is
fed the session's events (``observe(event)`` in the application's ``async for`` loop) and turns
them into the instruments of :mod:`voxwire.export.instruments`. The observer keeps only what a
difference needs (when a tool call started, the audio sent so far), never an event.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import voxwire.asyncio.events as ev
from voxwire.asyncio.events.guardrail import (
    InputGuardrailTrippedEvent,
    ToolGuardrailTrippedEvent,
)
from voxwire.asyncio.live.events import LiveUsageEvent
from voxwire.asyncio.observability.records import (
    InterruptionMetrics,
    ResponseMetrics,
    TokenUsage,
)
from voxwire.exceptions import LeaseLost
from voxwire.protocol import server_events as se

__all__ = ["MetricsExport", "SessionObserver", "Sink"]

Labels = Mapping[str, str]


class Sink(Protocol):
    """A metrics backend: ``add`` to a counter (or an up-down counter), ``record`` a value in a
    histogram — by the instrument's name (voxwire.export.instruments)."""

    def add(self, name: str, value: float, labels: Labels) -> None: ...

    def record(self, name: str, value: float, labels: Labels) -> None: ...


class MetricsExport:
    """Where every session's metrics go (``sinks``); ``clock``: monotonic seconds, for tool
    latency."""

    def __init__(
        self, sinks: Sequence[Sink], *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._sinks = tuple(sinks)
        self._clock = clock

    def session(self, kind: str = "realtime") -> SessionObserver:
        """A new session's observer (``kind``: ``realtime`` or ``live``); counts it open."""
        return SessionObserver(self, kind)

    def add(self, name: str, value: float, labels: Labels | None = None) -> None:
        for sink in self._sinks:
            sink.add(name, value, labels or {})

    def record(self, name: str, value: float | None, labels: Labels | None = None) -> None:
        if value is not None:
            for sink in self._sinks:
                sink.record(name, value, labels or {})

    def now(self) -> float:
        return self._clock()


class SessionObserver:
    """One session's events into the export (see the module docstring)."""

    def __init__(self, export: MetricsExport, kind: str) -> None:
        self._export = export
        self._kind = {"kind": kind}
        self._tool_started: dict[str, float] = {}
        self._audio_in_s = 0.0
        self._live_s = 0.0
        self._live_cost = 0.0
        self._ended = False
        export.add("voxwire_sessions_started", 1, self._kind)
        export.add("voxwire_sessions_active", 1, self._kind)

    def observe(self, event: Any) -> None:
        """Account for one event of the session (any other type is ignored)."""
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def end(self, reason: str) -> None:
        """The session ended (``reason``: one of a closed set); counted once."""
        if not self._ended:
            self._ended = True
            self._export.add("voxwire_sessions_active", -1, self._kind)
            self._export.add("voxwire_sessions_ended", 1, {**self._kind, "reason": reason})

    def _close(self, event: ev.CloseEvent) -> None:
        self.end(event.reason)

    def _metrics(self, event: ev.MetricsCollectedEvent) -> None:
        m = event.metrics
        x = self._export
        if isinstance(m, InterruptionMetrics):
            x.add("voxwire_interruptions", 1)
            x.add("voxwire_dropped_audio_ms", m.dropped_ms)
            error = m.truncation_error_ms
            x.record("voxwire_truncation_error_ms", abs(error) if error is not None else None)
        elif isinstance(m, ResponseMetrics):
            x.add("voxwire_responses", 1, {**self._kind, "status": m.status or "unknown"})
            if m.input_item_id is not None:
                x.add("voxwire_user_turns", 1)
            x.record("voxwire_time_to_first_audio_seconds", m.time_to_first_audio_s)
            stage = "voxwire_speech_end_to_audio_seconds"
            x.record(stage, m.speech_end_to_first_audio_s, {"stage": "received"})
            x.record(stage, m.speech_end_to_first_played_s, {"stage": "played"})
            x.record("voxwire_first_audio_to_played_seconds", m.first_audio_to_first_played_s)
            x.add("voxwire_underruns", m.underruns or 0)

    def _usage(self, event: ev.UsageUpdatedEvent) -> None:
        x = self._export
        response = event.response
        for (direction, modality), tokens in _token_counts(response.usage):
            x.add("voxwire_tokens", tokens, {"direction": direction, "modality": modality})
        x.add("voxwire_audio_seconds", response.output_audio_s, {"direction": "out"})
        sent = event.totals.input_audio_s - self._audio_in_s
        self._audio_in_s = event.totals.input_audio_s
        x.add("voxwire_audio_seconds", sent, {"direction": "in"})
        x.add("voxwire_estimated_cost_usd", response.estimated_cost_usd or 0.0)

    def served(self, event: se.ResponseDone) -> None:
        """A ``response.done`` a local server sent (``voxwire serve``): the response and its
        usage as billed."""
        status = event.response.status or "unknown"
        self._export.add("voxwire_responses", 1, {**self._kind, "status": status})
        for (direction, modality), tokens in _token_counts(
            TokenUsage.from_usage(event.response.usage)
        ):
            self._export.add(
                "voxwire_tokens", tokens, {"direction": direction, "modality": modality}
            )

    def _live_usage(self, event: LiveUsageEvent) -> None:
        # Live reports its running totals: the export adds what is new.
        self._export.add("voxwire_live_billed_seconds", max(0.0, event.seconds - self._live_s))
        self._live_s = max(self._live_s, event.seconds)
        if event.estimated_cost_usd is not None:
            added = max(0.0, event.estimated_cost_usd - self._live_cost)
            self._live_cost += added
            self._export.add("voxwire_estimated_cost_usd", added)

    def _error(self, event: ev.ErrorEvent) -> None:
        self._export.add("voxwire_errors", 1, {"source": event.source})
        if isinstance(event.exception, LeaseLost):
            self._export.add("voxwire_store_lease_losses", 1)

    def _tool_start(self, event: ev.ToolStartEvent) -> None:
        self._tool_started[event.call_id] = self._export.now()

    def _tool_end(self, event: ev.ToolEndEvent) -> None:
        outcome = "error" if event.error is not None else "ok"
        self._export.add("voxwire_tool_calls", 1, {"outcome": outcome})
        started = self._tool_started.pop(event.call_id, None)
        if started is not None:
            self._export.record("voxwire_tool_latency_seconds", self._export.now() - started)


def _token_counts(usage: TokenUsage) -> list[tuple[tuple[str, str], int]]:
    return [
        (("input", "text"), usage.input_text_tokens),
        (("input", "audio"), usage.input_audio_tokens),
        (("input", "image"), usage.input_image_tokens),
        (("input", "cached_text"), usage.input_cached_text_tokens),
        (("input", "cached_audio"), usage.input_cached_audio_tokens),
        (("output", "text"), usage.output_text_tokens),
        (("output", "audio"), usage.output_audio_tokens),
    ]


def _tripped(guardrail: str) -> Callable[[SessionObserver, Any], None]:
    def handle(observer: SessionObserver, event: Any) -> None:
        observer._export.add("voxwire_guardrail_trips", 1, {"guardrail": guardrail})

    return handle


def _counter(name: str, labels: Callable[[Any], dict[str, str]] | None = None) -> Any:
    def handle(observer: SessionObserver, event: Any) -> None:
        observer._export.add(name, 1, labels(event) if labels is not None else {})

    return handle


_HANDLERS: dict[type, Callable[[SessionObserver, Any], None]] = {
    ev.CloseEvent: SessionObserver._close,
    ev.MetricsCollectedEvent: SessionObserver._metrics,
    ev.UsageUpdatedEvent: SessionObserver._usage,
    LiveUsageEvent: SessionObserver._live_usage,
    ev.ErrorEvent: SessionObserver._error,
    ev.ToolStartEvent: SessionObserver._tool_start,
    ev.ToolEndEvent: SessionObserver._tool_end,
    ev.GuardrailTrippedEvent: _tripped("output"),
    InputGuardrailTrippedEvent: _tripped("input"),
    ToolGuardrailTrippedEvent: _tripped("tool"),
    ev.ReconnectedEvent: _counter("voxwire_reconnects"),
    ev.RenewedEvent: _counter("voxwire_renewals"),
    ev.InterruptionRecoveredEvent: _counter(
        "voxwire_false_interruptions_recovered", lambda e: {"reason": e.reason}
    ),
}
