"""``RealtimeSession(audio_input=...)`` end to end against the local server: a source at a
device rate runs through the Rust pipeline into the session's input format, server VAD hears
it, mute drops it, local barge-in interrupts the agent before the server could, a broken source
becomes an error event, and close stops the source."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import AudioInterruptedEvent, ErrorEvent, RawServerEvent
from voxwire.audio import BargeInDetector, MemoryInput, MemoryOutput, Resampler
from voxwire.exceptions import ConfigurationError
from voxwire.protocol.server_events import (
    ConversationItemTruncated,
    InputAudioBufferCommitted,
    InputAudioBufferSpeechStarted,
)

from .helpers import AUDIO_MANUAL, RATE_HZ, SLOW, poll, run, serving, speech_pcm, until

DEVICE_HZ = 48_000
SERVER_VAD = {"audio": {"input": {"turn_detection": {"type": "server_vad"}}}}


def device_speech(silence_s: float = 0.3, tail_s: float = 1.0) -> np.ndarray[Any, Any]:
    """The server voice's speech as a 48 kHz microphone would give it: silence, speech,
    silence."""
    speech = np.frombuffer(speech_pcm(), dtype="<i2")
    up = Resampler(RATE_HZ, DEVICE_HZ)
    pcm = np.concatenate([up.process(speech), up.flush()])
    lead = np.zeros(int(DEVICE_HZ * silence_s), dtype=np.int16)
    tail = np.zeros(int(DEVICE_HZ * tail_s), dtype=np.int16)
    return np.concatenate([lead, pcm.astype(np.int16), tail])


class FastInput(MemoryInput):
    """A file source delivered as fast as it is taken (server VAD judges audio time, not wall
    time), optionally held back until ``gate`` is set."""

    def __init__(self, pcm: np.ndarray[Any, Any], gate: threading.Event | None = None) -> None:
        super().__init__(pcm, DEVICE_HZ)
        self.gate = gate

    def start(self, callback: Callable[[Any], None]) -> None:  # type: ignore[override]
        gate = self.gate

        def held(block: Any) -> None:
            if gate is not None:
                gate.wait(10)
            callback(block)

        super().start(held, realtime=False)


def raw_types(events: list[Any]) -> list[type[Any]]:
    return [type(e.event) for e in events if isinstance(e, RawServerEvent)]


async def until_committed(session: RealtimeSession) -> list[Any]:
    """Events until server VAD committed the user's turn."""
    return await until(
        session,
        lambda e: isinstance(e, RawServerEvent) and isinstance(e.event, InputAudioBufferCommitted),
    )


def test_a_48khz_microphone_reaches_server_vad_in_24khz_frames() -> None:
    async def body() -> None:
        source = FastInput(device_speech())
        async with (
            serving() as server,
            RealtimeSession(
                url=server.url(), config=SERVER_VAD, audio_input=source, raw_server_events=True
            ) as session,
        ):
            events = await until_committed(session)
            assert InputAudioBufferSpeechStarted in raw_types(events)
            assert source.wait(5)
            microphone = session.microphone
            assert microphone is not None
            assert microphone.pipeline is not None
            assert microphone.pipeline.format == "audio/pcm"
            assert microphone.pipeline.frame_bytes == 960  # 20 ms at 24 kHz, PCM16
            # Every 48 kHz sample became half a 24 kHz one (the resampler's delay aside).
            expected = len(device_speech()) // 2 // 480
            assert expected - 2 <= microphone.pipeline.frames_sent <= expected

    run(body())


def test_g711_sessions_get_ulaw_frames_encoded_by_the_core() -> None:
    async def body() -> None:
        source = FastInput(device_speech())
        pcmu = {"format": {"type": "audio/pcmu"}, "turn_detection": {"type": "server_vad"}}
        async with (
            serving() as server,
            RealtimeSession(
                url=server.url(),
                config={"audio": {"input": pcmu}},
                audio_input=source,
                input_frame_ms=40,
                raw_server_events=True,
            ) as session,
        ):
            events = await until_committed(session)
            assert InputAudioBufferSpeechStarted in raw_types(events)
            microphone = session.microphone
            assert microphone is not None
            assert microphone.pipeline is not None
            assert microphone.pipeline.format == "audio/pcmu"
            assert microphone.pipeline.frame_bytes == 320  # 40 ms at 8 kHz, one byte a sample

    run(body())


