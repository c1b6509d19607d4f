"""A LiveSession agent with a local MCP server, end to end against the local server's Live
emulation: a spoken question (hibari's voice, Whisper on the server) makes the model call the
stdio server's tool; the server process is gone after close."""

from __future__ import annotations

import asyncio

import pytest

from tests.agents.test_mcp_local import children, stdio_server
from tests.asyncio.live.test_live_session import said, speak, until
from voxwire.agents import RealtimeAgent
from voxwire.asyncio import HandoffEvent, ToolEndEvent
from voxwire.asyncio.live import LiveSession
from voxwire.server import RealtimeServer, Scenario
from voxwire.server.engines.transcribe import WhisperTranscriber

pytestmark = pytest.mark.skipif(
    not WhisperTranscriber.installed(), reason="needs the transcribe extra (faster-whisper)"
)

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "call": {"name": "weather", "arguments": {"city": "Paris"}}},
            {"after_tool": "weather", "say": "{output}."},
        ]
    }
)


def test_a_spoken_live_turn_calls_a_stdio_mcp_tool() -> None:
    agent = RealtimeAgent(
        name="Weather", instructions="Answer briefly.", mcp_servers=[stdio_server()]
    )
    before = children()

    async def body() -> None:
        async with RealtimeServer(scenario=SCENARIO, tts="hibari") as server:
            url = f"{server.base_url}/live/sessions"
            async with LiveSession(agent, url=url) as session:
                assert len(children() - before) == 1
                await speak(session)
                events = await until(
                    session, lambda seen: any(isinstance(e, ToolEndEvent) for e in seen)
                )
                (end,) = [e for e in events if isinstance(e, ToolEndEvent)]
                assert (end.name, end.output) == ("weather", "Sunny in Paris")

    asyncio.run(asyncio.wait_for(body(), 120))
    assert children() - before == set()


HANDOFF_SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {
                "instructions": "You are now Forecaster",
                "match": "weather",
                "call": {"name": "weather", "arguments": {"city": "Paris"}},
            },
            {"after_tool": "weather", "say": "{output}."},
            {"after_handoff": "Forecaster", "say": "Forecaster here."},
            {"match": "weather", "handoff": "Forecaster"},
        ]
    }
)


def test_a_live_handoff_target_brings_its_mcp_servers() -> None:
    forecaster = RealtimeAgent(
        name="Forecaster", instructions="Give forecasts.", mcp_servers=[stdio_server()]
    )
    triage = RealtimeAgent(name="Triage", instructions="Route the caller.", handoffs=[forecaster])
    before = children()

    async def body() -> None:
        async with RealtimeServer(scenario=HANDOFF_SCENARIO, tts="hibari") as server:
            url = f"{server.base_url}/live/sessions"
            async with LiveSession(triage, url=url) as session:
                assert children() - before == set()  # triage has no servers
                await speak(session)
                events = await until(session, lambda seen: "Forecaster here." in said(seen))
                assert [e.to_agent for e in events if isinstance(e, HandoffEvent)] == [forecaster]
                assert len(children() - before) == 1  # the target's server, started
                tools = session.protocol.session.delegation.responses.tools  # type: ignore[union-attr]
                assert "weather" in [t["name"] for t in tools]
                await speak(session)  # the same question, now the forecaster's
                events = await until(
                    session, lambda seen: any(isinstance(e, ToolEndEvent) for e in seen)
                )
                (end,) = [e for e in events if isinstance(e, ToolEndEvent)]
                assert (end.name, end.output) == ("weather", "Sunny in Paris")

    asyncio.run(asyncio.wait_for(body(), 120))
    assert children() - before == set()
