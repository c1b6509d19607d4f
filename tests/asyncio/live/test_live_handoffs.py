"""Handoffs over GPT-Live against the local server (real websocket, webrtcvad, Whisper, hibari):
the Responses backend calls the transfer tool, the session updates the backend's tools
(``session.update``, accepted), appends the new agent's instructions, keeps the voice and says
so, and the new agent's tool then runs; what the API does not allow is refused clearly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from tests.asyncio.live.speech import say
from tests.asyncio.live.test_live_session import until
from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import AgentStartEvent, ErrorEvent, HandoffEvent, ToolEndEvent
from voxwire.asyncio.live import LiveSession, LiveTranscriptEvent
from voxwire.asyncio.live.agents.handoffs import MAX_APPENDED_CHARS, handoff_instructions
from voxwire.exceptions import ConfigurationError
from voxwire.server import RealtimeServer, Scenario
from voxwire.server.engines.transcribe import WhisperTranscriber

pytestmark = pytest.mark.skipif(
    not WhisperTranscriber.installed(), reason="needs the transcribe extra (faster-whisper)"
)

# The server's Live model: the triage agent hands invoices to Billing; once Billing's
# instructions are in the conversation and its tool declared, a refund request calls it.
SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {
                "instructions": "You are now Billing",
                "match": "refund",
                "call": {"name": "refund", "arguments": {"invoice": "42"}},
            },
            {"after_handoff": "Billing", "say": "Billing here."},
            {"after_tool": "refund", "say": "Refund {output.status}."},
            {"match": "invoice|refund", "handoff": "Billing"},
        ]
    }
)


@function_tool
async def refund(invoice: str) -> dict[str, Any]:
    """Refund an invoice."""
    return {"invoice": invoice, "status": "done"}


BILLING = RealtimeAgent(
    name="Billing", instructions="Handle refunds.", tools=[refund], voice="cedar"
)
TRIAGE = RealtimeAgent(name="Triage", instructions="Route the caller.", handoffs=[BILLING])


async def ask_for_refund(session: LiveSession) -> None:
    await say(session, "I want a refund for my invoice.")


@asynccontextmanager
async def local_server() -> AsyncIterator[str]:
    async with RealtimeServer(scenario=SCENARIO, tts="hibari") as server:
        yield f"{server.base_url}/live/sessions"


def said(events: list[Any]) -> str:
    return "".join(
        e.delta for e in events if isinstance(e, LiveTranscriptEvent) and e.role == "assistant"
    )


def test_a_handoff_switches_tools_and_instructions_and_keeps_the_voice() -> None:
    async def body() -> None:
        async with local_server() as url, LiveSession(TRIAGE, url=url) as session:
            start = session.protocol.session
            assert start is not None
            tools = start.delegation.responses.tools  # type: ignore[union-attr]
            assert [t["name"] for t in tools] == ["transfer_to_billing"]
            await ask_for_refund(session)
            events = await until(session, lambda seen: "Billing here." in said(seen))
            [handoff] = [e for e in events if isinstance(e, HandoffEvent)]
            assert (handoff.from_agent, handoff.to_agent) == (TRIAGE, BILLING)
            assert any(isinstance(e, AgentStartEvent) and e.agent is BILLING for e in events)
            [voice] = [e for e in events if isinstance(e, ErrorEvent)]
            assert voice.code == "voice_fixed"
            assert "'cedar'" in voice.message
            assert session.agent is BILLING
            now = session.protocol.session
            assert now is not None
            assert now.audio.output.voice == "marin"  # type: ignore[union-attr]
            tools = now.delegation.responses.tools  # type: ignore[union-attr]
            assert [t["name"] for t in tools] == ["refund"]
            # Billing's tool is in force: the same request now calls it, and it runs here.
            await ask_for_refund(session)
            events = await until(session, lambda seen: "Refund done." in said(seen))
            [ended] = [e for e in events if isinstance(e, ToolEndEvent)]
            assert (ended.name, ended.output) == ("refund", '{"invoice":"42","status":"done"}')

    asyncio.run(body())


def test_what_a_live_handoff_cannot_carry_is_refused() -> None:
    assert handoff_instructions(BILLING, "Handle refunds.").startswith("You are now Billing;")
    long = RealtimeAgent(name="Long", instructions="x" * MAX_APPENDED_CHARS)
    with pytest.raises(ConfigurationError, match="too long to hand off"):
        handoff_instructions(long, long.instructions)  # type: ignore[arg-type]
    triage = RealtimeAgent(name="Triage", handoffs=[long])

    async def body() -> None:
        async with local_server() as url:

            async def answer(request: Any) -> str:
                return "ok"

            session = LiveSession(triage, url=url, delegation="client", backend=answer)
            with pytest.raises(ConfigurationError, match="delegation='responses'"):
                await session.connect()

    asyncio.run(body())


def test_a_handoff_that_cannot_happen_changes_nothing_and_tells_the_backend() -> None:
    wordy = RealtimeAgent(name="Billing", instructions="Be thorough. " * 200, tools=[refund])
    triage = RealtimeAgent(name="Triage", instructions="Route the caller.", handoffs=[wordy])

    async def body() -> None:
        async with local_server() as url, LiveSession(triage, url=url) as session:
            await ask_for_refund(session)
            events = await until(session, lambda seen: "Billing here." in said(seen))
            [error] = [e for e in events if isinstance(e, ErrorEvent)]
            assert "too long to hand off" in error.message
            assert not any(isinstance(e, HandoffEvent) for e in events)
            assert session.agent is triage
            [delegation] = session.protocol.delegations
            [output] = [a for a in delegation.answers if a.kind == "function_output"]
            assert output.content.startswith("The transfer to Billing failed")
            now = session.protocol.session
            assert now is not None
            tools = now.delegation.responses.tools  # type: ignore[union-attr]
            assert [t["name"] for t in tools] == ["transfer_to_billing"]

    asyncio.run(body())
