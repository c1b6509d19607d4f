"""The hibari voice: real 24 kHz neural speech, chosen with tts="hibari", with its
transcript next to its audio; heard back by the Whisper engine when that is installed too."""

from __future__ import annotations

import base64
import importlib.util
import re
from typing import Any

import numpy as np
import pytest

from voxwire.audio import g711
from voxwire.server import RealtimeServer
from voxwire.server.engines.transcribe import WhisperTranscriber
from voxwire.server.engines.tts import Voice

from .helpers import client_of, run, serving

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("hibari") is None,
    reason="hibari is not installed: pip install 'voxwire[hibari]'",
)

ANSWER = "Hello! How can I help you today?"  # helpers.WEATHER answers "hello" with this


def audio_of(events: list[dict[str, Any]]) -> bytes:
    return b"".join(
        base64.b64decode(e["delta"]) for e in events if e["type"] == "response.output_audio.delta"
    )


def rms(pcm: np.ndarray[Any, Any]) -> float:
    return float(np.sqrt(np.mean(pcm.astype(np.float64) ** 2)))


def test_hibari_speaks_24khz_with_its_transcript() -> None:
    async def body() -> None:
        async with serving(tts="hibari") as server, client_of(server) as client:
            assert server.tts_engine == "hibari"
            await client.say("hello")
            events = await client.respond(output_modalities=["audio"])
            kinds = [e["type"] for e in events]
            first_audio = kinds.index("response.output_audio.delta")
            assert kinds.index("response.output_audio_transcript.delta") < first_audio
            last_transcript = (
                len(kinds) - 1 - kinds[::-1].index("response.output_audio_transcript.delta")
            )
            assert last_transcript > first_audio  # interleaved with the audio, not all up front
            deltas = [e["delta"] for e in events if e["type"].endswith("transcript.delta")]
            assert "".join(deltas) == ANSWER
            pcm = np.frombuffer(audio_of(events), dtype="<i2")
            seconds = len(pcm) / 24_000
            words = len(ANSWER.split())
            # A natural pace: between 0.15 and 0.8 s a word, silences included.
            assert 0.15 * words < seconds < 0.8 * words, seconds
            assert rms(pcm) > 500  # speech, not silence
            assert np.abs(pcm).max() > 3000
            done = events[-1]["response"]
            assert done["audio"]["output"]["format"] == {"type": "audio/pcm", "rate": 24000}
            assert done["output"][0]["content"] == [{"type": "output_audio", "transcript": ANSWER}]

    run(body())


def test_word_marks_follow_the_audio_across_sentences() -> None:
    voice = Voice.load("hibari")
    try:
        assert voice.engine == "hibari"
        text = "The first sentence is short. The second one is a little longer than that."
        spoken = voice.speak_blocking(text, "alloy", 1.0, "audio/pcm")
        again = voice.speak_blocking(text, "alloy", 1.0, "audio/pcm")
        one = voice.speak_blocking("The first sentence is short.", "alloy", 1.0, "audio/pcm")
    finally:
        voice.close()
    assert spoken.audio == again.audio  # seeded: the same text is the same audio
    assert spoken.bytes_per_ms == 48.0  # 24 kHz PCM16, no resampling
    starts = [match.start() for match in re.finditer(r"\S+", text)]
    assert [char for char, _ in spoken.word_marks] == starts
    offsets = [offset for _, offset in spoken.word_marks]
    assert offsets[0] == 0
    assert offsets == sorted(offsets)
    assert offsets[-1] < len(spoken.audio)
    # The second sentence starts where the first one's audio ends.
    second = text.index("The second")
    assert dict(spoken.word_marks)[second] == len(one.audio)
    # Each word of the first sentence starts inside the first sentence's audio.
    assert all(offset < len(one.audio) for char, offset in spoken.word_marks if char < second)


def test_g711_and_speed() -> None:
    voice = Voice.load("hibari")
    try:
        normal = voice.speak_blocking(ANSWER, "alloy", 1.0, "audio/pcm")
        fast = voice.speak_blocking(ANSWER, "alloy", 1.5, "audio/pcm")
        ulaw = voice.speak_blocking(ANSWER, "alloy", 1.0, "audio/pcmu")
    finally:
        voice.close()
    assert len(fast.audio) < len(normal.audio) * 0.8
    pcm8k = g711.ulaw_decode(ulaw.audio)
    assert ulaw.bytes_per_ms == 8.0
    assert abs(len(pcm8k) * 3 - len(normal.audio) // 2) <= 3
    assert rms(pcm8k) > 500


@pytest.mark.skipif(
    not WhisperTranscriber.installed(),
    reason="the transcription engine is not installed: pip install 'voxwire[transcribe]'",
)
def test_whisper_hears_what_hibari_said() -> None:
    text = "Please book a table for two people tonight."
    voice = Voice.load("hibari")
    transcriber = WhisperTranscriber()
    try:
        audio = voice.speak_blocking(text, "alloy", 1.0, "audio/pcm").audio
        heard = transcriber.transcribe_blocking(audio, "audio/pcm", None, None).text
    finally:
        voice.close()
        transcriber.close()
    assert re.findall(r"\w+", heard.lower()) == re.findall(r"\w+", text.lower()), heard


def test_voice_choice() -> None:
    for engine, expected in (("auto", "espeak"), ("hibari", "hibari"), ("espeak", "espeak")):
        voice = Voice.load(engine)
        assert voice.engine == expected
        voice.close()
    with pytest.raises(ValueError, match="'auto', 'hibari', 'espeak'"):
        RealtimeServer(tts="piper")
    with pytest.raises(ValueError, match="unknown"):
        Voice.load("piper")

    async def body() -> None:
        async with RealtimeServer(tts="espeak") as server:
            assert server.tts_engine == "espeak"
        async with RealtimeServer(tts=None) as server:
            assert server.tts_engine is None

    run(body())
