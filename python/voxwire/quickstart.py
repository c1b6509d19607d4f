"""``voxwire quickstart``: one offline spoken turn against the local realtime server.

What happens, all on this machine: the local server starts on a free loopback port; a user
utterance is synthesised (espeak-ng) and streamed to it as 20 ms PCM16 chunks at 24 kHz; the
server's VAD detects the turn, commits it and answers with speech; the reply's audio is written
to a WAV file and the turn's timeline is printed. The client side is the sans-I/O protocol core
(``voxwire.protocol.RealtimeProtocol``) pumped over a websocket.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import websockets

from voxwire.audio import Resampler, write_wav
from voxwire.protocol import RealtimeProtocol
from voxwire.protocol import server_events as se
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
        protocol = RealtimeProtocol()
        t0 = time.perf_counter()

        def note(what: str) -> None:
            result.timeline.append((time.perf_counter() - t0, what))

        async with websockets.connect(server.url("gpt-realtime")) as ws:

            async def flush() -> None:
                for frame in protocol.data_to_send():
                    await ws.send(frame)

            async def sender() -> None:
                audio = user_utterance()
                note(f"streaming {len(audio) / RATE_HZ:.2f} s of user speech in 20 ms chunks")
                for i in range(0, len(audio), CHUNK_SAMPLES):
                    protocol.send_input_audio(audio[i : i + CHUNK_SAMPLES].astype("<i2").tobytes())
                    await flush()
                    await asyncio.sleep(0.02 / pace)

            send_task: asyncio.Task[None] | None = None
            try:
                async for frame in ws:
                    protocol.receive_text(frame)
                    for event in protocol.events_received():
                        if isinstance(event, se.SessionCreated):
                            note("session.created")
                            # A pause between the user's words must not end the turn early.
                            protocol.send_session_update(
                                {
                                    "type": "realtime",
                                    "audio": {
                                        "input": {
                                            "turn_detection": {
                                                "type": "server_vad",
                                                "silence_duration_ms": 600,
                                            }
                                        }
                                    },
                                }
                            )
                        elif isinstance(event, se.SessionUpdated) and send_task is None:
                            note("session.updated")
                            send_task = asyncio.create_task(sender())
                        elif isinstance(event, se.InputAudioBufferSpeechStarted):
                            note(f"speech_started at {event.audio_start_ms} ms of input")
                        elif isinstance(event, se.InputAudioBufferSpeechStopped):
                            note(f"speech_stopped at {event.audio_end_ms} ms of input")
                        elif isinstance(event, se.InputAudioBufferCommitted):
                            note("input committed")
                        elif isinstance(event, se.ResponseCreated):
                            note("response.created")
                        elif isinstance(event, se.ResponseOutputAudioDelta):
                            if not result.reply_pcm:
                                note("first audio delta")
                            result.reply_pcm.append(event.delta)
                        elif isinstance(event, se.ResponseOutputAudioTranscriptDone):
                            result.transcript = event.transcript
                        elif isinstance(event, se.ResponseDone):
                            result.status = event.response.status or ""
                            note(f"response.done ({result.status})")
                            return result
                    await flush()
            finally:
                if send_task is not None:
                    send_task.cancel()
                    await asyncio.gather(send_task, return_exceptions=True)
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
