"""Server VAD on real speech (made by the server's own espeak-ng voice): turn events on the input
timeline, commit, user item, create_response and interrupt_response."""

from __future__ import annotations

import base64
from functools import cache

import numpy as np

from voxwire.audio import g711
from voxwire.server.engines.tts import Voice
from voxwire.server.engines.vad import SEMANTIC_WAIT_MS, _db, completeness

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


# --- semantic_vad ---------------------------------------------------------------------------------


@cache
def question() -> tuple[bytes, bytes]:
    """A finished question, and the same speech cut off at a loud frame in its middle (as when
    a speaker stops mid-word)."""
    voice = Voice.load()
    try:
        pcm = voice.speak_blocking("Can you help me?", "alloy", 1.0, "audio/pcm").audio
    finally:
        voice.close()
    samples = np.frombuffer(pcm, dtype="<i2")
    frame = RATE_HZ // 50
    energy = [
        float(np.mean(samples[i : i + frame].astype(np.float64) ** 2))
        for i in range(0, len(samples) - frame, frame)
    ]
    loudest = max(range(len(energy) // 3, 2 * len(energy) // 3), key=energy.__getitem__)
    return pcm, samples[: (loudest + 1) * frame].tobytes()


def voice_end_ms(pcm: bytes) -> int:
    """Where the voice in ``pcm`` ends (espeak-ng pads its output with silence)."""
    samples = np.frombuffer(pcm, dtype="<i2")
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > 200)
    return int(loud[-1]) * 1000 // RATE_HZ


async def pause_after(client: Client, pcm: bytes, appended_ms: int) -> tuple[int, int]:
    """The pause semantic_vad waits after the voice in ``pcm`` before ending the turn (ms),
    and the input timeline's length after the audio this appends."""
    lead_ms, trail_ms = 400, 9000
    await append(client, silence(lead_ms) + pcm + silence(trail_ms))
    stopped = (await client.until("input_audio_buffer.speech_stopped"))[-1]
    voice_ends_ms = appended_ms + lead_ms + voice_end_ms(pcm)
    appended_ms += lead_ms + len(pcm) * 1000 // (2 * RATE_HZ) + trail_ms
    return int(stopped["audio_end_ms"]) - voice_ends_ms, appended_ms


def test_semantic_vad_waits_by_eagerness_and_by_how_finished_the_speech_sounds() -> None:
    finished, cut = question()

    async def body() -> None:
        pauses: dict[tuple[str, str], int] = {}
        async with serving() as server:
            for eagerness in ("high", "medium", "low"):
                async with client_of(server, text_only=False) as client:
                    detection = {"type": "semantic_vad", "eagerness": eagerness}
                    detection["create_response"] = False  # type: ignore[assignment]
                    updated = await client.update(
                        output_modalities=["text"], audio={"input": {"turn_detection": detection}}
                    )
                    assert updated["type"] == "session.updated", updated
                    pauses[eagerness, "finished"], at_ms = await pause_after(client, finished, 0)
                    pauses[eagerness, "cut"], _ = await pause_after(client, cut, at_ms)
        for eagerness, (least_ms, most_ms) in SEMANTIC_WAIT_MS.items():
            if eagerness == "auto":
                continue
            # A finished question ends the turn soon; speech cut off mid-word is waited for,
            # at most the GA's maximum for this eagerness.
            assert least_ms - 60 <= pauses[eagerness, "finished"] <= least_ms + 900, pauses
            assert pauses[eagerness, "cut"] >= pauses[eagerness, "finished"] + 500, pauses
            assert pauses[eagerness, "cut"] <= most_ms + 100, pauses
        for kind in ("finished", "cut"):
            assert pauses["high", kind] < pauses["medium", kind] < pauses["low", kind], pauses

    run(body())


def harmonic(pitch_hz: np.ndarray, amplitude: np.ndarray) -> list[np.ndarray]:
    """A voiced-like 16 kHz signal (three harmonics) as 20 ms frames."""
    phase = 2 * np.pi * np.cumsum(pitch_hz) / 16_000
    wave = sum(np.sin(k * phase) / k for k in (1, 2, 3)) * amplitude * 8000
    frames = wave.astype(np.int16)
    return [frames[i : i + 320] for i in range(0, len(frames), 320)]


def test_completeness_reads_falling_pitch_and_fading_voice_as_finished() -> None:
    n = 16_000 * 6 // 10  # 600 ms
    steady = harmonic(np.full(n, 120.0), np.ones(n))
    turn_db = [_db(frame) for frame in steady]
    falling_fading = harmonic(np.linspace(140, 95, n), np.linspace(1.0, 0.15, n))
    rising = harmonic(np.linspace(110, 150, n), np.ones(n))
    assert completeness(falling_fading[-15:], turn_db) > 0.8
    assert completeness(steady[-15:], turn_db) < 0.4  # flat and loud to the end: unfinished
    assert completeness(rising[-15:], turn_db) > completeness(steady[-15:], turn_db) + 0.3
    assert completeness([], turn_db) == 0.5
    # The VAD's hangover frames (silence it still calls speech) are not the speech's end.
    hangover = [np.zeros(320, dtype=np.int16)] * 5
    assert (
        abs(
            completeness(falling_fading[-10:] + hangover, turn_db)
            - completeness(falling_fading[-10:], turn_db)
        )
        < 1e-9
    )
