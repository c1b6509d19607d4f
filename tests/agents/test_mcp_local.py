"""Local MCP servers as the agent's tools, end to end: the local realtime server's scenario
calls a tool by name, the session runs it on a real MCP server (tests/agents/mcp_server.py,
over stdio or streamable HTTP) through the function-tool machinery."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.asyncio.agent_helpers import agent_session, ask, last_assistant_text, of_type
from tests.asyncio.helpers import run
from tests.children import ROOT, child_env
from voxwire.agents import MCPServerStdio, RealtimeAgent
from voxwire.asyncio.events import ToolEndEvent
from voxwire.server import Scenario

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "call": {"name": "weather", "arguments": {"city": "Paris"}}},
            {"after_tool": "weather", "say": "Tool said: {output}"},
        ],
        "fallback": "You said: {text}",
    }
)


def stdio_server(name: str = "test", runs: Path | None = None, **options: object) -> MCPServerStdio:
    env = child_env(**({"VOXWIRE_MCP_RUNS": str(runs)} if runs is not None else {}))
    return MCPServerStdio(
        name=name,
        command=sys.executable,
        args=["-m", "tests.agents.mcp_server"],
        env=env,
        cwd=str(ROOT),
        **options,  # type: ignore[arg-type]
    )


def test_a_turn_calls_a_stdio_mcp_tool() -> None:
    agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server()])

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            events = await ask(session, "what is the weather")
            assert last_assistant_text(session) == "Tool said: Sunny in Paris"
            assert [e.name for e in of_type(events, ToolEndEvent)] == ["weather"]

    run(body())
