"""Metrics: the pure collector with made-up times, then the session against the local server."""

from __future__ import annotations

import asyncio

from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import (
    MetricsCollectedEvent,
    ResponseDoneEvent,
    SessionEvent,
)
from voxwire.asyncio.observability.metrics import (
    LatencyStats,
    MetricsCollector,
    ResponseMetrics,
    TokenUsage,
    TranscriptionMetrics,
    TranscriptionUsage,
)
from voxwire.protocol import server_events as se
from voxwire.protocol.objects import (
    InputTokenDetails,
    OutputTokenDetails,
    Response,
    TranscriptDurationUsage,
    TranscriptionError,
    TranscriptTokenUsage,
    Usage,
)

from .helpers import (
    AUDIO_MANUAL,
    RATE_HZ,
    assert_only_current_task,
    device,
    poll,
    run,
    serving,
    settle,
    speaking,
    speech_pcm,
    until,
)

# --- wire events, made by hand --------------------------------------------------------------------


def speech_stopped(item_id: str) -> se.InputAudioBufferSpeechStopped:
    return se.InputAudioBufferSpeechStopped(event_id="e", item_id=item_id, audio_end_ms=1000)


def committed(item_id: str) -> se.InputAudioBufferCommitted:
    return se.InputAudioBufferCommitted(event_id="e", item_id=item_id)


def created(response_id: str) -> se.ResponseCreated:
    return se.ResponseCreated(event_id="e", response=Response(id=response_id, status="in_progress"))


def audio(response_id: str) -> se.ResponseOutputAudioDelta:
    return se.ResponseOutputAudioDelta(
        event_id="e",
        response_id=response_id,
        item_id="item_a",
        output_index=0,
        content_index=0,
        delta=b"\0\0" * 240,
    )


USAGE = Usage(
    total_tokens=40,
    input_tokens=30,
    output_tokens=10,
    input_token_details=InputTokenDetails(
        text_tokens=5, audio_tokens=20, image_tokens=1, cached_tokens=4
    ),
    output_token_details=OutputTokenDetails(text_tokens=3, audio_tokens=7),
)


def done(
    response_id: str, status: str = "completed", usage: Usage | None = USAGE
) -> se.ResponseDone:
    return se.ResponseDone(
        event_id="e",
        response=Response(id=response_id, status=status, usage=usage),  # type: ignore[arg-type]
    )


def transcribed(item_id: str) -> se.InputAudioTranscriptionCompleted:
    return se.InputAudioTranscriptionCompleted(
        event_id="e", item_id=item_id, content_index=0, transcript="hi"
    )


def feed(collector: MetricsCollector, *timeline: tuple[float, se.ReceivedEvent]) -> list[object]:
    out: list[object] = []
    for now_s, event in timeline:
        out += collector.received(event, now_s)
    return out


# --- the collector ---------------------------------------------------------------------------


def test_a_voice_turn_measures_from_the_end_of_speech() -> None:
    collector = MetricsCollector()
    out = feed(
        collector,
        (10.0, speech_stopped("item_u")),
        (10.1, committed("item_u")),
        (10.25, created("resp_1")),
        (10.5, audio("resp_1")),
        (10.6, audio("resp_1")),  # only the first delta counts
        (12.0, done("resp_1")),
    )
    assert out == [
        ResponseMetrics(
            response_id="resp_1",
            status="completed",
            input_item_id="item_u",
            speech_end_to_first_audio_s=0.5,
            time_to_first_audio_s=0.25,
            duration_s=1.75,
            output_audio_s=2 * 480 / 48_000,  # both deltas: 10 ms each of PCM16 at 24 kHz
            usage=TokenUsage(
                input_tokens=30,
                output_tokens=10,
                input_text_tokens=5,
                input_audio_tokens=20,
                input_image_tokens=1,
                input_cached_tokens=4,
                output_text_tokens=3,
                output_audio_tokens=7,
            ),
        )
    ]
    totals = collector.snapshot()
    assert totals.responses == 1
    assert totals.usage.total_tokens == 40
    assert totals.speech_end_to_first_audio == LatencyStats(
        count=1, total_s=0.5, min_s=0.5, max_s=0.5
    )
    assert totals.response_duration.mean_s == 1.75


def test_a_manual_commit_anchors_the_turn_and_the_transcription_delay() -> None:
    collector = MetricsCollector()
    collector.committed(5.0)
    out = feed(
        collector,
        (5.05, committed("item_u")),
        (5.2, created("resp_1")),
        (5.5, audio("resp_1")),
        (6.0, done("resp_1")),
        (6.5, transcribed("item_u")),  # after the response, as the service often does
    )
    response, transcription = out
    assert isinstance(response, ResponseMetrics)
    assert response.input_item_id == "item_u"
    assert response.speech_end_to_first_audio_s == 0.5
    assert transcription == TranscriptionMetrics(item_id="item_u", delay_s=1.5)
    assert collector.snapshot().input_transcription_delay.mean_s == 1.5


