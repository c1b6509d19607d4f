"""Helpers shared by the agent-feature tests (tools, approvals, handoffs, guardrails, agent
updates) and the session fault tests: a session on the local server, one turn asked and settled,
tools that count or never answer, and the checks those tests share."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from tests.asyncio.helpers import FAST, MANUAL, SCENARIO, all_done, serving, until
from voxwire.agents import FunctionTool, RealtimeAgent, function_tool
from voxwire.asyncio import RealtimeSession, SessionEvent
from voxwire.asyncio.events import ErrorEvent, ResponseDoneEvent, ToolEndEvent
from voxwire.asyncio.events.history import HistoryMessage
from voxwire.protocol.config import FunctionTool as FunctionToolDeclaration
from voxwire.protocol.config import SessionConfig
from voxwire.server import Pacing, Scenario


@asynccontextmanager
async def agent_session(
    agent: RealtimeAgent | None,
    scenario: Scenario = SCENARIO,
    *,
    pacing: Pacing = FAST,
    **options: Any,
) -> AsyncIterator[RealtimeSession]:
    """A text-only session of ``agent`` whose turns the test drives (``MANUAL``), on the local
    server playing ``scenario``; ``options`` go to the session."""
    async with (
        serving(scenario=scenario, pacing=pacing) as server,
        RealtimeSession(agent, url=server.url(), config=MANUAL, **options) as session,
    ):
        yield session


async def ask(session: RealtimeSession, text: str) -> list[SessionEvent]:
    """Send ``text`` as the user; the events until all it set going (tools, follow-ups) is done."""
    await session.send_message(text)
    return await settle(session)


async def settle(session: RealtimeSession, *, timeout_s: float = 15.0) -> list[SessionEvent]:
    """Events until every response asked for has run and no tool call is unfinished."""
    return await until(
        session,
        lambda e: (
            isinstance(e, ResponseDoneEvent)
            and all_done(session)
            and session.tool_calls_in_progress == 0
        ),
        timeout_s=timeout_s,
    )


def of_type(events: list[SessionEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def last_assistant_text(session: RealtimeSession) -> str:
    message = [i for i in session.history if isinstance(i, HistoryMessage)][-1]
    assert message.role == "assistant"
    return message.text


def counting_tool(
    name: str = "get_weather",
    answer: Callable[[str], Any] = lambda city: "sunny",
    **options: Any,
) -> tuple[FunctionTool, list[str]]:
    """A tool of one ``city`` argument answering ``answer(city)``, and the list of the cities it
    ran for (so a test sees how often it ran, and with what); ``options`` go to function_tool."""
    cities: list[str] = []

    async def tool(city: str) -> Any:
        cities.append(city)
        return answer(city)

    return function_tool(name=name, **options)(tool), cities


class StuckTool:
    """A ``get_weather`` tool (``.tool``) that never answers: ``started`` is set once it runs,
    ``cancelled`` once it is cancelled (by its timeout or by close); ``options`` go to
    function_tool."""

    def __init__(self, **options: Any) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

        async def get_weather(city: str) -> str:
            self.started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
            return "never"

        self.tool = function_tool(**options)(get_weather)


def tool_error(events: list[SessionEvent]) -> ErrorEvent:
    """The one error event among ``events``: a tool's, and recoverable (the session goes on)."""
    error: ErrorEvent
    (error,) = of_type(events, ErrorEvent)
    assert (error.source, error.recoverable) == ("tool", True)
    return error


def tool_failure(
    events: list[SessionEvent], error_type: type[BaseException]
) -> tuple[ToolEndEvent, ErrorEvent]:
    """The one tool_end among ``events``, ended by an ``error_type``, and the one (tool,
    recoverable) error event reporting that same exception."""
    (end,) = of_type(events, ToolEndEvent)
    assert isinstance(end.error, error_type)
    error = tool_error(events)
    assert error.exception is end.error
    return end, error


def session_config(session: RealtimeSession) -> SessionConfig:
    """The session configuration the server confirmed last."""
    config = session.protocol.session
    assert config is not None
    return config


def server_tools(session: RealtimeSession) -> list[str]:
    """The names of the function tools the server holds for the session."""
    tools = session_config(session).tools
    declared = tools if isinstance(tools, list) else []
    return [t.name for t in declared if isinstance(t, FunctionToolDeclaration)]
