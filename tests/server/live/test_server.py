"""The local server speaks GPT-Live: the official ``openai`` client (``client.live.connect()``,
pointed here with ``base_url``/``websocket_base_url`` and a dummy key, otherwise as shipped)
completes a spoken turn and a delegated task in both delegation modes. Every frame the server
sends is validated against ``openai.types.live.ServerEvent``; errors have the documented shape.

Real components: the hibari voice speaks the user's question, webrtcvad finds the turn,
faster-whisper transcribes it, the scenario's rules decide, hibari speaks the answer.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from openai import AsyncOpenAI
from openai.types.live import ServerEvent
from pydantic import TypeAdapter
from websockets.asyncio.client import connect

from tests.live.mutations import mutate
from tests.live.samples import CLIENT
from tests.server.helpers import FAST, run
from voxwire.server import Pacing, RealtimeServer, Scenario
from voxwire.server.engines.transcribe import WhisperTranscriber
from voxwire.server.engines.tts import Voice

OFFICIAL: TypeAdapter[Any] = TypeAdapter(ServerEvent)
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {
                "match": "weather",
                "say": "Let me check.",
                "call": {"name": "get_weather", "arguments": {"city": "Paris"}},
            },
            {"after_tool": "get_weather", "say": "It is {output.temperature} degrees in Paris."},
        ],
        "fallback": "You said: {text}",
    }
)

needs_whisper = pytest.mark.skipif(
    not WhisperTranscriber.installed(), reason="needs the transcribe extra (faster-whisper)"
)


def _question() -> bytes:
    voice = Voice.load("hibari")
    try:
        spoken = voice.speak_blocking("What is the weather in Paris?", "alloy", 1.0, "audio/pcm")
    finally:
        voice.close()
    return bytes(24_000) + spoken.audio + bytes(24_000 * 2 * 2)  # 0.5 s before, 2 s after


class Listener:
    """Reads the connection's frames, checks each against the official types."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.events: list[Any] = []

    async def until(self, kind: str, timeout_s: float = 60.0, **match: Any) -> Any:
        async def wait() -> Any:
            while True:
                raw = await self.connection.recv_bytes()
                event = OFFICIAL.validate_json(raw)
                self.events.append(event)
                if event.type == kind and all(
                    getattr(event, key, None) == value for key, value in match.items()
                ):
                    return event

        return await asyncio.wait_for(wait(), timeout_s)

    def text(self, kind: str) -> str:
        return "".join(e.delta for e in self.events if e.type == kind)


async def _speak(connection: Any, audio: bytes) -> None:
    chunk = 24_000 * 2 // 10  # 100 ms
    for offset in range(0, len(audio), chunk):
        encoded = base64.b64encode(audio[offset : offset + chunk]).decode()
        await connection.session.input_audio.append(audio=encoded)


@asynccontextmanager
async def live_connection(**server_options: Any) -> AsyncIterator[Any]:
    """A local server and the official client's Live connection to it (a dummy key)."""
    server_options.setdefault("pacing", FAST)
    async with RealtimeServer(**server_options) as server:
        http = server.base_url.replace("ws://", "http://")
        client = AsyncOpenAI(api_key="sk-dummy", base_url=http, websocket_base_url=server.base_url)
        async with client.live.connect() as connection:
            yield connection


@needs_whisper
def test_official_client_spoken_turn_with_responses_delegation() -> None:
    question = _question()

    async def body() -> None:
        async with live_connection(scenario=SCENARIO, tts="hibari") as connection:
            live = Listener(connection)
            await connection.session.start(
                session={
                    "model": "gpt-live-1",
                    "instructions": "Answer briefly.",
                    "delegation": {
                        "type": "responses",
                        "responses": {"model": "gpt-5.5", "tools": [WEATHER_TOOL]},
                    },
                }
            )
            started = await live.until("session.started")
            assert started.session.audio.output.voice == "marin"
            await _speak(connection, question)
            created = await live.until("session.delegation.created")
            assert created.delegation.target == "responses"
            call = await live.until("response.event")
            while call.event.get("type") != "response.output_item.done":
                call = await live.until("response.event")
            item = call.event["item"]
            assert (item["type"], item["name"]) == ("function_call", "get_weather")
            await connection.response.item.create(
                item={
                    "type": "function_call_output",
                    "call_id": item["call_id"],
                    "output": '{"temperature": 21}',
                }
            )
            await connection.response.create()
            while (await live.until("response.event")).event["type"] != "response.completed":
                pass
            await live.until("session.usage.updated")
            while "21 degrees" not in live.text("session.output_transcript.delta"):
                await live.until("session.usage.updated")
            assert "weather" in live.text("session.input_transcript.delta").lower()
            spoken = live.text("session.output_transcript.delta")
            assert spoken.startswith("Let me check.")
            assert spoken.endswith("It is 21 degrees in Paris.")
            audio = [e for e in live.events if e.type == "session.output_audio.delta"]
            assert sum(len(base64.b64decode(e.delta)) for e in audio) > 24_000 * 2
            assert all(a.end_ms <= b.start_ms for a, b in itertools.pairwise(audio))
            await connection.session.close()
            closed = await live.until("session.closed")
            assert closed.reason == "close_requested"
            assert closed.usage.seconds > 0

    run(body())