def test_transcription_usage_is_reported_and_summed() -> None:
    collector = MetricsCollector()
    collector.committed(1.0)
    tokens = se.InputAudioTranscriptionCompleted(
        event_id="e",
        item_id="item_a",
        content_index=0,
        transcript="hi",
        usage=TranscriptTokenUsage(input_tokens=12, output_tokens=3, total_tokens=15),
    )
    seconds = se.InputAudioTranscriptionCompleted(
        event_id="e",
        item_id="item_b",
        content_index=0,
        transcript="bye",
        usage=TranscriptDurationUsage(seconds=2.5),
    )
    first = feed(collector, (1.0, committed("item_a")), (1.4, tokens))[-1]
    collector.committed(2.0)
    second = feed(collector, (2.0, committed("item_b")), (2.3, seconds))[-1]
    assert isinstance(first, TranscriptionMetrics)
    assert first.usage == TranscriptionUsage(input_tokens=12, output_tokens=3)
    assert isinstance(second, TranscriptionMetrics)
    assert second.usage == TranscriptionUsage(audio_s=2.5)
    assert collector.snapshot().transcription_usage == TranscriptionUsage(
        input_tokens=12, output_tokens=3, audio_s=2.5
    )


def test_a_response_no_user_turn_started_has_no_speech_latency() -> None:
    collector = MetricsCollector()
    (metrics,) = feed(
        collector, (1.0, created("resp_1")), (1.5, audio("resp_1")), (2.0, done("resp_1"))
    )
    assert isinstance(metrics, ResponseMetrics)
    assert metrics.input_item_id is None
    assert metrics.speech_end_to_first_audio_s is None
    assert metrics.time_to_first_audio_s == 0.5
    assert collector.snapshot().speech_end_to_first_audio.count == 0


def test_a_text_response_has_no_audio_latency_and_no_usage_gives_zero_tokens() -> None:
    collector = MetricsCollector()
    (metrics,) = feed(
        collector,
        (1.0, speech_stopped("item_u")),
        (1.2, created("resp_1")),
        (2.0, done("resp_1", usage=None)),
    )
    assert isinstance(metrics, ResponseMetrics)
    assert metrics.speech_end_to_first_audio_s is None
    assert metrics.time_to_first_audio_s is None
    assert metrics.usage == TokenUsage()


def test_out_of_band_responses_leave_the_turn_to_the_conversation_response() -> None:
    collector = MetricsCollector(is_out_of_band=lambda response_id: response_id == "resp_oob")
    out = feed(
        collector,
        (1.0, speech_stopped("item_u")),
        (1.1, created("resp_oob")),
        (1.2, created("resp_1")),
        (1.3, audio("resp_oob")),
        (1.4, audio("resp_1")),
        (2.0, done("resp_oob")),
        (2.1, done("resp_1")),
    )
    oob, answer = out
    assert isinstance(oob, ResponseMetrics)
    assert isinstance(answer, ResponseMetrics)
    assert (oob.out_of_band, oob.input_item_id, oob.speech_end_to_first_audio_s) == (
        True,
        None,
        None,
    )
    assert answer.input_item_id == "item_u"
    assert answer.speech_end_to_first_audio_s is not None
    assert round(answer.speech_end_to_first_audio_s, 6) == 0.4


def test_with_playback_a_response_is_reported_when_its_first_sample_played() -> None:
    collector = MetricsCollector(track_playback=True)
    out = feed(
        collector,
        (1.0, speech_stopped("item_u")),
        (1.2, created("resp_1")),
        (1.5, audio("resp_1")),
        (2.0, done("resp_1")),
    )
    assert out == []  # its audio has not played yet
    assert collector.wants_playback("resp_1")
    (metrics,) = collector.played("resp_1", 2.25)
    assert isinstance(metrics, ResponseMetrics)
    assert metrics.speech_end_to_first_played_s == 1.25
    assert metrics.speech_end_to_first_audio_s == 0.5
    assert metrics.duration_s == 0.8  # still response.created -> response.done
    assert not collector.wants_playback("resp_1")
    assert collector.played("resp_1", 3.0) == []  # once
    assert collector.snapshot().speech_end_to_first_played.count == 1


def test_with_playback_played_before_done_reports_at_done() -> None:
    collector = MetricsCollector(track_playback=True)
    feed(collector, (1.0, created("resp_1")), (1.1, audio("resp_1")))
    assert collector.played("resp_1", 1.2) == []
    (metrics,) = feed(collector, (3.0, done("resp_1")))
    assert isinstance(metrics, ResponseMetrics)
    assert metrics.time_to_first_audio_s is not None
    assert metrics.speech_end_to_first_played_s is None  # no user turn to count from