def test_a_muted_session_sends_nothing_of_the_microphone() -> None:
    async def body() -> None:
        source = FastInput(device_speech(), gate=threading.Event())
        async with (
            serving() as server,
            RealtimeSession(url=server.url(), config=AUDIO_MANUAL, audio_input=source) as session,
        ):
            session.mute()
            assert source.gate is not None
            source.gate.set()
            assert source.wait(5)
            await session.commit_audio()
            events = await until(session, "error")
            error = events[-1]
            assert isinstance(error, ErrorEvent)
            assert error.code == "input_audio_buffer_commit_empty"

    run(body())


def test_local_barge_in_truncates_at_what_was_heard_before_the_server_could_know() -> None:
    async def body() -> None:
        # Turn detection is off: the server never hears the user start speaking, so any
        # interruption is the local detector's.
        out = MemoryOutput(RATE_HZ, period_ms=10.0, latency_ms=0.0, prebuffer_ms=0.0)
        source = FastInput(device_speech(silence_s=0.0), gate=threading.Event())
        async with (
            serving(tts="espeak", pacing=SLOW) as server,
            RealtimeSession(
                url=server.url(),
                config=AUDIO_MANUAL,
                audio_input=source,
                local_barge_in=True,
                audio_output=out,
                raw_server_events=True,
            ) as session,
        ):
            await session.send_message("tell me a story")
            await poll(lambda: out.output.ring.readable_samples >= RATE_HZ // 2)
            out.advance(30)  # 300 ms heard
            assert source.gate is not None
            source.gate.set()  # the user speaks over the agent
            events = await until(
                session,
                lambda e: (
                    isinstance(e, RawServerEvent) and isinstance(e.event, ConversationItemTruncated)
                ),
            )
            interrupted = [e for e in events if isinstance(e, AudioInterruptedEvent)]
            assert [e.played_ms for e in interrupted] == [300]
            truncated = [
                e.event
                for e in events
                if isinstance(e, RawServerEvent) and isinstance(e.event, ConversationItemTruncated)
            ]
            assert [t.audio_end_ms for t in truncated] == [300]
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            microphone = session.microphone
            assert microphone is not None
            assert microphone.barge_ins == 1
            assert out.output.ring.readable_samples == 0

    run(body())


def test_a_source_that_delivers_garbage_becomes_an_error_event_and_the_session_goes_on() -> None:
    class Broken(FastInput):
        def start(self, callback: Callable[[Any], None]) -> None:  # type: ignore[override]
            super().start(lambda block: callback(block.astype(np.float64)))

    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(
                url=server.url(), config=AUDIO_MANUAL, audio_input=Broken(device_speech())
            ) as session,
        ):
            events = await until(session, "error")
            error = events[-1]
            assert isinstance(error, ErrorEvent)
            assert error.source == "audio_input"
            assert "float64" in error.message or "dtype" in error.message
            await session.send_message("hello")  # the session still works
            await until(session, "response_done")

    run(body())


def test_close_stops_the_source() -> None:
    async def body() -> None:
        source = MemoryInput(np.zeros(DEVICE_HZ * 30, dtype=np.int16), DEVICE_HZ)  # real time
        async with serving() as server:
            session = RealtimeSession(url=server.url(), config=AUDIO_MANUAL, audio_input=source)
            await session.connect()
            microphone = session.microphone
            assert microphone is not None
            await poll(
                lambda: microphone.pipeline is not None and microphone.pipeline.frames_sent > 2
            )
            await session.close()
            assert source.wait(0)  # the delivery thread ended with the session

    run(body())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"audio_input": object()}, "has no rate_hz, channels, start, stop"),
        ({"local_barge_in": True}, "local_barge_in needs audio_input"),
        ({"audio_input": FastInput(np.zeros(10, np.int16)), "input_frame_ms": 0}, "1..=1000"),
        (
            {"audio_input": FastInput(np.zeros(10, np.int16)), "local_barge_in": "yes"},
            "True, False",
        ),
    ],
)
def test_bad_input_options_fail_at_construction(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        RealtimeSession(url="ws://127.0.0.1:9/v1/realtime", **options)


def test_a_detector_at_the_wrong_rate_fails_connect_with_what_to_do() -> None:
    async def body() -> None:
        source = FastInput(np.zeros(DEVICE_HZ, dtype=np.int16))
        async with serving() as server:
            session = RealtimeSession(
                url=server.url(),
                config=AUDIO_MANUAL,
                audio_input=source,
                local_barge_in=BargeInDetector(rate_hz=16_000),
            )
            with pytest.raises(ConfigurationError, match="BargeInDetector\\(rate_hz=24000\\)"):
                await session.connect()

    run(body())
