"""Hosted MCP through the session's public API, against the local server playing MCP servers
from a scenario: tools listed and available, calls with and without approval (approved,
rejected, sticky), a failing call, a failed listing, and tools going away with a switch."""

from __future__ import annotations

from typing import Any

import pytest

from voxwire.agents import HostedMCPTool, RealtimeAgent
from voxwire.asyncio import (
    McpApprovalRequestedEvent,
    McpCallDoneEvent,
    McpCallStartedEvent,
    McpToolsChangedEvent,
    RealtimeSession,
    ReconnectPolicy,
    SessionEvent,
    SpeechCreatedEvent,
)
from voxwire.asyncio.events import ErrorEvent
from voxwire.exceptions import InvalidState
from voxwire.protocol import McpApprovalResponseItem
from voxwire.server import Drop

from ..server.helpers import MCP_DOCS
from .agent_helpers import agent_session, last_assistant_text, of_type, settle
from .helpers import MANUAL, run, serving, until

SCENARIO = MCP_DOCS


def docs(**options: Any) -> HostedMCPTool:
    options.setdefault("require_approval", {"never": ["search", "delete_page"]})
    return HostedMCPTool(server_label="docs", server_url="https://mcp.example.test/docs", **options)


def agent(*tools: HostedMCPTool) -> RealtimeAgent:
    return RealtimeAgent(name="Docs", instructions="Answer from the docs.", tools=list(tools))


async def listed(session: RealtimeSession) -> McpToolsChangedEvent:
    events = await until(session, "mcp_tools_changed")
    changed = events[-1]
    assert isinstance(changed, McpToolsChangedEvent)
    return changed


async def publish_request(session: RealtimeSession) -> McpApprovalRequestedEvent:
    """Ask for a publication; the approval request it brings."""
    await listed(session)
    await session.send_message("publish the page")
    request = (await until(session, "mcp_approval_requested"))[-1]
    assert isinstance(request, McpApprovalRequestedEvent)
    return request


async def ask(session: RealtimeSession, text: str) -> list[SessionEvent]:
    await session.send_message(text)
    return await settle(session)


def test_the_tools_of_a_configured_server_are_available_on_the_session() -> None:
    async def body() -> None:
        async with agent_session(
            agent(docs(allowed_tools=["search", "publish"])), SCENARIO
        ) as session:
            changed = await listed(session)
            assert [(t.server_label, t.name) for t in changed.tools] == [
                ("docs", "search"),
                ("docs", "publish"),
            ]
            assert changed.tools[0].description == "Search the docs"
            assert changed.tools[0].annotations == {"readOnlyHint": True}
            assert session.available_mcp_tools == changed.tools

    run(body())


def test_a_call_without_approval_runs_and_the_model_speaks_its_output() -> None:
    async def body() -> None:
        async with agent_session(agent(docs()), SCENARIO) as session:
            await listed(session)
            events = await ask(session, "search the docs")
            (started,) = of_type(events, McpCallStartedEvent)
            (done,) = of_type(events, McpCallDoneEvent)
            assert (started.server_label, started.name, started.arguments) == (
                "docs",
                "search",
                '{"q":"x"}',
            )
            assert (done.item_id, done.output, done.error) == (
                started.item_id,
                "Three pages match.",
                None,
            )
            assert done.response_id == started.response_id != ""
            # The session asked for the next response itself (mcp_follow_up).
            assert [(s.source, s.user_initiated) for s in of_type(events, SpeechCreatedEvent)] == [
                ("response", True),
                ("tool_response", False),
            ]
            assert last_assistant_text(session) == "Found: Three pages match."

    run(body())


def test_an_approved_call_runs_after_approve_tool_call() -> None:
    async def body() -> None:
        async with agent_session(agent(docs()), SCENARIO) as session:
            request = await publish_request(session)
            assert (request.server_label, request.name) == ("docs", "publish")
            session.approve_tool_call(request.call_id)
            events = await until(session, lambda e: isinstance(e, McpCallDoneEvent))
            events += await settle(session)
            (done,) = of_type(events, McpCallDoneEvent)
            assert done.output == "Published."
            assert last_assistant_text(session) == "Publishing: Published."
            with pytest.raises(InvalidState, match="waiting"):
                session.approve_tool_call(request.call_id)  # answered once

    run(body())


