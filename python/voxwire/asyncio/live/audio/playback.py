"""The listener's side of a Live session: the audio output, what was heard, and the metrics.

Live sends the model's audio without items or responses, so this part gives it segments of its
own: an *utterance* (``live-audio-N``) is the model's audio from its first delta until the user
speaks, the session timeline shows a silence (a delta starting more than ``GAP_MS`` after the
last one ended), or playback is cut. Each utterance goes through the Realtime session's
:class:`~voxwire.asyncio.audio.playback.AudioOutputFeed` as one segment (prebuffer, fade,
output latency, the playback clock) and through its
:class:`~voxwire.asyncio.observability.metrics.MetricsRecorder` as one response, so a
``LiveSession`` reports the same records as a ``RealtimeSession`` (``metrics_collected`` events
with :class:`ResponseMetrics` / :class:`InterruptionMetrics`, and the totals).

Interruption on Live: the model hears the user and stops sending by itself; nothing is sent
back. When the user's speech (a transcript delta) overlaps the current utterance — it ends
after the utterance began, and starts before the end of its audio on the timeline or while the
listener still has some of it to hear — the output is cut: what arrived but was not heard is
dropped (``dropped_ms``), the assistant's history item ends at the heard position
(``truncated_at_ms``), and the audio the listener heard after the user had started speaking
counts as spoken over the user (``spoken_over_ms``).

Underruns: Live has no "audio done" event, so while an utterance is open the output cannot
tell the end of the model's speech from audio arriving late. A dry ring after an utterance's
last delta is counted as an underrun only once more audio of the same utterance arrives; when
the utterance turns out to have ended there, it is not.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Final

import voxwire.asyncio.events as ev
from voxwire.asyncio.audio.playback import (
    AudioOutputFeed,
    AudioOutputPath,
    HasAudioOutput,
    PlaybackMonitor,
    attached_output,
)
from voxwire.asyncio.live.audio.transcripts import HeardClock, TranscriptRelease
from voxwire.asyncio.live.events import LiveAudioEvent, LiveMetrics
from voxwire.asyncio.observability.metrics import InterruptionMetrics, Metrics, MetricsRecorder
from voxwire.audio import AudioOutput
from voxwire.exceptions import ConfigurationError
from voxwire.live import server_events as se
from voxwire.protocol.audio_ledger import SegmentKey

__all__ = ["GAP_MS", "LivePlayback", "live_output"]

GAP_MS: Final = 200
"""A silence on the timeline longer than this between two audio deltas starts a new utterance."""
_BYTES_PER_MS: Final = 48  # PCM16 at 24 kHz, the Live WebSocket default the session uses


def live_output(target: AudioOutput | HasAudioOutput | None) -> AudioOutput | None:
    """The :class:`~voxwire.audio.AudioOutput` behind ``LiveSession(audio_output=...)``: one,
    or a speaker holding one as ``.output`` (``SoundDeviceOutput``, ``MemoryOutput``,
    ``WavFileOutput``), at 24 kHz."""
    if target is None:
        return None
    output = attached_output(target)
    if not isinstance(output, AudioOutput):
        raise ConfigurationError(
            f"audio_output={target!r} is not an AudioOutput or a speaker holding one "
            "(SoundDeviceOutput, MemoryOutput, WavFileOutput); a bare PlaybackClock cannot "
            "tell a Live session what was heard"
        )
    if output.device_rate_hz != 24_000:
        raise ConfigurationError(
            f"a Live session's audio output runs at 24000 Hz, not {output.device_rate_hz}: "
            "make it with AudioOutput(24_000) (the device resamples if it must)"
        )
    return output


@dataclass(slots=True)
class _Utterance:
    id: str
    start_ms: int  # session timeline
    end_ms: int  # the end of the audio received so far, on the timeline
    received_bytes: int = 0
    underruns_at: int = 0  # the output's underrun count at the last delta
    odd_byte: bytes = b""

    @property
    def received_ms(self) -> int:
        """The audio received (its length, whatever the timeline says)."""
        return self.received_bytes // _BYTES_PER_MS


class LivePlayback:
    """One Live session's audio path (see the module docstring). ``emit`` takes session
    events; ``heard(delta, start_ms, end_ms)`` is called for each assistant transcript delta
    once heard; ``truncated(at_ms)`` when the assistant's audio was cut at timeline ``at_ms``."""

    def __init__(
        self,
        output: AudioOutput | None,
        *,
        emit: Callable[[Any], None],
        heard: Callable[[str, int, int], None],
        truncated: Callable[[int], None],
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._output = output
        self._emit = emit
        self._heard = heard
        self._truncated = truncated
        path = AudioOutputPath(output) if output is not None else None
        self._feed = (
            AudioOutputFeed(path, lambda: None, _not_realtime, emit) if path is not None else None
        )
        self._monitor = PlaybackMonitor(path, _nothing, self._failed) if path is not None else None
        self._recorder = MetricsRecorder(
            now=now,
            emit=self._emit_metrics,
            playback=self._monitor,
            underruns=self._underruns if output is not None else None,
        )
        self._clock = HeardClock()
        self._release = TranscriptRelease()
        self._current: _Utterance | None = None
        self._count = 0
        self._forgiven = 0  # dry rings that turned out to be the end of an utterance
        self._position_ms = 0  # the latest timeline position any event named
        self._user_end_ms: int | None = None
        self._latencies: list[int] = []
        self._received_bytes = 0
        self._heard_before = output.ring.heard_samples if output is not None else 0
        self._spoken_over_ms = 0

    # --- what the model sends -------------------------------------------------------------------

    def audio(self, event: se.OutputAudioDelta) -> None:
        current = self._current
        start, end = self._place(event)
        if current is not None and start > current.end_ms + GAP_MS:
            self._finish("completed")
            current = None
        first = current is None
        if current is None:
            current = self._begin(start)
        current.end_ms = max(current.end_ms, end)
        current.received_bytes += len(event.delta)
        self._received_bytes += len(event.delta)
        self._position_ms = max(self._position_ms, end)
        if self._user_end_ms is not None:
            self._latencies.append(max(0, start - self._user_end_ms))
            self._user_end_ms = None
        if self._feed is None or self._output is None:
            self._emit(
                LiveAudioEvent(pcm=event.delta, start_ms=event.start_ms, end_ms=event.end_ms)
            )
        else:
            # A sample split across two deltas: its first byte waits for the next one.
            pcm = current.odd_byte + event.delta
            current.odd_byte = pcm[-1:] if len(pcm) % 2 else b""
            before = self._output.ring.pushed_samples
            self._feed.feed(current.id, pcm[: len(pcm) - len(current.odd_byte)])
            self._clock.pushed(before, self._output.ring.pushed_samples, start, end)
            current.underruns_at = self._output.underruns
        if first:  # metrics need the first audio only (and then watch for its first sample)
            self._recorder.audio_received(current.id, (current.id, 0))

    def _place(self, event: se.OutputAudioDelta) -> tuple[int, int]:
        """The delta's span on the timeline. The primary WebSocket may leave it out: then the
        audio follows the utterance's (or starts at the latest position known)."""
        start = event.start_ms
        if start is None:
            start = self._current.end_ms if self._current is not None else self._position_ms
        if event.end_ms is not None:
            return start, max(start, event.end_ms)  # a span backwards is taken as empty
        return start, start + len(event.delta) // _BYTES_PER_MS

    def assistant_words(self, event: se.OutputTranscriptDelta) -> None:
        """A transcript delta of the model's speech: heard now without an output, else held
        until its audio is."""
        self._position_ms = max(self._position_ms, event.end_ms)
        if self._output is None:
            self._heard(event.delta, event.start_ms, event.end_ms)
        else:
            self._release.hold(event.delta, event.start_ms, event.end_ms)

    def user_speech(self, event: se.InputTranscriptDelta) -> None:
        """The user's words: the model's utterance is over, or interrupted (the module
        docstring). Voxwire cannot tell a backchannel ("mm-hm") the model talks through from
        an interruption: both cut what is queued, and the model's next audio plays on."""
        self._position_ms = max(self._position_ms, event.end_ms)
        self._user_end_ms = event.end_ms
        current = self._current
        if current is None or event.end_ms <= current.start_ms:
            return  # speech that ended before the utterance: what it answers, not a barge-in
        if event.start_ms < current.end_ms or self.unheard_samples > 0:
            self.cut(user_started_ms=event.start_ms)
        else:
            self._finish("completed")

    # --- what the listener heard ----------------------------------------------------------------

    @property
    def unheard_samples(self) -> int:
        return self._feed.unheard_samples if self._feed is not None else 0

    def heard_ms(self) -> int:
        """The timeline position the listener has heard up to."""
        if self._output is None:
            return self._position_ms
        return self._clock.heard_ms(self._output.ring.heard_samples)

    def release(self) -> None:
        """Hand over the assistant's transcript deltas whose audio has been heard."""
        if self._output is None or not len(self._release):
            return
        for held in self._release.due(self.heard_ms()):
            self._heard(held.delta, held.start_ms, held.end_ms)

    def cut(self, user_started_ms: int | None = None) -> None:
        """Stop the model's audio: drop what is queued and not heard (a barge-in from
        ``user_started_ms``, or an output guardrail)."""
        self.release()  # what was heard up to now stays heard
        current = self._current
        if current is None:  # nothing of an utterance is queued; anything else goes too
            if self._feed is not None and self.unheard_samples:
                self._feed.interrupt()
            self._clock.dropped()
            self._release.drop()
            return
        heard_at_ms = min(self.heard_ms(), current.end_ms)
        played = self._cut_output(current)
        self._clock.dropped()
        self._release.drop()
        if user_started_ms is not None:
            self._spoken_over_ms += max(0, heard_at_ms - max(user_started_ms, current.start_ms))
        if played < current.received_ms:
            self._truncated(max(heard_at_ms, current.start_ms))
        cut = InterruptionMetrics(
            item_id=current.id,
            content_index=0,
            response_id=current.id,
            played_ms=played or None,
            received_ms=current.received_ms,
            dropped_ms=max(0, current.received_ms - played),
        )
        self._recorder.interrupted([current.id], [cut])
        self._finish("interrupted")

    def timeline_restarted(self) -> None:
        """A new session timeline begins (a fork after a lost connection): the listener stops
        hearing the old one where it is, as at an interruption (what is queued is dropped, the
        history item ends there), and positions start again."""
        self.cut()
        self._clock = HeardClock()
        self._position_ms = 0
        self._user_end_ms = None

    def _heard_audio_ms(self) -> int:
        """Milliseconds of the model's audio the listener heard (without an output: received)."""
        if self._output is None:
            return self._received_bytes // _BYTES_PER_MS
        heard = self._output.ring.heard_samples - self._heard_before
        return heard * 1000 // self._output.device_rate_hz

    def _cut_output(self, current: _Utterance) -> int:
        """Cut the output; the milliseconds of ``current`` the listener heard."""
        if self._feed is None or self._output is None:
            return current.received_ms  # no output: everything received counts as heard
        heard = self._feed.heard_samples(current.id)
        for report in self._feed.interrupt():
            if report.item_id == current.id:
                heard = report.played_samples
        if heard is None:  # the clock forgot it: it played to its end
            return current.received_ms
        return heard * 1000 // self._output.device_rate_hz

    # --- metrics --------------------------------------------------------------------------------

    def metrics(self, **live: Any) -> LiveMetrics:
        """The shared totals plus the Live figures (``live``: what the session itself counts)."""
        totals = self._recorder.snapshot()
        shared = {f.name: getattr(totals, f.name) for f in fields(totals)}
        return LiveMetrics(
            **{**shared, **live},
            audio_received_ms=self._received_bytes // _BYTES_PER_MS,
            audio_heard_ms=self._heard_audio_ms(),
            first_audio_after_speech_ms=tuple(self._latencies),
            spoken_over_ms=self._spoken_over_ms,
        )

    def end(self) -> None:
        """The conversation is over (before the session's ``close`` event): the open utterance
        ends, and what waited for playback is reported as it is."""
        if self._current is not None:
            self._finish("completed")
        self._recorder.close()

    async def aclose(self) -> None:
        """Stop watching the output (after :meth:`end`)."""
        self.end()
        if self._monitor is not None:
            await self._monitor.aclose()

    # --- utterances -----------------------------------------------------------------------------

    def _begin(self, start_ms: int) -> _Utterance:
        self._count += 1
        current = _Utterance(f"live-audio-{self._count}", start_ms, start_ms)
        if self._output is not None:
            current.underruns_at = self._output.underruns
        self._current = current
        self._recorder.response_started(current.id, announced=False)
        return current

    def _finish(self, status: str) -> None:
        current, self._current = self._current, None
        if current is None:
            return
        if self._feed is not None and self._output is not None:
            self._feed.end(current.id)
            # A dry ring since the last delta was the end of the utterance, not an underrun.
            self._forgiven += self._output.underruns - current.underruns_at
            self._feed.forget_finished()
        self._recorder.response_finished(current.id, status=status)

    def _underruns(self) -> int:
        assert self._output is not None
        count = self._output.underruns - self._forgiven
        if self._current is not None:  # not known yet: late audio, or the end of the utterance
            count -= self._output.underruns - self._current.underruns_at
        return count

    def _failed(self, exc: BaseException) -> None:
        self._emit(
            ev.ErrorEvent(message=f"playback failed: {exc!r}", source="session", exception=exc)
        )

    def _emit_metrics(self, metrics: Metrics) -> None:
        self._emit(ev.MetricsCollectedEvent(metrics=metrics))


def _not_realtime(response_id: str, key: SegmentKey) -> None:
    """``AudioOutputFeed``'s Realtime hook: unused (Live calls ``feed`` directly)."""


def _nothing() -> None:
    """``PlaybackMonitor``'s drain hook: unused (Live has no agent state to hold)."""
