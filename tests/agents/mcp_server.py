"""A local MCP server for the tests, written with the ``mcp`` SDK's server side.

``python -m tests.agents.mcp_server`` serves over stdio; ``... http PORT`` over streamable
HTTP on 127.0.0.1. Every call of a tool appends its name to the file ``VOXWIRE_MCP_RUNS``
names (when set), so a test can count runs across processes; ``gated`` waits for the file
``VOXWIRE_MCP_GATE`` names.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("voxwire-test")


def _ran(name: str) -> None:
    path = os.environ.get("VOXWIRE_MCP_RUNS")
    if path:
        with open(path, "a", encoding="utf-8") as runs:
            runs.write(f"{name}\n")


@app.tool()
def weather(city: str) -> str:
    """The weather in a city."""
    _ran("weather")
    return f"Sunny in {city}"


@app.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    _ran("add")
    return a + b


@app.tool()
def note(context: str) -> str:
    """Takes an argument named like the tool context."""
    _ran("note")
    return f"noted: {context}"


@app.tool()
async def steps(ctx: Context) -> str:
    """Reports its progress twice, then answers."""
    _ran("steps")
    await ctx.report_progress(1, 2, "Half way")
    await ctx.report_progress(2, 2)
    return "all done"


@app.tool()
def fail() -> str:
    """Always fails."""
    _ran("fail")
    raise ValueError("the disk is full")


@app.tool()
async def slow(seconds: float) -> str:
    """Waits, then answers."""
    _ran("slow")
    await asyncio.sleep(seconds)
    return "slow done"


@app.tool()
async def gated() -> str:
    """Waits until the file ``VOXWIRE_MCP_GATE`` names exists, then answers."""
    _ran("gated")
    gate = os.environ.get("VOXWIRE_MCP_GATE", "")
    while not os.path.exists(gate):  # noqa: ASYNC110, ASYNC240 - the test process makes it
        await asyncio.sleep(0.01)
    return "opened"


@app.tool()
async def die() -> str:
    """Ends the process in the middle of the call."""
    _ran("die")
    sys.stdout.flush()
    os._exit(3)


@app.tool()
async def grow(ctx: Context) -> str:
    """Adds a tool and tells the client its tools changed."""
    _ran("grow")
    app.add_tool(lambda: "fresh!", name="fresh", description="A tool added later.")
    await ctx.session.send_tool_list_changed()
    return "grown"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