def test_a_rejected_call_sends_the_reason_and_does_not_run() -> None:
    async def body() -> None:
        async with agent_session(agent(docs()), SCENARIO) as session:
            request = await publish_request(session)
            session.reject_tool_call(request.call_id, message="not today")
            events = await until(session, "response_done")
            events += await settle(session)
            assert not of_type(events, McpCallDoneEvent)
            assert last_assistant_text(session) == (
                "Publishing: The user declined this tool call; it was not run."
            )
            answers = [
                item
                for item in session.protocol.conversation.items()
                if isinstance(item, McpApprovalResponseItem)
            ]
            assert [(a.approval_request_id, a.approve, a.reason) for a in answers] == [
                (request.call_id, False, "not today")
            ]

    run(body())


def test_always_answers_later_requests_for_the_same_tool_without_asking() -> None:
    async def body() -> None:
        async with agent_session(agent(docs()), SCENARIO) as session:
            request = await publish_request(session)
            session.approve_tool_call(request.call_id, always=True)
            await until(session, lambda e: isinstance(e, McpCallDoneEvent))
            await settle(session)
            await session.send_message("publish it again")
            events = await until(session, lambda e: isinstance(e, McpCallDoneEvent))
            events += await settle(session)
            assert not of_type(events, McpApprovalRequestedEvent)
            assert last_assistant_text(session) == "Publishing: Published."

    run(body())


def test_a_failing_call_reports_its_error_to_the_application_and_the_model() -> None:
    async def body() -> None:
        async with agent_session(agent(docs()), SCENARIO) as session:
            await listed(session)
            events = await ask(session, "delete the page")
            (done,) = of_type(events, McpCallDoneEvent)
            assert (done.output, done.error) == (None, "permission denied")
            assert last_assistant_text(session) == "Sorry: permission denied"

    run(body())


def test_without_follow_up_the_application_asks_for_the_next_response() -> None:
    async def body() -> None:
        async with agent_session(agent(docs()), SCENARIO, mcp_follow_up=False) as session:
            await listed(session)
            events = await ask(session, "search the docs")
            assert len(of_type(events, SpeechCreatedEvent)) == 1
            handle = await session.create_response()
            await handle
            assert last_assistant_text(session) == "Found: Three pages match."

    run(body())


def test_a_failed_listing_is_an_error_and_lists_nothing() -> None:
    async def body() -> None:
        broken = HostedMCPTool(server_label="broken", server_url="https://down.example.test")
        async with agent_session(agent(broken), SCENARIO) as session:
            events = await until(session, "error")
            (error,) = of_type(events, ErrorEvent)
            assert (error.source, error.recoverable) == ("tool", True)
            assert "listing the tools" in error.message
            assert session.available_mcp_tools == ()

    run(body())


def test_tools_go_away_when_the_agent_without_the_server_takes_over() -> None:
    async def body() -> None:
        async with agent_session(agent(docs()), SCENARIO) as session:
            assert len((await listed(session)).tools) == 3
            await session.update_agent(RealtimeAgent(name="Plain", instructions="Chat."))
            assert (await listed(session)).tools == ()
            assert session.available_mcp_tools == ()

    run(body())


def test_after_a_reconnection_old_requests_are_gone_and_the_tools_are_listed_again() -> None:
    async def body() -> None:
        policy = ReconnectPolicy(attempts=2, backoff_s=0)
        async with (
            serving(scenario=SCENARIO) as server,
            RealtimeSession(
                agent(docs()), url=server.url(), config=MANUAL, reconnect=policy
            ) as session,
        ):
            request = await publish_request(session)
            await server.connections[-1].inject(Drop())
            events = await until(session, "reconnected")
            with pytest.raises(InvalidState, match="waiting"):
                session.approve_tool_call(request.call_id)
            # The new server session lists the same tools: nothing changed for the application.
            assert len(session.available_mcp_tools) == 3
            events += await ask(session, "search the docs")
            assert last_assistant_text(session) == "Found: Three pages match."
            assert not of_type(events, ErrorEvent)

    run(body())
