"""A multi-agent handoff: a front desk hands money questions to a billing agent with a tool.

Against the hosted service (``OPENAI_API_KEY``), or any Realtime endpoint with ``--url``; offline
with the local server and this example's scenario (text answers)::

    python examples/handoff.py "I was charged twice for order 42."

    voxwire serve --scenario examples/scenarios/handoff.json --no-audio &
    python examples/handoff.py --url ws://127.0.0.1:8765/v1/realtime "I was charged twice."

What it shows: two ``RealtimeAgent`` s, ``handoffs=[billing]`` (the front desk gets a
``transfer_to_billing`` tool; the session switches agent when the model calls it), a function
tool on the second agent, and the events an application sees: ``handoff``, ``tool_end``, the
transcript of each agent; the turn is over when a response ends with a message, not a call, or
does not complete (a failed response prints the server's reason).
"""

from __future__ import annotations

import argparse
import asyncio

from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import HistoryMessage, RealtimeSession, ResponseDoneEvent


@function_tool
def refund_status(order_id: str) -> dict[str, str]:
    """Where the refund of an order stands.

    Args:
        order_id: the order number the customer gave.
    """
    return {"order_id": order_id, "status": "refund was started on Monday", "days": "five"}


def front_desk() -> RealtimeAgent:
    """The agent the conversation starts with; it can hand off to billing."""
    billing = RealtimeAgent(
        name="Billing",
        instructions="You are the billing desk. Check refunds with refund_status, then explain "
        "them in two sentences.",
        tools=[refund_status],
        handoff_description="Charges, invoices and refunds.",
    )
    return RealtimeAgent(
        name="FrontDesk",
        instructions="You are the front desk. Greet the caller briefly; hand anything about "
        "money to the billing desk.",
        handoffs=[billing],
    )


async def ask(question: str, url: str | None = None) -> list[str]:
    """Ask one question (in text) and print the conversation until the agents wait for the
    user again; returns the lines printed."""
    lines: list[str] = []

    def show(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    agent = front_desk()
    config = {"output_modalities": ["text"]}
    async with RealtimeSession(agent, url=url, config=config) as session:
        speaking = agent.name
        await session.send_message(question)
        show(f"user: {question}")
        async for event in session:
            if event.type == "handoff":
                speaking = event.to_agent.name
                show(f"[handoff] {event.from_agent.name} -> {speaking}")
            elif event.type == "tool_end":
                show(f"[tool] {event.name} -> {event.output}")
            elif event.type == "assistant_transcript_done":
                show(f"{speaking}: {event.transcript}")
            elif event.type == "response_done":
                if event.failure is not None:
                    show(f"[response {event.status}] {event.failure}")
                if turn_is_over(session, event):
                    break
    return lines


def turn_is_over(session: RealtimeSession, done: ResponseDoneEvent) -> bool:
    """A response ended with an assistant message, not a tool call (a handoff is one) — or did
    not complete (failed, cancelled): nothing follows it until the user speaks again."""
    if done.status != "completed":
        return True
    last = session.history[-1] if session.history else None
    return isinstance(last, HistoryMessage) and last.role == "assistant"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", help="what the caller says")
    parser.add_argument("--url", help="a Realtime endpoint (default: the hosted service)")
    args = parser.parse_args()
    asyncio.run(ask(args.question, args.url))


if __name__ == "__main__":
    main()
