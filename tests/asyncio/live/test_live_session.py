"""LiveSession end to end against the local server's Live emulation (real websocket, real
webrtcvad, Whisper, hibari): a RealtimeAgent's function tools run for the Responses backend,
a client backend answers a client delegation, transcripts wait for the listener to hear them,
output guardrails, what does not carry over is refused clearly, nothing is left after close."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
import pytest

from voxwire.agents import RealtimeAgent, function_tool, output_guardrail
from voxwire.asyncio import ToolEndEvent, ToolStartEvent
from voxwire.asyncio.live import (
    DelegationAnswer,
    DelegationAnsweredEvent,
    DelegationRequest,
    DelegationStartedEvent,
    LiveGuardrailTrippedEvent,
    LiveSession,
    LiveTranscriptEvent,
)
from voxwire.audio import AudioOutput, MemoryInput
from voxwire.exceptions import ConfigurationError, ConnectionFailed, SessionClosed
from voxwire.server import RealtimeServer, Scenario
from voxwire.server.engines.transcribe import WhisperTranscriber
from voxwire.server.engines.tts import Voice

pytestmark = pytest.mark.skipif(
    not WhisperTranscriber.installed(), reason="needs the transcribe extra (faster-whisper)"
)

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"after_tool": "get_weather", "say": "It is {output.temperature} degrees in Paris."},
        ]
    }
)
QUESTION: list[bytes] = []


def question() -> bytes:
    if not QUESTION:
        voice = Voice.load("hibari")
        try:
            spoken = voice.speak_blocking(
                "What is the weather in Paris?", "alloy", 1.0, "audio/pcm"
            )
        finally:
            voice.close()
        QUESTION.append(bytes(24_000) + spoken.audio + bytes(24_000 * 4))
    return QUESTION[0]


@function_tool
async def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temperature": 21}


WEATHER_AGENT = RealtimeAgent(name="Weather", instructions="Answer briefly.", tools=[get_weather])


@asynccontextmanager
async def local_server() -> AsyncIterator[str]:
    async with RealtimeServer(scenario=SCENARIO, tts="hibari") as server:
        yield f"{server.base_url}/live/sessions"


async def speak(session: LiveSession) -> None:
    audio = question()
    for offset in range(0, len(audio), 4800):
        await session.send_audio(audio[offset : offset + 4800])


async def until(session: LiveSession, done: Any, timeout_s: float = 60.0) -> list[Any]:
    seen: list[Any] = []

    async def read() -> None:
        async for event in session:
            seen.append(event)
            if done(seen):
                return

    await asyncio.wait_for(read(), timeout_s)
    return seen


def said(events: list[Any], role: str = "assistant") -> str:
    return "".join(e.delta for e in events if isinstance(e, LiveTranscriptEvent) and e.role == role)


def test_responses_delegation_runs_the_agents_tool() -> None:
    async def body() -> None:
        async with local_server() as url, LiveSession(WEATHER_AGENT, url=url) as session:
            await speak(session)
            events = await until(session, lambda seen: "Paris." in said(seen))
            started = [e for e in events if isinstance(e, DelegationStartedEvent)]
            assert [d.target for d in started] == ["responses"]
            tool_start = next(e for e in events if isinstance(e, ToolStartEvent))
            tool_end = next(e for e in events if isinstance(e, ToolEndEvent))
            assert (tool_start.name, tool_end.output) == (
                "get_weather",
                '{"city":"Paris","temperature":21}',
            )
            assert "weather" in said(events, "user").lower()
            history = session.history
            assert [item.role for item in history] == ["user", "assistant"]
            assert history[1].text == "It is 21 degrees in Paris."
            metrics = session.metrics
            assert (metrics.tool_calls, metrics.delegations) == (1, 1)
            assert metrics.audio_received_ms > 500
            [latency] = metrics.first_audio_after_speech_ms
            assert latency >= 0
            delegation = next(iter(session.protocol.delegations))
            assert delegation.status == "completed"

    asyncio.run(body())


def test_client_delegation_answered_by_the_backend() -> None:
    requests: list[DelegationRequest] = []

    async def backend(request: DelegationRequest) -> DelegationAnswer:
        requests.append(request)
        return DelegationAnswer("It is sunny in Paris.")

    async def body() -> None:
        agent = RealtimeAgent(name="Concierge", instructions="Hand tasks to the backend.")
        async with (
            local_server() as url,
            LiveSession(
                agent, url=url, delegation="client", backend=backend, context="ctx"
            ) as session,
        ):
            await speak(session)
            events = await until(session, lambda seen: "sunny" in said(seen))
            [answered] = [e for e in events if isinstance(e, DelegationAnsweredEvent)]
            assert (answered.answer, answered.spoken) == ("It is sunny in Paris.", True)
            [request] = requests
            assert "weather" in request.transcript.lower()
            assert request.context == "ctx"
            assert next(iter(session.protocol.delegations)).status == "answered"

    asyncio.run(body())


def test_transcripts_wait_until_heard() -> None:
    async def backend(request: DelegationRequest) -> str:
        return "It is sunny and warm in Paris today."

    async def body() -> None:
        output = AudioOutput(prebuffer_ms=0)
        agent = RealtimeAgent(name="Concierge")
        async with (
            local_server() as url,
            LiveSession(
                agent, url=url, delegation="client", backend=backend, audio_output=output
            ) as session,
        ):
            await speak(session)
            await until(
                session, lambda seen: any(isinstance(e, DelegationAnsweredEvent) for e in seen)
            )
            for _ in range(100):  # the answer's audio arrives ...
                if output.ring.pushed_samples >= 24_000:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2)
            assert "sunny" not in "".join(i.text for i in session.history)  # ... nobody heard it
            heard = ""
            for _ in range(200):  # the device plays 100 ms at a time
                output.pull(2400)
                await asyncio.sleep(0.03)
                heard = "".join(i.text for i in session.history if i.role == "assistant")
                if heard.endswith("today."):
                    break
            assert heard == "It is sunny and warm in Paris today."
            assert session.metrics.audio_heard_ms > 1000

    asyncio.run(body())


def test_output_guardrail_drops_what_was_not_heard() -> None:
    @output_guardrail
    def no_numbers(agent: Any, text: str) -> bool:
        return any(ch.isdigit() for ch in text)

    async def body() -> None:
        agent = RealtimeAgent(name="Weather", tools=[get_weather], output_guardrails=[no_numbers])
        output = AudioOutput(prebuffer_ms=0)
        async with (
            local_server() as url,
            LiveSession(agent, url=url, audio_output=output) as session,
        ):
            await speak(session)
            events = await until(
                session, lambda seen: any(isinstance(e, LiveGuardrailTrippedEvent) for e in seen)
            )
            tripped = events[-1]
            assert tripped.guardrails == ("no_numbers",)
            assert "21" in tripped.transcript
            await asyncio.sleep(0.3)  # audio still arriving after the trip is dropped too
            played = 0
            for _ in range(100):  # the device plays whatever is left: nothing but the fade
                played += int(np.count_nonzero(output.pull(2400)))
                await asyncio.sleep(0.005)
            assert output.unheard_samples == 0
            assert played < 24_000 * 50 // 1000
            spoken = "".join(i.text for i in session.history if i.role == "assistant")
            assert "21" not in spoken
            assert "degrees" not in spoken

    asyncio.run(body())


def test_what_does_not_carry_over_is_refused() -> None:
    async def backend(request: DelegationRequest) -> None:
        return None

    with pytest.raises(ConfigurationError, match="needs backend"):
        LiveSession(WEATHER_AGENT, delegation="client")
    with pytest.raises(ConfigurationError, match="takes no backend"):
        LiveSession(WEATHER_AGENT, backend=backend)
    with pytest.raises(ConfigurationError, match="needs decisions=LiveDecisions"):
        LiveSession(WEATHER_AGENT, delegation="decisions")

    async def body() -> None:
        triage = RealtimeAgent(name="Triage", handoffs=[WEATHER_AGENT])
        async with local_server() as url:
            with pytest.raises(ConfigurationError, match="handoffs do not carry over"):
                await LiveSession(triage, url=url, delegation="client", backend=backend).connect()
            with pytest.raises(ConfigurationError, match="tools are run for the Responses"):
                await LiveSession(
                    WEATHER_AGENT, url=url, delegation="client", backend=backend
                ).connect()
            with pytest.raises(ConnectionFailed, match="refused"):
                await LiveSession(WEATHER_AGENT, url=url, model="gpt-realtime").connect()
            session = LiveSession(WEATHER_AGENT, url=url)
            with pytest.raises(SessionClosed):
                await session.send_audio(b"\x00\x00")

    asyncio.run(body())


def test_close_is_clean() -> None:
    async def body() -> None:
        async with local_server() as url:
            session = LiveSession(WEATHER_AGENT, url=url)
            async with session:
                await session.add_context("The user is in Paris.")
                await session.add_context("Welcome back.", spoken=True)
                events = await until(session, lambda seen: "Welcome back." in said(seen))
                assert said(events) == "Welcome back."
                await session.mute()
                await session.unmute()
            events = [event async for event in session]
            assert events[-1].type == "close"
            await session.close()  # idempotent
            left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            assert all("live" not in t.get_name() for t in left)

    asyncio.run(body())


def test_approval_is_asked_before_a_delegated_tool_runs() -> None:
    ran: list[str] = []

    @function_tool(name="get_weather", needs_approval=True)
    async def guarded(city: str) -> dict[str, Any]:
        """The weather in a city."""
        ran.append(city)
        return {"temperature": 19}

    async def body() -> None:
        agent = RealtimeAgent(name="Weather", tools=[guarded])
        async with local_server() as url, LiveSession(agent, url=url) as session:
            await speak(session)
            events = await until(
                session, lambda seen: any(e.type == "tool_approval_requested" for e in seen)
            )
            assert ran == []
            session.approve(events[-1].call_id)
            events = await until(session, lambda seen: "19 degrees" in said(seen))
            assert ran == ["Paris"]

    asyncio.run(body())


def test_a_microphone_feeds_the_session() -> None:
    pcm = np.frombuffer(question(), dtype="<i2").copy()
    # The Rust pipeline resamples: the source runs at 48 kHz, the session takes 24 kHz.
    source = MemoryInput(np.repeat(pcm, 2), 48_000, block_ms=40)

    async def body() -> None:
        async with (
            local_server() as url,
            LiveSession(WEATHER_AGENT, url=url, audio_input=source) as session,
        ):
            events = await until(session, lambda seen: "Paris." in said(seen))
            assert "weather" in said(events, "user").lower()

    asyncio.run(body())


def test_a_bad_audio_source_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="audio_input"):
        LiveSession(WEATHER_AGENT, audio_input=object())  # type: ignore[arg-type]
