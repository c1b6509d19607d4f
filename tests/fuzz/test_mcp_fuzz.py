"""Malformed answers of a local MCP server never crash the session's MCP client: a tool
listing or a call result of any shape (wrong types, missing fields, not JSON) becomes tools
left out, an exception the tool machinery reports, or text — never an escape of anything
else, and the server's process is stopped at close (tests/agents/mcp_junk_server.py plays the
server; the conversions are also fuzzed alone, many more times)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError

from tests.agents.test_mcp_local import children
from tests.children import ROOT, child_env
from voxwire.agents import MCPServerStdio, RealtimeAgent
from voxwire.agents.call import ToolCall, ToolContext
from voxwire.agents.mcp_local import exposed_names
from voxwire.agents.tool import FunctionTool, ToolProgress
from voxwire.asyncio.agents.mcp_local import (
    MAX_OUTPUT_CHARS,
    LocalMcp,
    McpToolError,
    result_text,
    tool_schema,
)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
CONTENT = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image", "audio", "resource", "weird"]) | JSON},
    optional={"text": JSON, "data": JSON, "mimeType": JSON, "resource": JSON},
)
RESULT = (
    st.fixed_dictionaries(
        {},
        optional={
            "content": st.lists(CONTENT, max_size=3) | JSON,
            "isError": JSON,
            "structuredContent": JSON,
        },
    )
    | JSON
)
GOOD_TOOL = {"name": "echo", "inputSchema": {"type": "object", "properties": {}}}
TOOL = st.fixed_dictionaries(
    {}, optional={"name": JSON | st.just("echo"), "inputSchema": JSON, "description": JSON}
)


LINES = (
    RESULT.map(lambda r: json.dumps({"jsonrpc": "2.0", "id": "ID", "result": r}))
    | st.text(max_size=40)
    | JSON.map(json.dumps)
    | st.just('{"jsonrpc": "2.0", "id": "ID", "error": {"code": "x"}}')
).map(lambda line: line.replace('"ID"', "{id}"))


async def run_tool(tool: FunctionTool, request: ToolCall) -> list[Any]:
    """What the tool's function yields (progress, then the result), as the executor reads it."""
    return [value async for value in tool.function(ToolContext(call=request))]


async def exercise(listing: str, call: str) -> None:
    server = MCPServerStdio(
        name="junk",
        command=sys.executable,
        args=["-m", "tests.agents.mcp_junk_server"],
        env=child_env(VOXWIRE_MCP_LIST=listing, VOXWIRE_MCP_CALL=call),
        cwd=str(ROOT),
        timeout_s=2,
    )
    agent = RealtimeAgent(name="agent", mcp_servers=[server])
    errors: list[Any] = []

    async def changed() -> None:
        return None

    mcp = LocalMcp(errors.append, changed)
    try:
        await mcp.connect(agent)
        named = mcp.tools(agent)
        assert named is not None
        for tool in named(frozenset()):
            request = ToolCall(
                call_id="c", name=tool.name, arguments={}, raw_arguments="{}", agent=agent
            )
            try:
                yielded = await asyncio.wait_for(run_tool(tool, request), 3)
            except (McpToolError, MCPError, asyncio.TimeoutError):
                continue  # an error output the tool machinery reports (or its timeout)
            *updates, output = yielded
            assert all(isinstance(u, ToolProgress) for u in updates)
            assert isinstance(output, str)
    finally:
        await mcp.aclose()


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(tools=st.lists(TOOL, max_size=3), line=LINES)
def test_malformed_listings_and_results_never_escape(tools: list[Any], line: str) -> None:
    before = children()
    listing = json.dumps({"jsonrpc": "2.0", "id": "ID", "result": {"tools": [GOOD_TOOL, *tools]}})
    asyncio.run(asyncio.wait_for(exercise(listing.replace('"ID"', "{id}"), line), 30))
    assert children() - before == set()


@settings(max_examples=400, deadline=None)
@given(result=RESULT)
def test_any_result_shape_reads_as_bounded_text(result: Any) -> None:
    from mcp.types import CallToolResult
    from pydantic import ValidationError

    readings = [result_text(result)]
    # What the SDK refuses makes the call raise: the tool machinery reports that.
    with contextlib.suppress(ValidationError, TypeError, ValueError):
        readings.append(result_text(CallToolResult.model_validate(result)))
    for text, failed in readings:
        assert isinstance(text, str)
        assert len(text) <= MAX_OUTPUT_CHARS + 40
        assert isinstance(failed, bool)


@settings(max_examples=400, deadline=None)
@given(
    schema=JSON,
    names=st.lists(st.lists(st.text(max_size=70), max_size=4), max_size=3),
    taken=st.frozensets(st.text(max_size=10), max_size=3),
)
def test_schemas_and_names_are_always_usable(
    schema: Any, names: list[list[str]], taken: frozenset[str]
) -> None:
    made = tool_schema(schema)
    assert made["type"] == "object"
    assert isinstance(made["properties"], dict)
    listings = [(f"s{index}", tools) for index, tools in enumerate(names)]
    exposed = exposed_names(taken, listings)
    assert len(set(exposed.values())) == len(exposed)
    assert not set(exposed.values()) & taken
    assert all(0 < len(name) <= 64 for name in exposed.values())
