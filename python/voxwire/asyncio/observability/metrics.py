"""Session metrics: latencies, token usage and interruptions, per response and per session.

Two parts:

* :class:`MetricsCollector` does the arithmetic. It is pure — no I/O, no clock of its own: the
  session feeds it the wire events it receives (and what it did itself: a commit, an
  interruption, the first sample of a response played) together with the time, and it returns
  the metrics that became complete. A test drives it with plain calls and made-up times.
* :class:`MetricsRecorder` is the session's side: it feeds the collector with the session's
  clock and, with an audio output attached, asks the session's one
  :class:`~voxwire.asyncio.audio.playback.PlaybackMonitor` to report when a response's first audio
  started playing (a clock has no callback: the monitor polls it in that window only).

Realtime's wire events go through protocol-neutral steps (``turn_ended``, ``response_started``,
``audio_received``, ``response_finished``) that a ``LiveSession`` calls directly, each of the
model's utterances counting as a response (asyncio/live/audio/playback.py). The records are in
:mod:`voxwire.asyncio.observability.records`.

What is measured (all times in seconds, from the session's monotonic clock):

* ``speech_end_to_first_audio_s``: from the end of the user's turn — server VAD's
  ``input_audio_buffer.speech_stopped``, or the client's own ``input_audio_buffer.commit`` — to
  the first ``response.output_audio.delta`` of the response that answers it;
* ``speech_end_to_first_played_s``: from the same moment to the first sample of that response
  leaving the audio output's ring (only with an audio output attached);
* ``time_to_first_audio_s``: from ``response.created`` to its first audio delta (the model's
  part of the latency; also set for responses no user turn started);
* ``first_audio_to_first_played_s``: from the first audio delta received to its first sample
  leaving the audio output (the client's own share: jitter buffer and device; audio output only);
* ``underruns``: how often the attached :class:`~voxwire.audio.AudioOutput` ran dry between
  ``response.created`` and the report (``None`` without one: a bare clock cannot tell);
* ``duration_s``: ``response.created`` to ``response.done``;
* ``usage``: the tokens of ``response.done``; ``output_audio_s``: the audio received of the
  response; ``estimated_cost_usd``: the usage priced (:mod:`.pricing`); the session's totals
  add ``input_audio_s``, the audio sent;
* input transcription delay: end of the user's turn to
  ``conversation.item.input_audio_transcription.completed`` (or ``.failed``), reported on its
  own (:class:`TranscriptionMetrics`) because the service often completes the transcript after
  the response is done;
* per interruption and cut item (:class:`InterruptionMetrics`): where it was truncated
  (``played_ms``, what the listener heard; ``None`` when nothing was and the item was deleted),
  the audio received of it, and how much of that was dropped unplayed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Final, Protocol

from voxwire.asyncio.observability.pricing import ModelPrices, TokenPrices, token_cost_usd
from voxwire.asyncio.observability.records import (
    InterruptionMetrics,
    LatencyStats,
    Metrics,
    ResponseMetrics,
    SessionMetrics,
    TokenUsage,
    TranscriptionMetrics,
    TranscriptionUsage,
)
from voxwire.protocol import server_events as se
from voxwire.protocol.audio_ledger import SegmentKey

__all__ = [
    "FirstSampleWatch",
    "InterruptionMetrics",
    "LatencyStats",
    "Metrics",
    "MetricsCollector",
    "MetricsRecorder",
    "ResponseMetrics",
    "SessionMetrics",
    "TokenUsage",
    "TranscriptionMetrics",
    "TranscriptionUsage",
    "UsageWiring",
]

#: How many user items may wait for their transcription at once (transcription off: none ever
#: completes, and the oldest anchors are forgotten).
_MAX_PENDING_TRANSCRIPTIONS: Final = 256


@dataclass(slots=True)
class _Open:
    """A response being measured."""

    created_s: float | None  # None: nothing announced it (Live)
    out_of_band: bool
    speech_end_s: float | None
    input_item_id: str | None
    first_audio_s: float | None = None
    first_played_s: float | None = None
    playback_over: bool = False  # played, or cut before anything played
    interrupted: bool = False
    audio_out_bytes: int = 0
    done: ResponseMetrics | None = None  # set at response.done, reported when playback allows


class MetricsCollector:
    """The arithmetic of the session's metrics (see the module docstring). Feed it with
    :meth:`received` (each wire event, with the time it was handled) and the session's own
    actions; each call returns the metrics it completed, in order.

    ``track_playback``: an audio output is attached, so a response with audio is reported once
    :meth:`played` (or :meth:`playback_cut`) says what became of its first sample.
    ``is_out_of_band``: tells out-of-band responses (``conversation="none"``) apart; they never
    answer the user's turn. ``bytes_per_s``: the wire's input and output audio rates in bytes
    per second (default PCM16 at 24 kHz), for the audio seconds sent and received.
    """

    def __init__(
        self,
        *,
        track_playback: bool = False,
        is_out_of_band: Callable[[str], bool] | None = None,
        bytes_per_s: Callable[[], tuple[int, int]] = lambda: (48_000, 48_000),
    ) -> None:
        self._track_playback = track_playback
        self._is_out_of_band = is_out_of_band
        self._bytes_per_s = bytes_per_s
        self._turn_end_s: float | None = None  # the end of the user's last turn, not answered yet
        self._turn_item_id: str | None = None
        self._commit_s: float | None = None  # the client committed; the server names the item
        self._item_end_s: OrderedDict[str, float] = OrderedDict()  # for the transcription delay
        self._open: dict[str, _Open] = {}
        self._totals = SessionMetrics()

    # --- what the session does --------------------------------------------------------------

    def committed(self, now_s: float) -> None:
        """The client sent ``input_audio_buffer.commit``: the user's turn ends now."""
        self._commit_s = now_s
        self._turn_end_s = now_s
        self._turn_item_id = None

    def audio_sent(self, n_bytes: int) -> None:
        """``n_bytes`` of audio went to the server's input buffer."""
        seconds = n_bytes / self._bytes_per_s()[0]
        self._totals = replace(self._totals, input_audio_s=self._totals.input_audio_s + seconds)

    def interrupted(self, response_ids: Iterable[str]) -> None:
        """Playback or responses were cut (``interrupt()`` or barge-in); ``response_ids``: the
        responses that were still running."""
        self._totals = replace(self._totals, interruptions=self._totals.interruptions + 1)
        for response_id in response_ids:
            record = self._open.get(response_id)
            if record is not None and record.done is None:
                record.interrupted = True

    def wants_playback(self, response_id: str) -> bool:
        """The response has audio and nothing of it was seen playing yet."""
        record = self._open.get(response_id)
        return (
            self._track_playback
            and record is not None
            and record.first_played_s is None
            and not record.playback_over
        )

    def played(self, response_id: str, now_s: float) -> list[Metrics]:
        """The first sample of the response left the audio output."""
        record = self._open.get(response_id)
        if record is None or record.playback_over:
            return []
        record.first_played_s = now_s
        record.playback_over = True
        return self._report_if_ready(response_id, record)

    def playback_cut(self) -> list[Metrics]:
        """An interruption dropped the audio output's ring: responses none of whose audio had
        played yet will not play it."""
        out: list[Metrics] = []
        for response_id, record in list(self._open.items()):
            if record.first_audio_s is not None and not record.playback_over:
                record.playback_over = True
                out += self._report_if_ready(response_id, record)
        return out

    def flush(self) -> list[Metrics]:
        """The session ends: report what waited for playback, as it is."""
        out: list[Metrics] = []
        for response_id, record in list(self._open.items()):
            if record.done is not None:
                record.playback_over = True
                out += self._report_if_ready(response_id, record)
        return out

    def cut(self, items: Iterable[InterruptionMetrics]) -> list[Metrics]:
        """An interruption cut these items (after :meth:`interrupted`): reported as they are,
        their unplayed audio added to the totals."""
        out: list[Metrics] = list(items)
        dropped = sum(item.dropped_ms for item in out if isinstance(item, InterruptionMetrics))
        self._totals = replace(
            self._totals, dropped_audio_ms=self._totals.dropped_audio_ms + dropped
        )
        return out

    def snapshot(self) -> SessionMetrics:
        return self._totals

    # --- what the server says -------------------------------------------------------------------

    def received(self, event: se.ReceivedEvent, now_s: float) -> list[Metrics]:
        """Account for one wire event handled at ``now_s``."""
        if type(event) is se.ResponseOutputAudioDelta:  # the frequent one: keep it short
            record = self._open.get(event.response_id)
            if record is not None:
                record.audio_out_bytes += len(event.delta)
                if record.first_audio_s is None:
                    record.first_audio_s = now_s
            return []
        handler = _HANDLERS.get(type(event))
        return handler(self, event, now_s) if handler is not None else []

    def _on_speech_stopped(
        self, event: se.InputAudioBufferSpeechStopped, now_s: float
    ) -> list[Metrics]:
        self.turn_ended(now_s, event.item_id)
        return []

    def _on_committed(self, event: se.InputAudioBufferCommitted, now_s: float) -> list[Metrics]:
        if self._commit_s is not None:  # the client's own commit: now the item has a name
            self._remember_item(event.item_id, self._commit_s)
            if self._turn_end_s == self._commit_s and self._turn_item_id is None:
                self._turn_item_id = event.item_id
            self._commit_s = None
        return []

    def _on_response_created(self, event: se.ResponseCreated, now_s: float) -> list[Metrics]:
        response_id = event.response.id
        if response_id is not None:
            out_of_band = self._is_out_of_band is not None and self._is_out_of_band(response_id)
            self.response_started(response_id, now_s, out_of_band=out_of_band)
        return []

    def _on_response_done(self, event: se.ResponseDone, now_s: float) -> list[Metrics]:
        response = event.response
        if response.id is None:
            return []
        return self.response_finished(
            response.id,
            now_s,
            status=response.status,
            cancelled=response.status == "cancelled",
            usage=TokenUsage.from_usage(response.usage),
        )

    # --- protocol-neutral steps (Realtime's events above use them; a Live session directly) ---

    def turn_ended(self, now_s: float, item_id: str | None = None) -> None:
        """The user's turn ended at ``now_s`` (server VAD's ``speech_stopped``)."""
        self._turn_end_s = now_s
        self._turn_item_id = item_id
        if item_id is not None:
            self._remember_item(item_id, now_s)

    def response_started(
        self,
        response_id: str,
        now_s: float,
        *,
        out_of_band: bool = False,
        announced: bool = True,
    ) -> None:
        """A response began (``response.created``); unless ``out_of_band``, it answers the
        user's last turn if one ended. ``announced=False``: nothing announced it (Live: the
        model just speaks), so it has no ``time_to_first_audio_s`` and its duration counts
        from its first audio."""
        turn_end_s = turn_item_id = None
        if not out_of_band:  # this response answers the user's last turn, if one ended
            turn_end_s, turn_item_id = self._turn_end_s, self._turn_item_id
            self._turn_end_s = self._turn_item_id = None
        self._open[response_id] = _Open(
            created_s=now_s if announced else None,
            out_of_band=out_of_band,
            speech_end_s=turn_end_s,
            input_item_id=turn_item_id,
        )

    def audio_received(self, response_id: str, now_s: float) -> None:
        """Audio of the response arrived (the first one counts)."""
        record = self._open.get(response_id)
        if record is not None and record.first_audio_s is None:
            record.first_audio_s = now_s

    def response_finished(
        self,
        response_id: str,
        now_s: float,
        *,
        status: str | None,
        cancelled: bool = False,
        usage: TokenUsage | None = None,
    ) -> list[Metrics]:
        """The response is over (``response.done``); reported now, or once playback says what
        became of its first sample."""
        record = self._open.get(response_id)
        if record is None:
            return []
        first_audio = record.first_audio_s
        began_s = record.created_s if record.created_s is not None else first_audio
        record.done = ResponseMetrics(
            response_id=response_id,
            status=status,
            out_of_band=record.out_of_band,
            input_item_id=record.input_item_id,
            speech_end_to_first_audio_s=_since(record.speech_end_s, first_audio),
            time_to_first_audio_s=_since(record.created_s, first_audio),
            duration_s=now_s - began_s if began_s is not None else 0.0,
            interrupted=record.interrupted or cancelled,
            usage=usage if usage is not None else TokenUsage(),
            output_audio_s=record.audio_out_bytes / self._bytes_per_s()[1],
        )
        if first_audio is None or not self._track_playback:
            record.playback_over = True
        return self._report_if_ready(response_id, record)

    def _on_transcription_done(
        self,
        event: se.InputAudioTranscriptionCompleted | se.InputAudioTranscriptionFailed,
        now_s: float,
    ) -> list[Metrics]:
        end_s = self._item_end_s.pop(event.item_id, None)
        if end_s is None:
            return []
        completed = event if isinstance(event, se.InputAudioTranscriptionCompleted) else None
        metrics = TranscriptionMetrics(
            item_id=event.item_id,
            delay_s=now_s - end_s,
            failed=completed is None,
            usage=TranscriptionUsage.from_usage(completed.usage if completed else None),
        )
        if completed is not None:
            totals = self._totals
            self._totals = replace(
                totals,
                input_transcription_delay=totals.input_transcription_delay.add(metrics.delay_s),
                transcription_usage=totals.transcription_usage + metrics.usage,
            )
        return [metrics]

    # --- bookkeeping ------------------------------------------------------------------------------

    def _remember_item(self, item_id: str, end_s: float) -> None:
        self._item_end_s[item_id] = end_s
        while len(self._item_end_s) > _MAX_PENDING_TRANSCRIPTIONS:
            self._item_end_s.popitem(last=False)

    def _report_if_ready(self, response_id: str, record: _Open) -> list[Metrics]:
        if record.done is None or not record.playback_over:
            return []
        del self._open[response_id]
        metrics = record.done
        if record.first_played_s is not None:
            metrics = replace(
                metrics,
                speech_end_to_first_played_s=_since(record.speech_end_s, record.first_played_s),
                first_audio_to_first_played_s=_since(record.first_audio_s, record.first_played_s),
            )
        t = self._totals
        # replace(): every total not named here (transcriptions, drops) is kept as it is.
        self._totals = replace(
            t,
            responses=t.responses + 1,
            interrupted_responses=t.interrupted_responses + metrics.interrupted,
            usage=t.usage + metrics.usage,
            output_audio_s=t.output_audio_s + metrics.output_audio_s,
            speech_end_to_first_audio=t.speech_end_to_first_audio.add(
                metrics.speech_end_to_first_audio_s
            ),
            speech_end_to_first_played=t.speech_end_to_first_played.add(
                metrics.speech_end_to_first_played_s
            ),
            time_to_first_audio=t.time_to_first_audio.add(metrics.time_to_first_audio_s),
            first_audio_to_first_played=t.first_audio_to_first_played.add(
                metrics.first_audio_to_first_played_s
            ),
            response_duration=t.response_duration.add(metrics.duration_s),
        )
        return [metrics]


