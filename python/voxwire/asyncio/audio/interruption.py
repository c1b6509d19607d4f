"""Interruptions, as the session makes them: what was heard, and the events that say so.

An interruption — the user's speech (server VAD's ``input_audio_buffer.speech_started``),
``session.interrupt()``, an output guardrail trip, a lost connection — stops playback and
truncates each assistant item to what the listener heard. What was heard comes, in this order,
from the application (samples it played itself), from the attached audio output (exact, to the
sample; an ``AudioOutput`` also drops its unplayed audio and fades out), or else everything
received counts as heard. The protocol core plans and queues the truncates and deletes
(``RealtimeProtocol.interrupt``); this part collects the played samples, tells metrics (with
each cut item's truncation point, the audio it dropped unplayed, and how the truncation point
compares with what the playback clock knew, within the clock's bound), and emits
``audio_interrupted`` per item.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

import voxwire.asyncio.events as ev
from voxwire.asyncio.audio.playback import OutputPath, heard_bound_ms
from voxwire.asyncio.events.translate import turn_interrupts_response
from voxwire.asyncio.observability.metrics import InterruptionMetrics, MetricsRecorder
from voxwire.protocol import server_events as se
from voxwire.protocol.audio_ledger import AudioSegment, SegmentKey
from voxwire.protocol.client_events import ConversationItemDelete, ConversationItemTruncate
from voxwire.protocol.protocol import RealtimeProtocol

__all__ = ["Interrupter"]


class Interrupter:
    """Makes interruptions for one session (``protocol()`` gives the connection's core)."""

    server_event_types: Final = frozenset({se.InputAudioBufferSpeechStarted})

    def __init__(
        self,
        protocol: Callable[[], RealtimeProtocol],
        output: OutputPath | None,
        metrics: MetricsRecorder,
        emit: Callable[[ev.SessionEvent], None],
    ) -> None:
        self._protocol = protocol
        self._output = output
        self._metrics = metrics
        self._emit = emit

    @property
    def playing(self) -> bool:
        """The audio output holds audio the listener has not heard yet."""
        return self._output is not None and self._output.unheard_samples > 0

    def responses_in_progress(self) -> bool:
        """The server is still producing a response (cancelled ones until their ``done``)."""
        return bool(self._protocol().responses_in_progress)

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        """Server VAD heard the user start speaking. If it cuts the response
        (``interrupt_response``), the server cancels it by itself; the client stops playback and
        truncates what was heard."""
        if isinstance(event, se.InputAudioBufferSpeechStarted):
            self.stop_playback()

    def stop_playback(self) -> None:
        """An interruption the server makes itself (no cancel) when the user speaks: only if
        turn detection cuts responses (``interrupt_response``)."""
        if turn_interrupts_response(self._protocol().session):
            self.after_connection_lost()

    def after_connection_lost(self) -> None:
        """Whatever plays stops, as at an interruption the server made (no cancel), if anything
        plays or a response is in progress (turn detection settings aside: the connection is
        gone)."""
        if self.playing or self._protocol().responses_in_progress:
            self.interrupt(None, cancel_response=False)

    def interrupt(
        self, played_samples: Mapping[SegmentKey, int] | None, *, cancel_response: bool
    ) -> None:
        protocol = self._protocol()
        # Read before the cut: the output forgets what was sent and not acknowledged.
        bound_ms = (
            heard_bound_ms(self._output)
            if played_samples is None and self._output is not None
            else None
        )
        counted = played_samples is not None or self._output is not None
        played = self._played(protocol, played_samples)
        in_progress_ids = list(protocol.responses_in_progress)
        received = {segment.key: segment for segment in protocol.audio.segments()}
        sent = protocol.interrupt(played, cancel_response=cancel_response)
        cuts: list[ev.AudioInterruptedEvent] = []
        for event in sent:
            if isinstance(event, ConversationItemTruncate):
                cuts.append(
                    ev.AudioInterruptedEvent(
                        item_id=event.item_id,
                        content_index=event.content_index,
                        played_ms=event.audio_end_ms,
                    )
                )
            elif isinstance(event, ConversationItemDelete):
                cuts.append(ev.AudioInterruptedEvent(item_id=event.item_id, content_index=0))
        if sent or played:
            clock = played if counted else None
            metrics = [_cut_metrics(c, received, clock, bound_ms) for c in cuts]
            self._metrics.interrupted(in_progress_ids, metrics)
        for cut in cuts:
            self._emit(cut)

    def _played(
        self, protocol: RealtimeProtocol, played_samples: Mapping[SegmentKey, int] | None
    ) -> dict[SegmentKey, int]:
        if played_samples is not None:
            return dict(played_samples)
        if self._output is not None:
            cut = self._output.interrupt()
            return {(r.item_id, r.content_index): r.played_samples for r in cut}
        in_progress = set(protocol.responses_in_progress)
        return {
            segment.key: segment.received_samples
            for segment in protocol.audio.segments()
            if segment.response_id in in_progress
        }


def _cut_metrics(
    cut: ev.AudioInterruptedEvent,
    received: Mapping[SegmentKey, AudioSegment],
    clock: Mapping[SegmentKey, int] | None,
    bound_ms: float | None,
) -> InterruptionMetrics:
    """What an interruption did to one item: heard up to ``played_ms``, the rest dropped; and
    how that claim compares with what the playback clock knew (``clock``: samples per segment;
    ``None``: no clock counted them)."""
    key = (cut.item_id, cut.content_index)
    segment = received.get(key)
    received_ms = segment.received_ms if segment is not None else 0
    clock_ms: float | None = None
    if clock is not None:
        samples = clock.get(key, 0)
        # No segment: no audio arrived, so the clock cannot have played any.
        clock_ms = samples * 1000 / segment.sample_format.sample_rate_hz if segment else 0.0
    return InterruptionMetrics(
        item_id=cut.item_id,
        content_index=cut.content_index,
        response_id=segment.response_id if segment is not None else None,
        played_ms=cut.played_ms,
        received_ms=received_ms,
        dropped_ms=max(0, received_ms - (cut.played_ms or 0)),
        clock_heard_ms=clock_ms,
        truncation_error_ms=None if clock_ms is None else (cut.played_ms or 0) - clock_ms,
        clock_bound_ms=bound_ms,
    )
