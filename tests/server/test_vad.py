"""Server VAD on real speech (made by the server's own espeak-ng voice): turn events on the input
timeline, commit, user item, create_response and interrupt_response."""

from __future__ import annotations

import base64
from functools import cache

import numpy as np

from voxwire.audio import g711
from voxwire.server.tts import Voice

from .helpers import SLOW, Client, client_of, run, serving

RATE_HZ = 24_000
CHUNK = RATE_HZ // 10  # 100 ms appends


@cache
def speech() -> bytes:
    voice = Voice.load()
    try:
        return voice.speak_blocking(
            "Hello, what is the weather like?", "alloy", 1.0, "audio/pcm"
        ).audio
    finally:
        voice.close()


def silence(ms: int) -> bytes:
    return b"\x00\x00" * (RATE_HZ * ms // 1000)


async def append(client: Client, pcm: bytes, *, chunk_bytes: int = CHUNK * 2) -> None:
    for start in range(0, len(pcm), chunk_bytes):
        piece = base64.b64encode(pcm[start : start + chunk_bytes]).decode()
        await client.send({"type": "input_audio_buffer.append", "audio": piece})


async def vad_client_session(client: Client, **detection: object) -> None:
    turn_detection = {"type": "server_vad", **detection}
    updated = await client.update(
        output_modalities=["text"], audio={"input": {"turn_detection": turn_detection}}
    )
    assert updated["type"] == "session.updated"


def test_turn_is_detected_committed_and_answered() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server, text_only=False) as client:
            await vad_client_session(client)
            spoken = speech()
            speech_ms = len(spoken) // 2 * 1000 // RATE_HZ
            await append(client, silence(600) + spoken + silence(800))
            events = await client.until("response.done")
            kinds = [e["type"] for e in events]
            assert kinds[:5] == [
                "input_audio_buffer.speech_started",
                "input_audio_buffer.speech_stopped",
                "input_audio_buffer.committed",
                "conversation.item.added",
                "conversation.item.done",
            ]
            assert kinds[5] == "response.created"
            started, stopped, committed = events[0], events[1], events[2]
            # Onset near 600 ms, less the 300 ms prefix padding.
            assert 240 <= started["audio_start_ms"] <= 400, started
            # End: speech end plus the 200 ms of silence it waits for.
            assert 600 + speech_ms <= stopped["audio_end_ms"] <= 600 + speech_ms + 400, stopped
            assert started["item_id"] == stopped["item_id"] == committed["item_id"]
            assert committed["previous_item_id"] is None
            item_id = committed["item_id"]
            await client.send({"type": "conversation.item.retrieve", "item_id": item_id})
            item = (await client.until("conversation.item.retrieved"))[-1]["item"]
            committed_ms = len(base64.b64decode(item["content"][0]["audio"])) // 2 * 1000 // RATE_HZ
            expected_ms = stopped["audio_end_ms"] - started["audio_start_ms"]
            assert abs(committed_ms - expected_ms) <= 120

    run(body())


def test_second_turn_chains_and_g711_input_works() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server, text_only=False) as client:
            await client.update(audio={"input": {"format": {"type": "audio/pcmu"}}})
            await vad_client_session(client, create_response=False)
            pcm24 = np.frombuffer(silence(400) + speech() + silence(600), dtype="<i2")
            pcm8 = pcm24[::3].copy()  # crude 24 -> 8 kHz, enough for a VAD
            ulaw = g711.ulaw_encode(pcm8)
            await append(client, ulaw, chunk_bytes=800)
            first = (await client.until("input_audio_buffer.committed"))[-1]
            await append(client, ulaw, chunk_bytes=800)
            second = (await client.until("input_audio_buffer.committed"))[-1]
            assert second["previous_item_id"] == first["item_id"]
            started = [
                e for e in client.received if e["type"] == "input_audio_buffer.speech_started"
            ]
            assert started[1]["audio_start_ms"] > started[0]["audio_start_ms"] + 1000
            assert not any(e["type"] == "response.created" for e in client.received)

    run(body())


def test_speech_interrupts_the_active_response() -> None:
    async def body() -> None:
        async with serving(pacing=SLOW) as server, client_of(server, text_only=False) as client:
            await vad_client_session(client, create_response=False)
            await client.say("tell me a story")
            await client.send({"type": "response.create"})
            await client.until("response.output_text.delta")
            await append(client, silence(300) + speech())
            events = await client.until("response.done")
            kinds = [e["type"] for e in events]
            assert "input_audio_buffer.speech_started" in kinds
            assert kinds.index("input_audio_buffer.speech_started") < kinds.index("response.done")
            done = events[-1]["response"]
            assert done["status"] == "cancelled"
            assert done["status_details"]["reason"] == "turn_detected"

    run(body())


def test_idle_timeout_triggers_a_response() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server, text_only=False) as client:
            await vad_client_session(client, idle_timeout_ms=500)
            await append(client, silence(700))
            events = await client.until("response.done")
            timeout = next(e for e in events if e["type"] == "input_audio_buffer.timeout_triggered")
            assert timeout["audio_end_ms"] - timeout["audio_start_ms"] >= 500

    run(body())


def test_transcription_request_fails_with_what_is_missing() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server, text_only=False) as client:
            await client.update(
                output_modalities=["text"],
                audio={"input": {"transcription": {"model": "whisper-1"}, "turn_detection": None}},
            )
            await append(client, silence(200))
            await client.send({"type": "input_audio_buffer.commit"})
            failed = (await client.until("conversation.item.input_audio_transcription.failed"))[-1]
            assert "not available" in failed["error"]["message"]

    run(body())