@needs_whisper
def test_official_client_client_delegation_answered_by_commentary() -> None:
    question = _question()

    async def body() -> None:
        async with live_connection(scenario=SCENARIO, tts="hibari") as connection:
            live = Listener(connection)
            await connection.session.start(
                session={"model": "gpt-live-1", "delegation": {"type": "client"}}
            )
            await live.until("session.started")
            await _speak(connection, question)
            created = await live.until("session.delegation.created")
            assert created.delegation.target == "client"
            await connection.session.thinking.append(
                content="Checking the forecast.", delegation_id=created.delegation.id
            )
            await live.until("session.thinking.appended")
            await connection.session.commentary.append(
                content="It is sunny in Paris.", delegation_id=created.delegation.id
            )
            await live.until("session.commentary.appended")
            while "sunny" not in live.text("session.output_transcript.delta"):
                await live.until("session.usage.updated")
            await connection.response.create()
            error = await live.until("error")
            assert error.error.message == "response.create requires Responses delegation."

    run(body())


def test_session_rules_and_error_shapes() -> None:
    async def body() -> None:
        async with live_connection(tts=None, transcriber=None) as connection:
            live = Listener(connection)
            await connection.session.input_audio.mute(event_id="early")
            error = await live.until("error")
            assert error.error.code == "session_not_started"
            assert error.error.client_event_id == "early"
            await connection.session.start(session={"model": "gpt-realtime"}, event_id="s1")
            error = await live.until("error")
            assert (error.error.param, error.client_event_id) == ("session.model", "s1")
            await connection.session.start(session={"model": "gpt-live-1"})
            await live.until("session.started")
            await connection.send(
                {"type": "session.update", "session": {"instructions": "x"}, "event_id": "u1"}  # type: ignore[arg-type,typeddict-item]
            )
            error = await live.until("error")
            assert error.error.code == "immutable_parameter"
            await connection.session.update(session={"delegation": {"type": "responses"}})
            error = await live.until("error")
            assert "owner" in error.error.message
            await connection.session.update(session={"triggers": []}, event_id="u2")
            updated = await live.until("session.updated")
            assert updated.client_event_id == "u2"
            await connection.session.commentary.append(content="Hello.", delegation_id=None)
            await live.until("session.commentary.appended")
            await live.until("session.usage.updated")
            assert live.text("session.output_transcript.delta") == "Hello."
            await connection.session.input_audio.mute()
            assert (await live.until("session.input_audio.muted")).type
            await connection.decision.create(event_id="d1")
            refused = await live.until("error")
            assert refused.error.message == "decision.create requires Decisions delegation."
            await connection.send_raw('{"type": "session.future"}')  # type: ignore[attr-defined]
            assert (await live.until("error")).error.code == "invalid_event"

    run(body())


@pytest.mark.parametrize("seed", [0, 1])
def test_mutated_client_frames_never_close_the_live_connection(seed: int) -> None:

    rng = random.Random(seed)
    kinds = sorted(k for k in CLIENT if k != "session.close")
    hostile = [mutate(rng, CLIENT[rng.choice(kinds)]) for _ in range(300)]

    async def body() -> None:
        async with RealtimeServer(tts=None, transcriber=None, pacing=FAST) as server:
            async with connect(f"{server.base_url}/live/sessions") as ws:
                await ws.send(
                    json.dumps({"type": "session.start", "session": {"model": "gpt-live-1"}})
                )
                seen = [OFFICIAL.validate_json(await ws.recv())]
                for frame in hostile:
                    await ws.send(frame)
                await ws.send(
                    json.dumps(
                        {
                            "type": "session.commentary.append",
                            "content": "Still here.",
                            "delegation_id": None,
                        }
                    )
                )

                async def until_spoken() -> None:
                    while True:
                        event = OFFICIAL.validate_json(await ws.recv())
                        seen.append(event)
                        if (
                            event.type == "session.output_transcript.delta"
                            and event.delta == "Still here."
                        ):
                            return

                await asyncio.wait_for(until_spoken(), 30)
            errors = [e for e in seen if e.type == "error"]
            assert errors
            assert all(e.error.type == "invalid_request_error" for e in errors)

    run(body())


@needs_whisper
def test_the_model_stops_when_the_user_speaks_over_it() -> None:
    question = _question()
    words = "One two three four five six seven eight nine ten eleven twelve thirteen fourteen."

    async def body() -> None:
        async with live_connection(
            scenario=SCENARIO, tts="hibari", pacing=Pacing(audio_pace=1.0)
        ) as connection:
            live = Listener(connection)
            await connection.session.start(
                session={"model": "gpt-live-1", "delegation": {"type": "client"}}
            )
            await live.until("session.started")
            await connection.session.commentary.append(content=words, delegation_id=None)
            while "two" not in live.text("session.output_transcript.delta"):
                await live.until("session.output_transcript.delta")  # the model is speaking ...
            await _speak(connection, question)  # ... and the user talks over it
            await live.until("session.input_transcript.delta")
            with contextlib.suppress(TimeoutError):  # long enough for the whole line to end
                await live.until("no such event", timeout_s=5.0)
            cut = live.text("session.output_transcript.delta")
            assert cut.startswith("One")
            assert "fourteen" not in cut  # the line was cut ...
            assert cut.endswith("Let me check.")  # ... and the model answered the user

    run(body())