def _since(start_s: float | None, end_s: float | None) -> float | None:
    return None if start_s is None or end_s is None else end_s - start_s


_Handler = Callable[[MetricsCollector, se.ReceivedEvent, float], list[Metrics]]

_HANDLERS: dict[type, _Handler] = {
    se.InputAudioBufferSpeechStopped: MetricsCollector._on_speech_stopped,  # type: ignore[dict-item]
    se.InputAudioBufferCommitted: MetricsCollector._on_committed,  # type: ignore[dict-item]
    se.ResponseCreated: MetricsCollector._on_response_created,  # type: ignore[dict-item]
    se.ResponseDone: MetricsCollector._on_response_done,  # type: ignore[dict-item]
    se.InputAudioTranscriptionCompleted: MetricsCollector._on_transcription_done,  # type: ignore[dict-item]
    se.InputAudioTranscriptionFailed: MetricsCollector._on_transcription_done,  # type: ignore[dict-item]
}


@dataclass(frozen=True, slots=True)
class UsageWiring:
    """What usage needs of the session: the wire's audio rates in bytes per second (input,
    output), the model's prices (``None``: unknown), and ``updated``, told each response's
    metrics with the session's totals after it (the ``usage_updated`` event)."""

    bytes_per_s: Callable[[], tuple[int, int]] = lambda: (48_000, 48_000)
    prices: Callable[[], ModelPrices | None] = lambda: None
    updated: Callable[[ResponseMetrics, SessionMetrics], None] = lambda response, totals: None


