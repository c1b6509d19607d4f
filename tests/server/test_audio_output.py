"""Audio output: espeak-ng through the Rust resampler, G.711 formats, transcript next to audio,
pacing faster than real time. (espeak-ng is named: the default voice is hibari when it is
installed, tested in test_hibari.py.)"""

from __future__ import annotations

import base64
import time

import numpy as np
import pytest

from voxwire.audio import g711
from voxwire.server import Pacing

from .helpers import client_of, run, serving


def audio_of(events: list[dict]) -> bytes:
    return b"".join(
        base64.b64decode(e["delta"]) for e in events if e["type"] == "response.output_audio.delta"
    )


def test_audio_turn_streams_pcm24k_with_interleaved_transcript() -> None:
    async def body() -> None:
        async with serving(tts="espeak") as server, client_of(server) as client:
            await client.say("hello")
            events = await client.respond(output_modalities=["audio"])
            kinds = [e["type"] for e in events]
            first_audio = kinds.index("response.output_audio.delta")
            last_transcript = (
                len(kinds) - 1 - kinds[::-1].index("response.output_audio_transcript.delta")
            )
            assert kinds.index("response.output_audio_transcript.delta") < first_audio
            assert last_transcript > first_audio  # interleaved, not all up front
            tail = [k for k in kinds[last_transcript + 1 :] if k != "response.output_audio.delta"]
            assert tail == [
                "response.output_audio.done",
                "response.output_audio_transcript.done",
                "response.content_part.done",
                "response.output_item.done",
                "conversation.item.done",
                "rate_limits.updated",
                "response.done",
            ]
            pcm = np.frombuffer(audio_of(events), dtype="<i2")
            assert 1.0 < len(pcm) / 24_000 < 4.0  # "Hello! How can I help you today?"
            assert np.abs(pcm).max() > 3000  # speech, not silence
            done = events[-1]["response"]
            assert done["audio"]["output"]["format"] == {"type": "audio/pcm", "rate": 24000}
            assert done["usage"]["output_token_details"]["audio_tokens"] > 10
            assert done["output"][0]["content"] == [
                {"type": "output_audio", "transcript": "Hello! How can I help you today?"}
            ]

    run(body())


@pytest.mark.parametrize(
    ("fmt", "decode"), [("audio/pcmu", g711.ulaw_decode), ("audio/pcma", g711.alaw_decode)]
)
def test_g711_output_formats(fmt: str, decode: object) -> None:
    async def body() -> None:
        async with serving(tts="espeak") as server, client_of(server) as client:
            await client.update(audio={"output": {"format": {"type": fmt}}})
            await client.say("hello")
            events = await client.respond(output_modalities=["audio"])
            audio = audio_of(events)
            pcm = decode(audio)  # type: ignore[operator]
            assert 1.0 < len(pcm) / 8000 < 4.0
            assert np.abs(pcm).max() > 3000

    run(body())


def test_pace_is_faster_than_real_time_but_paced() -> None:
    async def body() -> None:
        async with (
            serving(tts="espeak", pacing=Pacing(audio_pace=8.0)) as server,
            client_of(server) as client,
        ):
            await client.say("hello")
            started = time.perf_counter()
            events = await client.respond(output_modalities=["audio"])
            elapsed = time.perf_counter() - started
            seconds = len(audio_of(events)) / 2 / 24_000
            assert seconds / 8 * 0.6 < elapsed < seconds / 2

    run(body())


def test_text_only_server_refuses_audio_responses() -> None:
    async def body() -> None:
        async with serving(tts=None) as server, client_of(server, text_only=False) as client:
            assert client.received[0]["session"]["output_modalities"] == ["text"]
            await client.say("hello")
            await client.send(
                {"type": "response.create", "response": {"output_modalities": ["audio"]}}
            )
            error = (await client.until("error"))[-1]["error"]
            assert error["param"] == "response.output_modalities"
            assert "without a voice" in error["message"]

    run(body())
