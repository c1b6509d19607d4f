"""Watch your own session on a timeline: live in a browser page, and as one HTML file after.

The handoff example's conversation (examples/handoff.py), with a ``voxwire.web.Timeline``
observing its events — no session option changed: the timeline is fed what the application's
loop already takes from the session. ``--watch`` serves the live page while it runs (open the
printed address); ``--report`` writes the file at the end::

    python examples/timeline.py --report call.html --watch "I was charged twice for order 42."

    voxwire serve --scenario examples/scenarios/handoff.json --no-audio &
    python examples/timeline.py --url ws://127.0.0.1:8765/v1/realtime --report call.html \\
        "I was charged twice for order 42."

``raw_server_events=True`` adds what the timeline draws of the server's own events (server VAD,
truncations acknowledged); a session that plays audio gives the timeline its output's clock
(``Timeline(playback=output.clock)``) for what was heard.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from handoff import front_desk, turn_is_over
from voxwire.asyncio import RealtimeSession
from voxwire.web import Timeline, WebServer, write_report


@contextlib.asynccontextmanager
async def watched(timeline: Timeline, watch: bool) -> AsyncIterator[None]:
    """Serve ``timeline`` live on a loopback page while the block runs (``watch``)."""
    if not watch:
        yield
        return
    async with WebServer(watch=timeline) as web:
        print(f"live timeline: {web.url}?watch", flush=True)
        yield


async def converse(question: str, url: str | None, report: Path | None, watch: bool) -> Timeline:
    """One question to the front desk, on the timeline; the report written at the end."""
    timeline = Timeline()
    config = {"output_modalities": ["text"]}
    async with watched(timeline, watch):
        session = RealtimeSession(front_desk(), url=url, config=config, raw_server_events=True)
        async with session:
            await session.send_message(question)
            timeline.note("user_text", text=question)
            async for event in session:
                timeline.observe(event)
                if event.type == "response_done" and turn_is_over(session, event):
                    break
    if report is not None:
        write_report(report, timeline, title="The front desk and billing")
        print(f"report: {report}", flush=True)
    kinds = [record["kind"] for record in timeline.records]
    responses, tools, handoffs = (kinds.count(k) for k in ("response", "tool_end", "handoff"))
    print(
        f"{len(kinds)} records: {responses} responses, {tools} tool call(s), {handoffs} handoff(s)"
    )
    return timeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", help="what the caller says")
    parser.add_argument("--url", help="a Realtime endpoint (default: the hosted service)")
    parser.add_argument("--report", type=Path, help="write the timeline to this HTML file")
    parser.add_argument("--watch", action="store_true", help="serve the live page meanwhile")
    args = parser.parse_args()
    asyncio.run(converse(args.question, args.url, args.report, args.watch))


if __name__ == "__main__":
    main()