class FirstSampleWatch(Protocol):
    """What the recorder needs of the session's playback monitor
    (:class:`~voxwire.asyncio.audio.playback.PlaybackMonitor`): a call when a response's first
    sample was heard, and being told that playback was cut."""

    def watch_first_sample(
        self, response_id: str, key: SegmentKey, on_played: Callable[[str], None]
    ) -> None: ...

    def cut(self) -> None: ...


class MetricsRecorder:
    """The session's side of metrics: a :class:`MetricsCollector` fed with the session's clock,
    the session's :class:`~voxwire.asyncio.audio.playback.PlaybackMonitor` when an audio output is
    attached, and ``emit`` for what they complete. The session calls one method per thing that
    happened; ``aclose()`` (on shutdown) reports what still waited for playback."""

    def __init__(
        self,
        *,
        now: Callable[[], float],
        emit: Callable[[Metrics], None],
        playback: FirstSampleWatch | None,
        is_out_of_band: Callable[[str], bool] | None = None,
        underruns: Callable[[], int] | None = None,
        usage: UsageWiring | None = None,
    ) -> None:
        self._now = now
        self._emit = emit
        self._usage = usage or UsageWiring()
        self.collector = MetricsCollector(
            track_playback=playback is not None,
            is_out_of_band=is_out_of_band,
            bytes_per_s=self._usage.bytes_per_s,
        )
        self._playback = playback
        self._underruns = underruns
        self._underruns_at: dict[str, int] = {}  # response id -> the output's count at created

    def snapshot(self) -> SessionMetrics:
        totals = self.collector.snapshot()
        if self._underruns is not None:
            totals = replace(totals, underruns=self._underruns())
        prices = self._usage.prices()
        if isinstance(prices, TokenPrices):
            totals = replace(totals, estimated_cost_usd=token_cost_usd(totals.usage, prices))
        return totals

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        if (
            self._underruns is not None
            and isinstance(event, se.ResponseCreated)
            and event.response.id is not None
        ):
            self._underruns_at[event.response.id] = self._underruns()
        self._emit_all(self.collector.received(event, self._now()))

    # Protocol-neutral steps, for a session whose wire has no Realtime events (Live).

    def turn_ended(self) -> None:
        self.collector.turn_ended(self._now())

    def response_started(self, response_id: str, *, announced: bool = True) -> None:
        if self._underruns is not None:
            self._underruns_at[response_id] = self._underruns()
        self.collector.response_started(response_id, self._now(), announced=announced)

    def audio_received(self, response_id: str, key: SegmentKey) -> None:
        """Audio of the response arrived and went into the audio output (if any) as ``key``."""
        self.collector.audio_received(response_id, self._now())
        self.audio_pushed(response_id, key)

    def response_finished(
        self, response_id: str, *, status: str | None, cancelled: bool = False
    ) -> None:
        self._emit_all(
            self.collector.response_finished(
                response_id, self._now(), status=status, cancelled=cancelled
            )
        )

    def audio_pushed(self, response_id: str, key: SegmentKey) -> None:
        """Audio of the response went into the audio output."""
        if self._playback is not None and self.collector.wants_playback(response_id):
            self._playback.watch_first_sample(response_id, key, self._played)

    def committed(self) -> None:
        self.collector.committed(self._now())

    def audio_sent(self, n_bytes: int) -> None:
        self.collector.audio_sent(n_bytes)

    def interrupted(
        self, response_ids: Iterable[str], cut: Iterable[InterruptionMetrics] = ()
    ) -> None:
        self.collector.interrupted(response_ids)
        if self._playback is not None:
            self._playback.cut()
            self._emit_all(self.collector.playback_cut())
        self._emit_all(self.collector.cut(cut))

    def close(self) -> None:
        """The session is ending (its playback monitor is closed by its owner)."""
        self._emit_all(self.collector.flush())

    def _played(self, response_id: str) -> None:
        self._emit_all(self.collector.played(response_id, self._now()))

    def _emit_all(self, metrics: list[Metrics]) -> None:
        for item in metrics:
            if isinstance(item, ResponseMetrics) and self._underruns is not None:
                start = self._underruns_at.pop(item.response_id, None)
                if start is not None:
                    item = replace(item, underruns=self._underruns() - start)
            if isinstance(item, ResponseMetrics):
                prices = self._usage.prices()
                if isinstance(prices, TokenPrices):
                    item = replace(item, estimated_cost_usd=token_cost_usd(item.usage, prices))
            self._emit(item)
            if isinstance(item, ResponseMetrics):
                self._usage.updated(item, self.snapshot())