def test_an_interruption_marks_running_responses_and_reports_unplayed_ones() -> None:
    collector = MetricsCollector(track_playback=True)
    feed(collector, (1.0, created("resp_1")), (1.1, audio("resp_1")))
    collector.interrupted(["resp_1"])
    assert collector.playback_cut() == []  # not done yet: reported at response.done
    (metrics,) = feed(collector, (1.3, done("resp_1", status="cancelled")))
    assert isinstance(metrics, ResponseMetrics)
    assert metrics.interrupted
    assert metrics.speech_end_to_first_played_s is None
    totals = collector.snapshot()
    assert (totals.interruptions, totals.interrupted_responses) == (1, 1)


def test_cutting_playback_after_done_reports_the_waiting_response() -> None:
    collector = MetricsCollector(track_playback=True)
    feed(collector, (1.0, created("resp_1")), (1.1, audio("resp_1")), (1.5, done("resp_1")))
    collector.interrupted([])  # the response was done; its audio was still queued
    (metrics,) = collector.playback_cut()
    assert isinstance(metrics, ResponseMetrics)
    assert not metrics.interrupted  # the response itself completed
    assert collector.snapshot().interruptions == 1


def test_a_server_cancelled_response_counts_as_interrupted() -> None:
    collector = MetricsCollector()
    (metrics,) = feed(
        collector, (1.0, created("resp_1")), (1.1, done("resp_1", status="cancelled"))
    )
    assert isinstance(metrics, ResponseMetrics)
    assert metrics.interrupted


def test_flush_reports_what_waited_for_playback() -> None:
    collector = MetricsCollector(track_playback=True)
    feed(
        collector,
        (1.0, created("resp_1")),
        (1.1, audio("resp_1")),
        (1.5, done("resp_1")),
        (2.0, created("resp_2")),  # not done: nothing to report for it
    )
    (metrics,) = collector.flush()
    assert isinstance(metrics, ResponseMetrics)
    assert metrics.response_id == "resp_1"
    assert collector.flush() == []


def test_failed_transcriptions_are_reported_but_not_averaged() -> None:
    collector = MetricsCollector()
    failed = se.InputAudioTranscriptionFailed(
        event_id="e", item_id="item_u", content_index=0, error=TranscriptionError(message="no")
    )
    out = feed(collector, (1.0, speech_stopped("item_u")), (1.75, failed))
    assert out == [TranscriptionMetrics(item_id="item_u", delay_s=0.75, failed=True)]
    assert collector.snapshot().input_transcription_delay.count == 0
    assert feed(collector, (2.0, transcribed("item_unknown"))) == []


def test_items_waiting_for_a_transcription_are_bounded() -> None:
    collector = MetricsCollector()
    for i in range(300):  # transcription off: none of them ever completes
        feed(collector, (float(i), speech_stopped(f"item_{i}")))
    assert feed(collector, (400.0, transcribed("item_0"))) == []  # forgotten
    (metrics,) = feed(collector, (400.0, transcribed("item_299")))
    assert metrics == TranscriptionMetrics(item_id="item_299", delay_s=101.0)


def test_latency_stats_and_token_usage_add_up() -> None:
    stats = LatencyStats().add(0.5).add(None).add(1.5)
    assert (stats.count, stats.min_s, stats.max_s, stats.mean_s) == (2, 0.5, 1.5, 1.0)
    assert LatencyStats().mean_s is None
    usage = TokenUsage.from_usage(USAGE) + TokenUsage.from_usage(USAGE)
    assert (usage.input_tokens, usage.output_audio_tokens, usage.total_tokens) == (60, 14, 80)


# --- the session against the local server --------------------------------------------------


def metrics_of(events: list[SessionEvent]) -> list[ResponseMetrics]:
    return [
        e.metrics
        for e in events
        if isinstance(e, MetricsCollectedEvent) and isinstance(e.metrics, ResponseMetrics)
    ]


def test_an_audio_turn_reports_latencies_and_usage_after_response_done() -> None:
    async def body() -> None:
        async with (
            serving(tts="espeak") as server,
            RealtimeSession(url=server.url(), config=AUDIO_MANUAL) as session,
        ):
            await session.send_audio(speech_pcm(), commit=True)
            await session.create_response()  # turn detection off: the application asks
            events = await until(session, "metrics_collected")
            done = [e for e in events if isinstance(e, ResponseDoneEvent)]
            assert len(done) == 1
            assert events.index(done[0]) < len(events) - 1  # metrics after response_done
            (metrics,) = metrics_of(events)
            assert metrics.response_id == done[0].response_id
            assert metrics.status == "completed"
            assert metrics.input_item_id == session.history[0].item_id
            assert metrics.speech_end_to_first_audio_s is not None
            assert metrics.time_to_first_audio_s is not None
            assert 0 < metrics.time_to_first_audio_s < metrics.speech_end_to_first_audio_s
            assert metrics.time_to_first_audio_s <= metrics.duration_s
            assert metrics.speech_end_to_first_played_s is None  # no audio output
            assert metrics.usage == TokenUsage.from_usage(done[0].usage)
            assert metrics.usage.output_audio_tokens > 0
            totals = session.metrics
            assert totals.responses == 1
            assert totals.usage == metrics.usage

    run(body())


