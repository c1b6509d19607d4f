"""A session process for the crash tests (``python -m tests.store.session_child``), killed by
the test with SIGKILL at a point it announces on stdout.

Arguments: BACKEND TARGET SCHEMA URL CONVERSATION MODE WORKDIR [LEASE_TTL_S, 0.5 by default].
The session (agent :func:`agents`, text only, turn detection off) records CONVERSATION into the
store, asks one question and waits for its answer (``turn done``), then, by MODE:

* ``response``: asks for a long story; ``story started`` at the first transcript delta;
* ``tool``: asks for the weather; the tool notes its run in WORKDIR/ran, prints ``tool running``
  and waits for WORKDIR/gate before it answers (the test arms its faults meanwhile);
* ``approval``: asks to book a trip; ``approval requested`` when the call waits for approval.

Then it waits to be killed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from tests.asyncio.helpers import MANUAL
from tests.store.conftest import Backend
from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import RealtimeSession
from voxwire.server import Scenario

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"after_tool": "get_weather", "say": "It is {output.temperature} degrees in Paris."},
            {"match": "book", "call": {"name": "book", "arguments": {"city": "Rome"}}},
            {"after_tool": "book", "say": "Done: {output.booking}."},
            {"match": "story", "say": " ".join(["Once upon a time there was a long story."] * 40)},
        ],
        "fallback": "You said: {text}",
    }
)

QUESTIONS = {"response": "tell me a story", "tool": "what is the weather", "approval": "book it"}


def agents(workdir: Path, *, gate: bool) -> RealtimeAgent:
    """The agent, whose tools append their runs to ``workdir/ran`` (``gate``: get_weather waits
    for ``workdir/gate`` before it answers)."""

    @function_tool
    async def get_weather(city: str) -> dict[str, Any]:
        """The weather in a city."""
        with (workdir / "ran").open("a") as ran:
            ran.write(f"get_weather {city}\n")
        print("tool running", flush=True)
        while gate and not (workdir / "gate").exists():  # noqa: ASYNC110 - another process
            await asyncio.sleep(0.01)
        return {"temperature": 21}

    @function_tool(needs_approval=True)
    async def book(city: str) -> dict[str, Any]:
        """Book a trip."""
        with (workdir / "ran").open("a") as ran:
            ran.write(f"book {city}\n")
        return {"booking": f"trip to {city}"}

    return RealtimeAgent(name="concierge", tools=[get_weather, book])


async def main(argv: list[str]) -> None:
    name, target, schema, url, conversation_id, mode, workdir = argv[:7]
    ttl_s = float(argv[7]) if len(argv) > 7 else 0.5  # killed: its lease frees the conversation
    store = await Backend(name, target, "" if schema == "-" else schema).open()
    agent = agents(Path(workdir), gate=True)
    session = RealtimeSession(
        agent,
        url=url,
        config=MANUAL,
        store=store,
        conversation_id=conversation_id,
        lease_ttl_s=ttl_s,
    )
    async with session:
        await session.send_message("hello there")
        async for event in session:
            if event.type == "response_done":
                break
        print("turn done", flush=True)
        await session.send_message(QUESTIONS[mode])
        async for event in session:
            if mode == "response" and event.type == "assistant_transcript_delta":
                print("story started", flush=True)
            if mode == "approval" and event.type == "tool_approval_requested":
                print("approval requested", flush=True)
    await asyncio.sleep(3600)  # pragma: no cover - killed before


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
