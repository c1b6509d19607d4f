"""Input guardrails over GPT-Live, end to end against the local server (real websocket, webrtcvad,
Whisper, hibari): the user's transcript is checked as it arrives; a trip emits
``input_guardrail_tripped``, keeps the delegated tool from running (the backend gets the refusal
as the call's output), silences the model's answer and has it say the refusal; a guardrail that
does not trip lets the turn's work run; one that raises is reported and counts as not tripped."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from voxwire.agents import GuardrailResult, RealtimeAgent, function_tool, input_guardrail
from voxwire.asyncio import ErrorEvent, InputGuardrailTrippedEvent, ToolEndEvent, ToolStartEvent
from voxwire.asyncio.live import LiveSession
from voxwire.server.engines.transcribe import WhisperTranscriber

from .test_live_session import local_server, said, speak, until

pytestmark = pytest.mark.skipif(
    not WhisperTranscriber.installed(), reason="needs the transcribe extra (faster-whisper)"
)


def weather_agent(guardrail: Any) -> tuple[RealtimeAgent, list[str]]:
    runs: list[str] = []

    @function_tool
    async def get_weather(city: str) -> dict[str, Any]:
        """The weather in a city."""
        runs.append(city)
        return {"city": city, "temperature": 21}

    agent = RealtimeAgent(
        name="Weather",
        instructions="Answer briefly.",
        tools=[get_weather],
        input_guardrails=[guardrail],
    )
    return agent, runs


def test_a_tripped_turn_runs_no_tool_and_the_refusal_is_said() -> None:
    @input_guardrail
    async def no_weather(agent: Any, text: str) -> GuardrailResult:
        return GuardrailResult("weather" in text.lower(), {"checked": text})

    agent, runs = weather_agent(no_weather)

    async def body() -> None:
        async with (
            local_server() as url,
            LiveSession(
                agent, url=url, input_guardrail_refusal="I cannot talk about that."
            ) as session,
        ):
            await speak(session)
            events = await until(session, lambda seen: "I cannot talk about that." in said(seen))
            [tripped] = [e for e in events if isinstance(e, InputGuardrailTrippedEvent)]
            assert tripped.guardrails == ("no_weather",)
            assert "weather" in tripped.text.lower()
            assert tripped.refusal == "I cannot talk about that."
            await asyncio.sleep(0.5)  # the backend had the refusal as the call's output by now
            assert runs == []
            assert not [e for e in events if isinstance(e, ToolStartEvent)]

    asyncio.run(asyncio.wait_for(body(), 120))


def test_a_turn_that_passes_runs_its_tool() -> None:
    checked: list[str] = []

    @input_guardrail
    async def no_passwords(agent: Any, text: str) -> GuardrailResult:
        checked.append(text)
        return GuardrailResult("password" in text.lower())

    agent, runs = weather_agent(no_passwords)

    async def body() -> None:
        async with local_server() as url, LiveSession(agent, url=url) as session:
            await speak(session)
            events = await until(session, lambda seen: "Paris." in said(seen))
            assert runs == ["Paris"]
            assert any(isinstance(e, ToolEndEvent) for e in events)
            assert not [e for e in events if isinstance(e, InputGuardrailTrippedEvent)]
            assert checked
            assert "weather" in checked[0].lower()

    asyncio.run(asyncio.wait_for(body(), 120))


def test_a_raising_guardrail_is_reported_and_counts_as_not_tripped() -> None:
    @input_guardrail
    async def broken(agent: Any, text: str) -> GuardrailResult:
        raise RuntimeError("the policy service is down")

    agent, runs = weather_agent(broken)

    async def body() -> None:
        async with local_server() as url, LiveSession(agent, url=url) as session:
            await speak(session)
            events = await until(session, lambda seen: "Paris." in said(seen))
            errors = [e for e in events if isinstance(e, ErrorEvent)]
            assert errors
            assert errors[0].source == "guardrail"
            assert "policy service is down" in errors[0].message
            assert runs == ["Paris"]

    asyncio.run(asyncio.wait_for(body(), 120))
