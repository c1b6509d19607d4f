"""``voxwire quickstart``: one offline spoken turn against the local realtime server.

What happens, all on this machine: the local server starts on a free loopback port; a user
utterance is synthesised (espeak-ng) and streamed to it as 20 ms PCM16 chunks at 24 kHz; the
server's VAD detects the turn, commits it and answers with speech; the reply's audio is written
to a WAV file and the turn's timeline is printed. The client side is ``RealtimeSession``, the
same session an application uses against the hosted service.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from voxwire.agents import RealtimeAgent
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import (
    AssistantTranscriptDoneEvent,
    AudioEvent,
    ResponseDoneEvent,
    ResponseStartedEvent,
    UserStateChangedEvent,
)
from voxwire.audio import Resampler, write_wav
from voxwire.server import Pacing, RealtimeServer, Scenario
from voxwire.server.tts import EspeakEngine

USER_TEXT = "Hello there. Can you hear me?"
REPLY = (
    "Hello! I am the local voxwire server. I heard you, and I am answering with no network at all."
)
RATE_HZ = 24000
CHUNK_SAMPLES = RATE_HZ // 50


@dataclass
class TurnResult:
    """What the quickstart observed, in order."""

    timeline: list[tuple[float, str]] = field(default_factory=list)
    transcript: str = ""
    reply_pcm: list[bytes] = field(default_factory=list)
    status: str = ""

    @property
    def reply_samples(self) -> int:
        return sum(len(b) for b in self.reply_pcm) // 2


def user_utterance() -> np.ndarray:
    """The user's words as 24 kHz PCM16, with silence around them for the VAD."""
    speech = EspeakEngine.shared().synthesize(USER_TEXT, "alloy")
    r = Resampler(speech.rate_hz, RATE_HZ)
    pcm = np.concatenate([r.process(speech.pcm), r.flush()])
    silence_before = np.zeros(RATE_HZ // 2, np.int16)
    silence_after = np.zeros(RATE_HZ, np.int16)
    return np.concatenate([silence_before, pcm, silence_after])


async def run_turn(pace: float = 4.0) -> TurnResult:
    result = TurnResult()
    scenario = Scenario.from_mapping({"rules": [], "fallback": REPLY})
    async with RealtimeServer(scenario=scenario, pacing=Pacing(audio_pace=pace)) as server:
        t0 = time.perf_counter()

        def note(what: str) -> None:
            result.timeline.append((time.perf_counter() - t0, what))

        # A pause between the user's words must not end the turn early.
        config = {
            "audio": {
                "input": {"turn_detection": {"type": "server_vad", "silence_duration_ms": 600}}
            }
        }
        session = RealtimeSession(
            RealtimeAgent(name="quickstart", instructions="Answer briefly."),
            url=server.url("gpt-realtime"),
            config=config,
            wait_for_session_updated=True,
        )
        async with session:
            note("session connected and configured")

            async def speak() -> None:
                audio = user_utterance()
                note(f"streaming {len(audio) / RATE_HZ:.2f} s of user speech in 20 ms chunks")
                for i in range(0, len(audio), CHUNK_SAMPLES):
                    await session.send_audio(audio[i : i + CHUNK_SAMPLES])
                    await asyncio.sleep(0.02 / pace)

            speaker = asyncio.create_task(speak())
            try:
                async for event in session:
                    if isinstance(event, UserStateChangedEvent):
                        note(f"user {event.new_state}")
                    elif isinstance(event, ResponseStartedEvent):
                        note("response started")
                    elif isinstance(event, AudioEvent):
                        if not result.reply_pcm:
                            note("first reply audio")
                        result.reply_pcm.append(event.pcm)
                    elif isinstance(event, AssistantTranscriptDoneEvent):
                        result.transcript = event.transcript
                    elif isinstance(event, ResponseDoneEvent):
                        result.status = event.status or ""
                        note(f"response done ({result.status})")
                        break
            finally:
                speaker.cancel()
                await asyncio.gather(speaker, return_exceptions=True)
    return result


def main(out: Path, pace: float) -> int:
    result = asyncio.run(run_turn(pace))
    for t, what in result.timeline:
        print(f"  {t * 1000:8.1f} ms  {what}")
    if result.status != "completed" or not result.reply_pcm:
        print(f"the turn did not complete (status {result.status!r})")
        return 1
    pcm = np.frombuffer(b"".join(result.reply_pcm), dtype="<i2").astype(np.int16)
    write_wav(out, pcm, RATE_HZ)
    print(f'assistant said: "{result.transcript}"')
    print(f"{result.reply_samples / RATE_HZ:.2f} s of reply audio written to {out}")
    return 0
