"""What the listener heard, end to end: a LiveSession against the local server's Live emulation
(real websocket, webrtcvad, Whisper, hibari, audio paced at real time) with its audio output
pulled by a virtual speaker (MemoryOutput) stepped by the test. The user speaks over the
answer: the model stops sending, the session drops what arrived but was not heard, the history
ends where the listener stopped hearing, and the metrics carry the same records as a
RealtimeSession's (response, interruption, dropped audio, first audio to first played)."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from voxwire.agents import RealtimeAgent
from voxwire.asyncio.events import MetricsCollectedEvent
from voxwire.asyncio.live import LiveSession, LiveTranscriptEvent
from voxwire.asyncio.observability.metrics import InterruptionMetrics, ResponseMetrics
from voxwire.audio import MemoryOutput
from voxwire.server import Pacing, RealtimeServer, Scenario
from voxwire.server.engines.transcribe import WhisperTranscriber
from voxwire.server.engines.tts import Voice

pytestmark = pytest.mark.skipif(
    not WhisperTranscriber.installed(), reason="needs the transcribe extra (faster-whisper)"
)

ANSWER = (
    "It is sunny and warm in Paris today, with a light breeze from the west and a few clouds "
    "late in the evening."
)
SCENARIO = Scenario.from_mapping({"rules": [{"match": "weather", "say": ANSWER}], "fallback": None})


def spoken(text: str, lead_s: float, tail_s: float) -> bytes:
    voice = Voice.load("hibari")
    try:
        audio = voice.speak_blocking(text, "alloy", 1.0, "audio/pcm").audio
    finally:
        voice.close()
    return bytes(int(48_000 * lead_s)) + audio + bytes(int(48_000 * tail_s))


async def send(session: LiveSession, audio: bytes) -> None:
    for offset in range(0, len(audio), 4800):
        await session.send_audio(audio[offset : offset + 4800])


async def wait_for(condition: Any, timeout_s: float = 60.0) -> None:
    """Until ``condition()`` (the speaker's ring is filled from the session's receive task,
    which signals nothing: look every 20 ms)."""
    for _ in range(int(timeout_s / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"not reached in {timeout_s} s")


def test_the_user_speaking_over_the_answer_cuts_it_where_the_listener_stopped_hearing() -> None:
    question = spoken("What is the weather in Paris?", 1.0, 1.5)
    barge_in = spoken("Stop, thank you.", 0.0, 1.5)
    speaker = MemoryOutput(prebuffer_ms=0, period_ms=20)
    ring = speaker.output.ring
    seen: list[Any] = []

    async def body() -> None:
        async with (
            RealtimeServer(scenario=SCENARIO, tts="hibari", pacing=Pacing(audio_pace=1.0)) as srv,
            LiveSession(
                RealtimeAgent(name="Weather"),
                url=f"{srv.base_url}/live/sessions",
                audio_output=speaker,
            ) as session,
        ):

            async def read() -> None:
                async for event in session:
                    seen.append(event)

            reader = asyncio.create_task(read())
            await send(session, question)
            await wait_for(lambda: ring.pushed_samples >= 24 * 600)  # 600 ms of the answer
            speaker.advance_ms(300)  # the listener hears 300 ms of it
            await asyncio.sleep(0.1)  # the session releases the words heard
            await send(session, barge_in)  # the model hears the user and stops
            await wait_for(lambda: cuts(seen))
            [cut] = cuts(seen)
            received = session.metrics.audio_received_ms
            history = session.history
            metrics = session.metrics
            speaker.advance_ms(500)
            after = speaker.played()[-24 * 500 :]
            await session.close()
            await reader

        assert cut.item_id == "live-audio-1"
        assert cut.played_ms == 300  # exactly what the speaker played of it
        assert cut.dropped_ms == cut.received_ms - 300 > 0
        assert cut.received_ms == received < 4000  # the model stopped: the rest never came
        assert (metrics.interruptions, metrics.dropped_audio_ms) == (1, cut.dropped_ms)
        [response] = [m for m in records(seen, ResponseMetrics) if m.response_id == cut.item_id]
        assert response.interrupted
        assert response.first_audio_to_first_played_s is not None
        assert metrics.first_audio_to_first_played.count >= 1
        # The history: the question, what was heard of the answer (cut there), the barge-in.
        assert [item.role for item in history] == ["user", "assistant", "user"]
        words = [e for e in seen if isinstance(e, LiveTranscriptEvent) and e.role == "assistant"]
        heard = history[1]
        assert heard.truncated_at_ms == words[0].start_ms + 300
        assert heard.text == "".join(w.delta for w in words)
        assert all(w.start_ms <= heard.truncated_at_ms for w in words)
        assert ANSWER.startswith(heard.text)
        assert 0 < len(heard.text) < len(ANSWER) // 2
        assert "stop" in history[2].text.lower()
        # Nothing of the dropped audio reaches the speaker (the fade is all that is left).
        assert np.count_nonzero(after) < 24 * 10

    asyncio.run(body())


def cuts(events: list[Any]) -> list[InterruptionMetrics]:
    return records(events, InterruptionMetrics)


def records(events: list[Any], kind: type) -> list[Any]:
    return [
        e.metrics
        for e in events
        if isinstance(e, MetricsCollectedEvent) and isinstance(e.metrics, kind)
    ]
