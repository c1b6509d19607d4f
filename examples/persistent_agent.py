"""A tool-using agent whose conversation survives a restart, on PostgreSQL.

Each run is one turn of the same conversation, in a new process: it opens the store, goes on
with the conversation if it is stored (``RealtimeSession.resume``: the history is replayed to
the new server session) or starts it, says the user's line, prints the answer and exits. Kill
it at any point: the next run goes on from what the server had confirmed. Many processes, on
many machines, can serve conversations from one database — one at a time per conversation.

    pip install "voxwire[postgres]"
    export VOXWIRE_STORE="postgresql://agent@db:5432/voice"        # any libpq conninfo
    python examples/persistent_agent.py --conversation call-1 "Where is my order 42?"
    python examples/persistent_agent.py --conversation call-1 "Thank you!"

Offline: ``voxwire serve --scenario examples/scenarios/orders.json --no-audio`` and
``--url ws://127.0.0.1:8765/v1/realtime`` (restart the server between runs: the conversation
still goes on, from the database).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os

from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import HistoryFunctionCall, HistoryMessage, RealtimeSession
from voxwire.exceptions import ConversationNotFound, VoxwireError
from voxwire.store import ConversationStore, PostgresStore


@function_tool(timeout_s=10)
async def lookup_order(order_id: str) -> dict[str, str]:
    """Look up where a customer's order is.

    Args:
        order_id: the order number the customer gave.
    """
    return {"order_id": order_id, "status": "shipped on Monday", "arrives": "tomorrow"}


AGENT = RealtimeAgent(
    name="Orders",
    instructions="You help customers with their orders. Look orders up with lookup_order.",
    tools=[lookup_order],
)


async def open_session(
    store: ConversationStore, conversation_id: str, url: str | None
) -> RealtimeSession:
    """The stored conversation, resumed; or a new one recorded under ``conversation_id``."""
    config = {"output_modalities": ["text"]}
    try:
        await store.info(conversation_id)
    except ConversationNotFound:
        return RealtimeSession(
            AGENT, url=url, config=config, store=store, conversation_id=conversation_id
        )
    return RealtimeSession.resume(store, conversation_id, agent=AGENT, url=url, config=config)


async def turn(
    conninfo: str,
    conversation_id: str,
    line: str,
    *,
    url: str | None = None,
    schema: str = "voxwire",
) -> list[str]:
    """One turn of the conversation; returns the lines printed."""
    lines: list[str] = []

    def show(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    # A database that does not answer is reported after 5 s (the pool's default waits 30).
    store = await PostgresStore.open(conninfo, schema=schema, timeout_s=5.0)
    try:
        session = await open_session(store, conversation_id, url)
        async with session:
            for item in session.history:  # what earlier runs said (empty the first time)
                if isinstance(item, HistoryMessage):
                    show(f"  (earlier) {item.role}: {item.text}")
                elif isinstance(item, HistoryFunctionCall):
                    show(f"  (earlier) tool {item.name} -> {item.output}")
            show(f"user: {line}")
            await session.send_message(line)
            async for event in session:
                if event.type == "tool_end":
                    show(f"tool {event.name} -> {event.output}")
                elif event.type == "assistant_transcript_done":
                    show(f"agent: {event.transcript}")
                elif event.type == "response_done":
                    if event.failure is not None:
                        show(f"[response {event.status}] {event.failure}")
                    if event.status != "completed" or answered(session):
                        break  # a response that did not complete ends the turn too
    finally:
        await store.close()
    return lines


def answered(session: RealtimeSession) -> bool:
    """The last response ended with a message, not a tool call: the turn is over."""
    last = session.history[-1] if session.history else None
    return isinstance(last, HistoryMessage) and last.role == "assistant"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("line", help="what the user says this turn")
    parser.add_argument("--conversation", required=True, help="the conversation's id (the call's)")
    parser.add_argument(
        "--store",
        default=os.environ.get("VOXWIRE_STORE", ""),
        help="libpq conninfo (default: $VOXWIRE_STORE, else the PG* environment)",
    )
    parser.add_argument("--schema", default="voxwire", help="the store's schema in the database")
    parser.add_argument("--url", help="a Realtime endpoint (default: the hosted service)")
    args = parser.parse_args()
    if not args.store and not any(os.environ.get(v) for v in ("PGHOST", "PGSERVICE")):
        # Said at once, not after a refused connection to the default socket times out.
        parser.exit(
            2,
            f"{parser.prog}: no database: set VOXWIRE_STORE (or --store) to a libpq conninfo, "
            "e.g. postgresql://agent@db:5432/voice\n",
        )
    # The pool logs each failed attempt; the one line below says what matters.
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    try:
        asyncio.run(
            turn(args.store, args.conversation, args.line, url=args.url, schema=args.schema)
        )
    except VoxwireError as exc:  # the store or the endpoint: what is wrong, in one line
        parser.exit(1, f"{parser.prog}: {exc}\n")


if __name__ == "__main__":
    main()
