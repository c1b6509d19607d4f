"""Tool approvals: the call waits for the application, which approves or rejects it (once, or
for the rest of the session); misuse is an error at once; closing while a call waits leaves
nothing behind."""

from __future__ import annotations

import asyncio

import pytest

from tests.asyncio.agent_helpers import (
    agent_session,
    ask,
    counting_tool,
    last_assistant_text,
    of_type,
    settle,
)
from tests.asyncio.helpers import MANUAL, assert_only_current_task, run, serving, until
from voxwire.agents import RealtimeAgent, ToolCall
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import ToolApprovalRequestedEvent, ToolStartEvent
from voxwire.exceptions import InvalidState
from voxwire.server import Scenario

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "paris", "call": {"name": "book", "arguments": {"city": "Paris"}}},
            {"match": "rome", "call": {"name": "book", "arguments": {"city": "Rome"}}},
            {"after_tool": "book", "say": "Tool said: {output}"},
        ],
        "fallback": "You said: {text}",
    }
)


def booking_agent(needs_approval: object = True) -> tuple[RealtimeAgent, list[str]]:
    book, booked = counting_tool(
        "book", lambda city: f"booked {city}", needs_approval=needs_approval
    )
    return RealtimeAgent(name="agent", tools=[book]), booked


async def approval_request(session: RealtimeSession, text: str) -> ToolApprovalRequestedEvent:
    """Send ``text``; the approval request the call it leads to waits on."""
    await session.send_message(text)
    request = (await until(session, "tool_approval_requested"))[-1]
    assert isinstance(request, ToolApprovalRequestedEvent)
    return request


def test_an_approved_call_runs_after_the_request() -> None:
    agent, booked = booking_agent()

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            request = await approval_request(session, "book paris")
            assert (request.name, request.agent) == ("book", agent)
            assert session.pending_tool_approvals == (request.call_id,)
            assert booked == []
            session.approve_tool_call(request.call_id)
            events = await settle(session)
            assert booked == ["Paris"]
            assert [e.call_id for e in of_type(events, ToolStartEvent)] == [request.call_id]
            assert last_assistant_text(session) == "Tool said: booked Paris"
            with pytest.raises(InvalidState, match="no tool call"):
                session.approve_tool_call(request.call_id)  # answered already

    run(body())


def test_a_rejected_call_does_not_run_and_the_model_gets_the_message() -> None:
    agent, booked = booking_agent()

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            request = await approval_request(session, "book paris")
            session.reject_tool_call(request.call_id, message="The user said no.")
            events = await settle(session)
            assert booked == []
            assert not of_type(events, ToolStartEvent)
            assert last_assistant_text(session) == "Tool said: The user said no."

    run(body())


def test_always_answers_later_calls_of_the_tool() -> None:
    agent, booked = booking_agent()

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            request = await approval_request(session, "book paris")
            session.approve_tool_call(request.call_id, always=True)
            await settle(session)
            events = await ask(session, "book rome")
            assert not of_type(events, ToolApprovalRequestedEvent)
            assert booked == ["Paris", "Rome"]

    run(body())


def test_an_approval_policy_decides_per_call() -> None:
    async def only_rome(call: ToolCall) -> bool:
        await asyncio.sleep(0)
        return call.arguments["city"] == "Rome"

    agent, booked = booking_agent(only_rome)

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            events = await ask(session, "book paris")
            assert not of_type(events, ToolApprovalRequestedEvent)
            assert booked == ["Paris"]
            request = await approval_request(session, "book rome")
            session.approve_tool_call(request.call_id)
            await settle(session)
            assert booked == ["Paris", "Rome"]

    run(body())


def test_answering_an_unknown_call_is_an_error_at_once() -> None:
    agent, _ = booking_agent()

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            with pytest.raises(InvalidState, match="waiting: none"):
                session.approve_tool_call("call_nope")
            with pytest.raises(InvalidState):
                session.reject_tool_call("call_nope")

    run(body())


def test_close_while_a_call_waits_for_approval_leaves_no_task() -> None:
    agent, booked = booking_agent()

    async def body() -> None:
        async with serving(scenario=SCENARIO) as server:
            session = RealtimeSession(agent, url=server.url(), config=MANUAL)
            await session.connect()
            request = await approval_request(session, "book paris")
            await session.close()
            assert session.pending_tool_approvals == ()
            with pytest.raises(InvalidState):
                session.approve_tool_call(request.call_id)
            assert booked == []
        assert_only_current_task()

    run(body())
