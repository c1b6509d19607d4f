"""Audio-path metrics with an ``AudioOutput`` attached, against the local server: first delta to
first sample played, underruns per response, and per interruption the truncation point and the
audio dropped unplayed; plus the collector's totals for them."""

from __future__ import annotations

from voxwire.asyncio.events import AudioEndEvent, MetricsCollectedEvent, SessionEvent
from voxwire.asyncio.observability.metrics import (
    InterruptionMetrics,
    MetricsCollector,
    ResponseMetrics,
    TranscriptionMetrics,
)
from voxwire.audio import MemoryOutput
from voxwire.protocol import server_events as se
from voxwire.protocol.objects import Response, TranscriptDurationUsage

from .helpers import RATE_HZ, SLOW, poll, run, settle, until
from .test_audio_output_session import speaking_into

PERIOD = 240  # 10 ms device periods at 24 kHz


def collected(events: list[SessionEvent], kind: type) -> list:  # type: ignore[type-arg]
    return [
        e.metrics
        for e in events
        if isinstance(e, MetricsCollectedEvent) and isinstance(e.metrics, kind)
    ]


def speaker(prebuffer_ms: float = 0.0) -> MemoryOutput:
    return MemoryOutput(RATE_HZ, period_ms=10.0, latency_ms=0.0, prebuffer_ms=prebuffer_ms)


def test_an_interruption_reports_the_truncation_point_and_the_audio_dropped() -> None:
    async def body() -> None:
        out = speaker()
        async with speaking_into(out) as session:
            await session.send_message("tell me a story")
            events = await settle(session)
            (end,) = [e for e in events if isinstance(e, AudioEndEvent)]
            received_ms = session.protocol.audio_received_samples(end.item_id) * 1000 // RATE_HZ
            out.advance(25)  # 250 ms heard
            (played,) = collected(await until(session, "metrics_collected"), ResponseMetrics)
            assert played.first_audio_to_first_played_s is not None
            assert played.first_audio_to_first_played_s >= 0
            assert played.underruns == 0
            await session.interrupt()
            (cut,) = collected(await until(session, "metrics_collected"), InterruptionMetrics)
            assert cut == InterruptionMetrics(
                item_id=end.item_id,
                content_index=0,
                response_id=played.response_id,
                played_ms=250,
                received_ms=received_ms,
                dropped_ms=received_ms - 250,
                # The speaker's clock knew 250 ms exactly; a local device claims no bound.
                clock_heard_ms=250.0,
                truncation_error_ms=0.0,
                clock_bound_ms=None,
            )
            totals = session.metrics
            assert totals.dropped_audio_ms == received_ms - 250
            assert totals.first_audio_to_first_played.count == 1
            assert totals.interruptions == 1

    run(body())


def test_an_interruption_before_anything_played_drops_all_received() -> None:
    async def body() -> None:
        out = speaker()
        async with speaking_into(out) as session:
            await session.send_message("hello")
            events = await settle(session)
            (end,) = [e for e in events if isinstance(e, AudioEndEvent)]
            received_ms = session.protocol.audio_received_samples(end.item_id) * 1000 // RATE_HZ
            await session.interrupt()
            events = await until(
                session,
                lambda e: (
                    isinstance(e, MetricsCollectedEvent)
                    and isinstance(e.metrics, InterruptionMetrics)
                ),
            )
            (cut,) = collected(events, InterruptionMetrics)
            assert cut.played_ms is None  # deleted: nothing of it was heard
            assert cut.dropped_ms == cut.received_ms == received_ms > 0

    run(body())


def test_a_speaker_faster_than_the_stream_counts_underruns_for_that_response() -> None:
    async def body() -> None:
        out = speaker()
        async with speaking_into(out, pacing=SLOW) as session:
            await session.send_message("tell me a story")
            await poll(lambda: out.output.ring.readable_samples >= 2 * PERIOD)
            # The device takes everything queued and more while the reply still streams.
            out.advance(out.output.ring.readable_samples // PERIOD + 3)
            assert out.output.underruns >= 1
            events = await until(
                session,
                lambda e: (
                    isinstance(e, MetricsCollectedEvent) and isinstance(e.metrics, ResponseMetrics)
                ),
                timeout_s=30,
            )
            (metrics,) = collected(events, ResponseMetrics)
            assert metrics.underruns == out.output.underruns
            assert session.metrics.underruns == out.output.underruns

    run(body())


def test_totals_keep_transcription_usage_and_add_drops_across_responses() -> None:
    collector = MetricsCollector()
    collector.committed(1.0)
    collector.received(se.InputAudioBufferCommitted(event_id="e", item_id="u1"), 1.0)
    transcribed = se.InputAudioTranscriptionCompleted(
        event_id="e",
        item_id="u1",
        content_index=0,
        transcript="hi",
        usage=TranscriptDurationUsage(seconds=1.5),
    )
    (metrics,) = collector.received(transcribed, 1.2)
    assert isinstance(metrics, TranscriptionMetrics)
    created = se.ResponseCreated(event_id="e", response=Response(id="r1", status="in_progress"))
    done = se.ResponseDone(event_id="e", response=Response(id="r1", status="completed"))
    collector.received(created, 1.3)
    assert collector.received(done, 2.0)
    cut = InterruptionMetrics(
        item_id="a", content_index=0, response_id="r1", played_ms=10, received_ms=50, dropped_ms=40
    )
    assert collector.cut([cut, cut]) == [cut, cut]
    totals = collector.snapshot()
    assert totals.responses == 1
    assert totals.transcription_usage.audio_s == 1.5  # a response reported kept it
    assert totals.dropped_audio_ms == 80
