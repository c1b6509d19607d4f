"""Handoffs: the model calls ``transfer_to_<agent>``, the session switches agents in place and
the new agent answers; the voice is kept once audio was produced; a handoff that cannot be made
leaves the agent as it was and tells the model."""

from __future__ import annotations

from typing import Any

from tests.asyncio.agent_helpers import (
    agent_session,
    ask,
    last_assistant_text,
    of_type,
    server_tools,
    session_config,
)
from tests.asyncio.helpers import run, until
from voxwire.agents import RealtimeAgent, function_tool, handoff
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import (
    AgentEndEvent,
    AgentStartEvent,
    ErrorEvent,
    HandoffEvent,
    SpeechCreatedEvent,
)
from voxwire.protocol.config import AudioConfig, AudioOutputConfig
from voxwire.server import Scenario
from voxwire.testing import ScriptedServer

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "invoice", "call": {"name": "transfer_to_billing", "arguments": {}}},
            {"after_tool": "transfer_to_billing", "say": "Billing here ({output})."},
        ],
        "fallback": "You said: {text}",
    }
)


@function_tool
async def refund(order: str) -> str:
    """Refund an order."""
    return "refunded"


def agents(**billing: Any) -> tuple[RealtimeAgent, RealtimeAgent]:
    settings: dict[str, Any] = {
        "name": "Billing",
        "instructions": "You handle invoices.",
        "tools": [refund],
        "handoff_description": "Invoices and refunds.",
        # Agents that refer to each other: a function returning the other one.
        "handoffs": [handoff(lambda: triage)],
    }
    settings.update(billing)
    billing_agent = RealtimeAgent(**settings)
    triage = RealtimeAgent(
        name="Triage", instructions="Route the user.", voice="ash", handoffs=[billing_agent]
    )
    return triage, billing_agent


def server_voice(session: RealtimeSession) -> object:
    config = session_config(session)
    assert isinstance(config.audio, AudioConfig)
    assert isinstance(config.audio.output, AudioOutputConfig)
    return config.audio.output.voice


def test_a_handoff_switches_the_agent_and_the_new_agent_answers() -> None:
    triage, billing = agents(voice="coral")

    async def body() -> None:
        async with agent_session(triage, SCENARIO, wait_for_session_updated=True) as session:
            assert server_tools(session) == ["transfer_to_billing"]
            events = await ask(session, "a question about my invoice")
            (moved,) = of_type(events, HandoffEvent)
            assert (moved.from_agent, moved.to_agent) == (triage, billing)
            after = events[events.index(moved) :]
            assert [e.type for e in after if e.type.startswith("agent_")][:2] == [
                "agent_end",
                "agent_start",
            ]
            assert [e.agent for e in of_type(after, AgentEndEvent)] == [triage]
            assert [e.agent for e in of_type(events, AgentStartEvent)] == [triage, billing]
            assert session.agent is billing
            assert session_config(session).instructions == "You handle invoices."
            assert server_tools(session) == ["refund", "transfer_to_triage"]
            assert server_voice(session) == "coral"  # no audio yet: the voice may change
            assert [e.source for e in of_type(events, SpeechCreatedEvent)] == [
                "response",
                "tool_response",
            ]
            assert last_assistant_text(session) == 'Billing here ({"assistant":"Billing"}).'
            assert not of_type(events, ErrorEvent)

    run(body())


def test_the_voice_is_kept_once_the_conversation_holds_audio() -> None:
    triage, _ = agents(voice="coral")
    server = ScriptedServer()

    async def body() -> None:
        async with RealtimeSession(triage, connector=server.connect) as session:
            await server.audio_response("Hello there.", [b"\x00\x01" * 480])
            await server.function_call_response(
                [("c1", "transfer_to_billing", "{}")], response_id="resp_2"
            )
            await until(session, "handoff")
            update = server.sent_of_type("session.update")[-1]["session"]
            assert update["instructions"] == "You handle invoices."
            assert "audio" not in update  # the API refuses a voice change after audio
            assert [t["name"] for t in update["tools"]] == ["refund", "transfer_to_triage"]

    run(body())


def test_a_failing_on_handoff_keeps_the_agent_and_tells_the_model() -> None:
    def refuse(agent: RealtimeAgent) -> None:
        raise RuntimeError("billing is closed")

    billing = RealtimeAgent(name="Billing", instructions="Invoices.")
    triage = RealtimeAgent(
        name="Triage", instructions="Route.", handoffs=[handoff(billing, on_handoff=refuse)]
    )

    async def body() -> None:
        async with agent_session(triage, SCENARIO, wait_for_session_updated=True) as session:
            events = await ask(session, "invoice please")
            (error,) = of_type(events, ErrorEvent)
            assert error.source == "agent"
            assert isinstance(error.exception, RuntimeError)
            assert not of_type(events, HandoffEvent)
            assert session.agent is triage
            assert session_config(session).instructions == "Route."
            assert last_assistant_text(session).startswith(
                "Billing here (The transfer to Billing failed: billing is closed."
            )

    run(body())


def test_a_handoff_the_server_rejects_keeps_the_agent() -> None:
    triage, _ = agents(voice="not-a-voice")

    async def body() -> None:
        async with agent_session(triage, SCENARIO, wait_for_session_updated=True) as session:
            events = await ask(session, "invoice please")
            sources = [e.source for e in of_type(events, ErrorEvent)]
            assert sources == ["server", "agent"]
            assert session.agent is triage
            assert server_tools(session) == ["transfer_to_billing"]
            assert last_assistant_text(session).startswith("Billing here (The transfer")

    run(body())
