"""LivePlayback: a Live session's audio path through the Realtime session's feed, playback
monitor and metrics recorder, driven event by event with a virtual speaker (MemoryOutput,
stepped by hand) and a made-up clock: utterances reported as responses, first audio to first
played, underruns told apart from the end of an utterance, barge-in (dropped audio, spoken
over, history cut at the heard position), no output."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import pytest

from voxwire.asyncio.events import MetricsCollectedEvent
from voxwire.asyncio.live import LiveAudioEvent, LiveMetrics
from voxwire.asyncio.live.audio.playback import LivePlayback, live_output
from voxwire.asyncio.observability.metrics import (
    InterruptionMetrics,
    ResponseMetrics,
    SessionMetrics,
)
from voxwire.audio import AudioOutput, MemoryOutput, PlaybackClock
from voxwire.exceptions import ConfigurationError
from voxwire.live import server_events as se

TONE = (np.sin(np.arange(2400) / 5) * 8000).astype("<i2").tobytes()  # 100 ms at 24 kHz


class Rig:
    """A LivePlayback over a virtual speaker, with what it emitted, heard and truncated."""

    def __init__(self, speaker: MemoryOutput | None) -> None:
        self.speaker = speaker
        self.t = 0.0
        self.events: list[Any] = []
        self.heard: list[tuple[str, int, int]] = []
        self.truncated: list[int] = []
        self.playback = LivePlayback(
            speaker.output if speaker is not None else None,
            emit=self.events.append,
            heard=lambda *words: self.heard.append(words),
            truncated=self.truncated.append,
            now=lambda: self.t,
        )

    def audio(self, start_ms: int | None, chunks: int = 1) -> None:
        for n in range(chunks):
            begin = None if start_ms is None else start_ms + 100 * n
            end = None if begin is None else begin + 100
            self.playback.audio(se.OutputAudioDelta(delta=TONE, start_ms=begin, end_ms=end))

    def words(self, text: str, start_ms: int, end_ms: int) -> None:
        self.playback.assistant_words(
            se.OutputTranscriptDelta(event_id="e", delta=text, start_ms=start_ms, end_ms=end_ms)
        )

    def user(self, start_ms: int, end_ms: int) -> None:
        self.playback.user_speech(
            se.InputTranscriptDelta(event_id="e", delta="wait", start_ms=start_ms, end_ms=end_ms)
        )

    async def play(self, ms: int) -> None:
        assert self.speaker is not None
        self.speaker.advance_ms(ms)
        await asyncio.sleep(0.02)  # the playback monitor looks at the clock every 5 ms

    def records(self, kind: type) -> list[Any]:
        return [
            e.metrics
            for e in self.events
            if isinstance(e, MetricsCollectedEvent) and isinstance(e.metrics, kind)
        ]


def run(body: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(body())


def test_each_utterance_is_reported_as_a_response_with_its_playback_figures() -> None:
    async def body() -> None:
        rig = Rig(MemoryOutput(prebuffer_ms=0))
        rig.audio(1000, chunks=3)
        rig.t = 0.25
        await rig.play(20)  # the first sample is heard at t = 0.25
        rig.t = 1.0
        await rig.play(400)  # everything, then the ring runs dry: the utterance ended
        rig.user(2000, 2500)  # the user answers after it: no interruption
        [response] = rig.records(ResponseMetrics)
        assert response.response_id == "live-audio-1"
        assert response.status == "completed"
        assert response.first_audio_to_first_played_s == pytest.approx(0.25)
        assert response.time_to_first_audio_s is None  # nothing announces a Live utterance
        assert response.duration_s == pytest.approx(1.0)  # first audio (t = 0) to its end
        assert (response.interrupted, response.underruns) == (False, 0)
        metrics = rig.playback.metrics()
        assert isinstance(metrics, LiveMetrics)
        assert isinstance(metrics, SessionMetrics)
        assert (metrics.responses, metrics.interruptions, metrics.underruns) == (1, 0, 0)
        assert metrics.first_audio_to_first_played.count == 1
        assert (metrics.audio_received_ms, metrics.audio_heard_ms) == (300, 300)
        assert rig.records(InterruptionMetrics) == []
        await rig.playback.aclose()

    run(body)


def test_late_audio_inside_an_utterance_is_an_underrun_the_end_of_one_is_not() -> None:
    async def body() -> None:
        rig = Rig(MemoryOutput(prebuffer_ms=0))
        rig.audio(1000)
        await rig.play(200)  # dry: late audio, or the end of what the model says?
        assert rig.playback.metrics().underruns == 0  # not known yet
        rig.audio(1100)  # the same utterance goes on: it was late
        assert rig.playback.metrics().underruns == 1
        await rig.play(200)  # dry again ...
        rig.audio(5000)  # ... and the next audio is after a silence: that was the end
        metrics = rig.playback.metrics()
        assert (metrics.underruns, metrics.responses) == (1, 1)
        [first] = rig.records(ResponseMetrics)
        assert (first.response_id, first.underruns) == ("live-audio-1", 1)
        await rig.play(200)
        await rig.playback.aclose()  # the open utterance is reported at close
        assert [r.response_id for r in rig.records(ResponseMetrics)] == [
            "live-audio-1",
            "live-audio-2",
        ]
        assert rig.playback.metrics().underruns == 1

    run(body)


def test_a_barge_in_drops_what_was_not_heard_and_cuts_the_history_there() -> None:
    async def body() -> None:
        rig = Rig(MemoryOutput(prebuffer_ms=0))
        rig.audio(1000, chunks=10)  # 1 s for the timeline 1000..2000
        rig.words("One ", 1000, 1300)
        rig.words("two ", 1300, 1600)
        rig.words("three.", 1600, 2000)
        await rig.play(400)  # heard up to 1400
        rig.playback.release()
        assert [w for w, _, _ in rig.heard] == ["One ", "two "]
        rig.user(1200, 1500)  # the user started at 1200, over the model
        assert rig.truncated == [1400]
        [cut] = rig.records(InterruptionMetrics)
        assert (cut.item_id, cut.played_ms, cut.received_ms, cut.dropped_ms) == (
            "live-audio-1",
            400,
            1000,
            600,
        )
        [response] = rig.records(ResponseMetrics)
        assert (response.status, response.interrupted) == ("interrupted", True)
        metrics = rig.playback.metrics()
        assert (metrics.audio_received_ms, metrics.audio_heard_ms) == (1000, 400)
        assert (metrics.interruptions, metrics.interrupted_responses) == (1, 1)
        assert (metrics.dropped_audio_ms, metrics.spoken_over_ms) == (600, 200)
        await rig.play(500)
        assert rig.speaker is not None
        assert rig.speaker.output.unheard_samples == 0
        assert [w for w, _, _ in rig.heard] == ["One ", "two "]  # "three." never heard
        await rig.playback.aclose()

    run(body)


def test_a_new_timeline_cuts_what_the_old_one_queued() -> None:
    async def body() -> None:
        rig = Rig(MemoryOutput(prebuffer_ms=0))
        rig.audio(8000, chunks=5)
        rig.words("Before ", 8000, 8500)
        await rig.play(200)
        rig.playback.timeline_restarted()  # a fork: its timeline starts at 0 again
        [cut] = rig.records(InterruptionMetrics)
        assert (cut.played_ms, cut.dropped_ms) == (200, 300)
        assert rig.truncated == [8200]
        rig.audio(0, chunks=2)  # the fork's first audio: a new utterance at 0
        rig.words("After.", 0, 200)
        await rig.play(100)
        rig.playback.release()
        assert [w for w, _, _ in rig.heard] == ["Before ", "After."]
        assert rig.playback.heard_ms() == 100
        await rig.playback.aclose()
        assert [r.response_id for r in rig.records(ResponseMetrics)] == [
            "live-audio-1",
            "live-audio-2",
        ]

    run(body)


def test_speech_from_before_the_utterance_does_not_cut_it() -> None:
    async def body() -> None:
        rig = Rig(MemoryOutput(prebuffer_ms=0))
        rig.audio(3000, chunks=5)
        rig.user(1000, 3000)  # the question this utterance answers, transcribed late
        assert rig.records(InterruptionMetrics) == []
        assert rig.truncated == []
        assert rig.playback.unheard_samples == 5 * 2400
        assert rig.playback.metrics().first_audio_after_speech_ms == ()
        await rig.playback.aclose()

    run(body)


def test_without_an_output_what_arrived_counts_as_heard() -> None:
    async def body() -> None:
        rig = Rig(None)
        rig.audio(None, chunks=3)  # no timeline on the primary WebSocket: the audio follows
        rig.words("Hello there.", 0, 300)
        assert [type(e) for e in rig.events] == [LiveAudioEvent] * 3
        assert rig.heard == [("Hello there.", 0, 300)]
        rig.user(100, 400)
        [cut] = rig.records(InterruptionMetrics)
        assert (cut.played_ms, cut.dropped_ms) == (300, 0)
        metrics = rig.playback.metrics()
        assert (metrics.audio_received_ms, metrics.spoken_over_ms, metrics.underruns) == (
            300,
            200,
            0,
        )
        await rig.playback.aclose()

    run(body)


def test_the_audio_output_must_tell_what_was_heard() -> None:
    speaker = MemoryOutput()
    assert live_output(speaker) is speaker.output
    assert live_output(None) is None
    output = AudioOutput(24_000)
    assert live_output(output) is output
    with pytest.raises(ConfigurationError, match="24000 Hz"):
        live_output(AudioOutput(48_000))
    with pytest.raises(ConfigurationError, match="bare PlaybackClock"):
        live_output(output.clock)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="not an AudioOutput"):
        live_output(object())  # type: ignore[arg-type]
    assert isinstance(output.clock, PlaybackClock)


@pytest.mark.parametrize("with_output", [True, False])
def test_hostile_timelines_and_audio_never_raise(with_output: bool) -> None:
    """Seeded: deltas of any length (odd, empty, large), spans backwards, missing, negative or
    huge, transcripts out of order, interleaved with playing, cuts and user speech."""
    rng = random.Random(25)

    def ms() -> int | None:
        return rng.choice([None, -5, 0, rng.randint(0, 10_000), 2**40, rng.randint(-100, 100)])

    async def body() -> None:
        rig = Rig(MemoryOutput(prebuffer_ms=0, capacity_ms=2_000) if with_output else None)
        for _ in range(2_000):
            kind = rng.randrange(6)
            if kind == 0:
                pcm = bytes(rng.choice([0, 1, 3, 480, 4801, 96_000]))
                rig.playback.audio(se.OutputAudioDelta(delta=pcm, start_ms=ms(), end_ms=ms()))
            elif kind == 1:
                rig.words("w ", ms() or 0, ms() or 0)
            elif kind == 2:
                rig.user(ms() or 0, ms() or 0)
            elif kind == 3 and rig.speaker is not None:
                rig.speaker.advance_ms(rng.choice([20, 100, 700]))
            elif kind == 4:
                rig.playback.cut(rng.choice([None, ms() or 0]))
            else:
                rig.playback.release()
        metrics = rig.playback.metrics()
        assert metrics.audio_received_ms >= 0
        assert metrics.dropped_audio_ms >= 0
        assert metrics.spoken_over_ms >= 0
        assert all(latency >= 0 for latency in metrics.first_audio_after_speech_ms)
        await rig.playback.aclose()

    run(body)
