"""A session process with a local MCP server, for the crash test
(``python -m tests.agents.mcp_child SQLITE URL WORKDIR``): records conversation ``call-1`` into
the SQLite store, asks to open the door (the MCP tool ``gated``, which notes its run in
WORKDIR/runs and waits for WORKDIR/gate), then waits to be killed."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.asyncio.helpers import MANUAL
from tests.children import ROOT, child_env
from voxwire.agents import MCPServerStdio, RealtimeAgent
from voxwire.asyncio import RealtimeSession
from voxwire.server import Scenario
from voxwire.store import SQLiteStore

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "door", "call": {"name": "gated", "arguments": {}}},
            {"after_tool": "gated", "say": "Tool said: {output}"},
        ],
        "fallback": "You said: {text}",
    }
)


def door_agent(workdir: Path) -> RealtimeAgent:
    env = child_env(VOXWIRE_MCP_RUNS=str(workdir / "runs"), VOXWIRE_MCP_GATE=str(workdir / "gate"))
    server = MCPServerStdio(
        name="door",
        command=sys.executable,
        args=["-m", "tests.agents.mcp_server"],
        env=env,
        cwd=str(ROOT),
        allowed_tools=["gated"],
    )
    return RealtimeAgent(name="doorkeeper", mcp_servers=[server])


async def main(path: str, url: str, workdir: str) -> None:
    store = await SQLiteStore.open(path)
    session = RealtimeSession(
        door_agent(Path(workdir)),
        url=url,
        config=MANUAL,
        store=store,
        conversation_id="call-1",
        lease_ttl_s=0.5,  # killed: its lease frees the conversation soon after
    )
    async with session:
        await session.send_message("open the door")
        print("asked", flush=True)
        async for _ in session:
            pass
    await asyncio.sleep(3600)  # pragma: no cover - killed before


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
