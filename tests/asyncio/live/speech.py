"""What the user says to a Live session in these tests: hibari's voice, cached per text."""

from __future__ import annotations

import functools

from voxwire.asyncio.live import LiveSession
from voxwire.server.engines.tts import Voice


@functools.cache
def spoken(text: str, silence_after_s: float = 4.0) -> bytes:
    """``text`` as PCM16 24 kHz: 0.5 s of silence, the words, then silence (the user stops)."""
    voice = Voice.load("hibari")
    try:
        speech = voice.speak_blocking(text, "alloy", 1.0, "audio/pcm")
    finally:
        voice.close()
    return bytes(24_000) + speech.audio + bytes(int(48_000 * silence_after_s))


async def say(session: LiveSession, text: str) -> None:
    """Send ``text``'s speech 100 ms at a time, like a microphone."""
    audio = spoken(text)
    for offset in range(0, len(audio), 4800):
        await session.send_audio(audio[offset : offset + 4800])