def test_the_injected_clock_times_everything() -> None:
    async def body() -> None:
        async with (
            serving(tts="espeak") as server,
            RealtimeSession(url=server.url(), config=AUDIO_MANUAL, clock=lambda: 42.0) as session,
        ):
            await session.send_audio(speech_pcm(), commit=True)
            await session.create_response()
            (metrics,) = metrics_of(await until(session, "metrics_collected"))
            # Every moment is 42.0 on this clock: with the real one these would be > 0.
            assert metrics.speech_end_to_first_audio_s == 0.0
            assert metrics.time_to_first_audio_s == 0.0
            assert metrics.duration_s == 0.0

    run(body())


def test_with_an_audio_output_metrics_wait_for_the_first_played_sample() -> None:
    async def body() -> None:
        ring, clock = device()
        async with speaking(clock) as session:
            await session.send_audio(speech_pcm(), commit=True)
            await session.create_response()
            events = await settle(session)
            assert not metrics_of(events)
            await asyncio.sleep(0.05)  # the watcher polls: nothing has played, nothing reported
            assert session.metrics.responses == 0
            ring.pop(480)  # the device plays the first 20 ms
            (metrics,) = metrics_of(await until(session, "metrics_collected"))
            assert metrics.speech_end_to_first_audio_s is not None
            assert metrics.speech_end_to_first_played_s is not None
            assert metrics.speech_end_to_first_played_s > metrics.speech_end_to_first_audio_s
            assert session.metrics.speech_end_to_first_played.count == 1
            assert not metrics.interrupted
            assert metrics.first_audio_to_first_played_s is not None
            assert metrics.underruns is None  # a bare clock cannot tell

    run(body())


def test_interrupting_unplayed_audio_reports_the_response_as_interrupted() -> None:
    async def body() -> None:
        _, clock = device()
        async with speaking(clock) as session:
            await session.send_message("tell me a story")
            await poll(lambda: clock.buffered_samples >= RATE_HZ // 2)
            await session.interrupt()
            # The cut item's InterruptionMetrics comes first; the response's when it is done.
            events = await until(session, lambda e: bool(metrics_of([e])))
            (metrics,) = metrics_of(events)
            assert metrics.interrupted
            assert metrics.speech_end_to_first_played_s is None
            assert session.metrics.interruptions == 1
            assert session.metrics.interrupted_responses == 1

    run(body())


def test_closing_while_audio_waits_reports_it_and_leaves_no_task() -> None:
    async def body() -> None:
        _, clock = device()
        async with serving(tts="espeak") as server:
            session = RealtimeSession(url=server.url(), config=AUDIO_MANUAL, audio_output=clock)
            await session.connect()
            await session.send_message("hello")
            await settle(session)  # done, its audio in the ring, never played
            await session.close()
            rest = [e async for e in session]
            assert [e.type for e in rest][-3:] == ["metrics_collected", "usage_updated", "close"]
            (metrics,) = metrics_of(rest)
            assert metrics.speech_end_to_first_played_s is None
        assert_only_current_task()

    run(body())


def test_input_transcription_is_timed_from_the_commit() -> None:
    async def body() -> None:
        config = {
            "output_modalities": ["text"],
            "audio": {"input": {"turn_detection": None, "transcription": {"model": "whisper-1"}}},
        }
        async with (
            serving() as server,
            RealtimeSession(url=server.url(), config=config) as session,
        ):
            await session.send_audio(speech_pcm(), commit=True)
            events = await until(
                session,
                lambda e: (
                    isinstance(e, MetricsCollectedEvent)
                    and isinstance(e.metrics, TranscriptionMetrics)
                ),
                timeout_s=30,
            )
            metrics = events[-1].metrics  # type: ignore[union-attr]
            assert isinstance(metrics, TranscriptionMetrics)
            assert metrics.item_id == session.history[0].item_id
            assert metrics.delay_s > 0
            # whisper-1 is billed by the second (the local server reports the audio's length).
            assert metrics.usage.audio_s > 0.5
            assert session.metrics.transcription_usage == metrics.usage

    run(body(), timeout_s=60)
