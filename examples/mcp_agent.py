"""A voice agent whose tools come from a local MCP server (``examples/mcp_server.py``).

Against the hosted service (``OPENAI_API_KEY``), or any Realtime endpoint with ``--url``; offline
with the local server and this example's scenario (text answers)::

    python examples/mcp_agent.py "Is the blue kettle in stock?"

    voxwire serve --scenario examples/scenarios/mcp_agent.json --no-audio &
    python examples/mcp_agent.py --url ws://127.0.0.1:8765/v1/realtime "Is it in stock?"

What it shows: ``RealtimeAgent(mcp_servers=[MCPServerStdio(...)])`` — the session starts the
server as a process, lists its tools and offers them to the model as function tools; a call
runs through the function-tool machinery (here: ``reserve`` needs the user's approval, which
this program refuses unless ``--approve``); the process is stopped when the session closes.
``--mcp-url`` uses a streamable-HTTP server instead.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from voxwire.agents import MCPServer, MCPServerHTTP, MCPServerStdio, RealtimeAgent
from voxwire.asyncio import HistoryMessage, RealtimeSession

HERE = Path(__file__).resolve().parent


def shop_server(url: str | None) -> MCPServer:
    """The shop's MCP server: this example's, as a process, or the one at ``url``."""
    approval = {"reserve": True}
    if url is not None:
        return MCPServerHTTP(name="shop", url=url, needs_approval=approval)
    script = str(HERE / "mcp_server.py")
    return MCPServerStdio(
        name="shop", command=sys.executable, args=[script], needs_approval=approval
    )


async def ask(question: str, url: str | None, mcp_url: str | None, approve: bool) -> list[str]:
    """Ask one question (in text) and print the conversation until the agent waits for the
    user again; returns the lines printed."""
    lines: list[str] = []

    def show(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    agent = RealtimeAgent(
        name="Shop",
        instructions="You are a shop assistant. Check stock with stock_level; put items aside "
        "with reserve.",
        mcp_servers=[shop_server(mcp_url)],
    )
    config = {"output_modalities": ["text"]}
    async with RealtimeSession(agent, url=url, config=config) as session:
        await session.send_message(question)
        show(f"user: {question}")
        async for event in session:
            if event.type == "tool_approval_requested":
                show(f"[approval] {event.name} {event.arguments} -> {'yes' if approve else 'no'}")
                if approve:
                    session.approve_tool_call(event.call_id)
                else:
                    session.reject_tool_call(event.call_id, message="The customer said no.")
            elif event.type == "tool_end":
                show(f"[tool] {event.name} -> {' '.join(event.output.split())}")
            elif event.type == "assistant_transcript_done":
                show(f"Shop: {event.transcript}")
            elif event.type == "response_done":
                last = session.history[-1] if session.history else None
                if event.status != "completed" or (
                    isinstance(last, HistoryMessage) and last.role == "assistant"
                ):
                    break
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", help="what the customer says")
    parser.add_argument("--url", help="a Realtime endpoint (default: the hosted service)")
    parser.add_argument("--mcp-url", help="a streamable-HTTP MCP server instead of the process")
    parser.add_argument("--approve", action="store_true", help="approve reservations")
    args = parser.parse_args()
    asyncio.run(ask(args.question, args.url, args.mcp_url, args.approve))


if __name__ == "__main__":
    main()
