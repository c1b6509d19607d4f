"""``update_agent`` and agent resolution: everything dynamic is settled before anything is
sent; a failure halfway changes nothing; a rejected update keeps the previous agent; failures
during entry release everything."""

from __future__ import annotations

import asyncio

import pytest

from tests.asyncio.agent_helpers import agent_session, of_type, session_config
from tests.asyncio.helpers import assert_only_current_task, run, serving, until
from voxwire.agents import RealtimeAgent, function_tool, handoff
from voxwire.asyncio import RealtimeSession, SessionState
from voxwire.asyncio.events import AgentEndEvent, AgentStartEvent
from voxwire.exceptions import ConfigurationError
from voxwire.protocol.config import FunctionTool
from voxwire.testing import ScriptedServer


@function_tool
async def lookup(query: str) -> str:
    return "found"


def broken_policy(agent: RealtimeAgent) -> bool:
    raise RuntimeError("the feature flag service is down")


@function_tool(is_enabled=broken_policy)
async def flaky(query: str) -> str:
    return "never offered"


async def later_instructions(agent: RealtimeAgent) -> str:
    await asyncio.sleep(0)
    return f"You are {agent.name}."


def test_update_agent_switches_instructions_tools_and_emits_the_transition() -> None:
    first = RealtimeAgent(name="first", instructions="One.", tools=[lookup])
    second = RealtimeAgent(name="second", instructions=later_instructions)

    async def body() -> None:
        async with agent_session(first, wait_for_session_updated=True) as session:
            await session.update_agent(second)
            assert session.agent is second
            config = session_config(session)
            assert config.instructions == "You are second."
            assert config.tools == []  # the previous agent's tools are gone
            events = await until(
                session, lambda e: isinstance(e, AgentStartEvent) and e.agent is second
            )
            assert [e.agent for e in of_type(events, AgentEndEvent)] == [first]
            assert [e.agent for e in of_type(events, AgentStartEvent)] == [first, second]

    run(body())


@pytest.mark.parametrize(
    "broken",
    [
        RealtimeAgent(name="bad_tool", instructions=later_instructions, tools=[lookup, flaky]),
        RealtimeAgent(name="bad_target", instructions="Fine.", handoffs=[handoff(lambda: 42)]),  # type: ignore[arg-type,return-value]
        RealtimeAgent(name="bad_instructions", instructions=lambda agent: 3),  # type: ignore[arg-type,return-value]
    ],
    ids=["tool", "handoff", "instructions"],
)
def test_update_agent_failing_halfway_changes_nothing(broken: RealtimeAgent) -> None:
    first = RealtimeAgent(name="first", instructions="One.", tools=[lookup])
    server = ScriptedServer()

    async def body() -> None:
        async with RealtimeSession(first, connector=server.connect) as session:
            await until(session, "agent_start")
            updates = len(server.sent_of_type("session.update"))
            with pytest.raises((RuntimeError, ConfigurationError)):
                await session.update_agent(broken)
            assert len(server.sent_of_type("session.update")) == updates  # nothing sent
            assert session.agent is first
            # The session goes on with the first agent's tools.
            await session.send_message("still there?")
            await server.wait_for("response.create")
            await session.close()
            close_events = [e async for e in session]
            assert [e.type for e in close_events][-2:] == ["agent_end", "close"]
            assert [e.agent for e in of_type(close_events, AgentEndEvent)] == [first]

    run(body())


def test_an_update_the_server_rejects_keeps_the_previous_agent() -> None:
    first = RealtimeAgent(name="first", instructions="One.")
    odd = RealtimeAgent(name="odd", instructions="Two.", voice="not-a-voice")

    async def body() -> None:
        async with agent_session(first, wait_for_session_updated=True) as session:
            with pytest.raises(ConfigurationError, match="rejected"):
                await session.update_agent(odd)
            assert session.agent is first
            assert session_config(session).instructions == "One."

    run(body())


def test_update_agent_misuse_is_an_error_at_once() -> None:
    async def body() -> None:
        session = RealtimeSession(url="ws://127.0.0.1:9/v1/realtime")
        with pytest.raises(Exception, match="connect"):
            await session.update_agent(RealtimeAgent(name="a"))
        async with serving() as server, RealtimeSession(url=server.url()) as open_session:
            with pytest.raises(ConfigurationError, match="expected a RealtimeAgent"):
                await open_session.update_agent("agent")  # type: ignore[arg-type]

    run(body())


@pytest.mark.parametrize(
    "agent",
    [
        RealtimeAgent(name="bad_tool", instructions="Fine.", tools=[flaky]),
        RealtimeAgent(name="bad_target", handoffs=[handoff(lambda: 42)]),  # type: ignore[arg-type,return-value]
        RealtimeAgent(
            name="clash",
            tools=[lookup, FunctionTool(name="lookup")],
        ),
    ],
    ids=["tool", "handoff", "name_clash"],
)
def test_resolution_failing_during_entry_releases_everything(agent: RealtimeAgent) -> None:
    async def body() -> None:
        async with serving() as server:
            session = RealtimeSession(agent, url=server.url())
            with pytest.raises((RuntimeError, ConfigurationError)):
                await session.connect()
            assert session.state is SessionState.CLOSED
            events = [e async for e in session]
            assert events[-1].type == "close"
            assert not of_type(events, AgentStartEvent)  # no agent ever started
        assert_only_current_task()

    run(body())
