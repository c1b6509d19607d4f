"""Tests of one's own agent (agent.py), two ways:

* with ``voxwire.testing.ScriptedServer``: the test plays the model, event by event, and checks
  exactly what the session sent — fast, no network, for the decisions your code makes;
* with the local server (``voxwire.server.RealtimeServer``) on loopback: a real websocket, the
  rules of a scenario standing in for the model — the whole round trip.

Run them with ``python -m pytest examples/testing_your_agent`` (pytest only, no plugin;
``pip install pytest``: voxwire does not install it).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).parent))  # agent.py beside this file

import agent as shop

from voxwire.asyncio import RealtimeSession
from voxwire.server import Pacing, RealtimeServer, Scenario
from voxwire.testing import ScriptedServer

T = TypeVar("T")
TEXT = {"output_modalities": ["text"]}


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Each test body on a fresh event loop, bounded so a hang fails instead of stalling."""
    return asyncio.run(asyncio.wait_for(coro, 10))


async def next_event(session: RealtimeSession, kind: str) -> Any:
    async for event in session:
        if event.type == kind:
            return event
    raise AssertionError(f"the session ended before a {kind} event")


def outputs(server: ScriptedServer) -> list[str]:
    """The function call outputs the session sent."""
    return [
        event["item"]["output"]
        for event in server.sent_of_type("conversation.item.create")
        if event["item"]["type"] == "function_call_output"
    ]


# --- with ScriptedServer: the test plays the model --------------------------------------------


def test_a_small_refund_runs_without_asking() -> None:
    shop.refunds.clear()

    async def body() -> None:
        server = ScriptedServer()
        async with RealtimeSession(shop.shop_assistant(), connector=server.connect) as session:
            await session.send_message("Refund 20 euros on order 7, please.")
            await server.wait_for("response.create")
            arguments = json.dumps({"order_id": "7", "amount_eur": 20})
            await server.function_call_response([("call_1", "refund", arguments)])
            await next_event(session, "tool_end")
            await server.wait_for("response.create", count=2)  # the follow-up, after the output

        assert outputs(server) == ["refunded 20.00 EUR on order 7"]

    run(body())
    assert shop.refunds == [("7", 20.0)]


def test_a_large_refund_waits_for_approval_and_a_rejection_stops_it() -> None:
    shop.refunds.clear()

    async def body() -> None:
        server = ScriptedServer()
        async with RealtimeSession(shop.shop_assistant(), connector=server.connect) as session:
            await session.send_message("Refund everything on order 9.")
            await server.wait_for("response.create")
            arguments = json.dumps({"order_id": "9", "amount_eur": 80})
            await server.function_call_response([("call_2", "refund", arguments)])
            asked = await next_event(session, "tool_approval_requested")
            session.reject_tool_call(asked.call_id, message="The customer said no.")
            await server.wait_for("response.create", count=2)

        assert outputs(server) == ["The customer said no."]

    run(body())
    assert shop.refunds == []


def test_card_numbers_are_refused_without_asking_the_model() -> None:
    async def body() -> None:
        server = ScriptedServer()
        async with RealtimeSession(
            shop.shop_assistant(), connector=server.connect, input_guardrail_refusal=shop.REFUSAL
        ) as session:
            await session.send_message("My card is 4111 1111 1111 1111.")
            tripped = await next_event(session, "input_guardrail_tripped")
            assert tripped.guardrails == ("no_card_numbers",)
            refusal = await server.wait_for("response.create")
        # The one response asked for says the refusal; the message itself is not answered.
        assert shop.REFUSAL in refusal["response"]["instructions"]

    run(body())


# --- with the local server: a real websocket, a scenario in the model's place -----------------

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {
                "match": "refund",
                "call": {"name": "refund", "arguments": {"order_id": "7", "amount_eur": 20}},
            },
            {"after_tool": "refund", "say": "Done: {output}."},
        ],
        "fallback": "How can I help with your order?",
    }
)


def test_a_refund_round_trip_on_the_local_server() -> None:
    shop.refunds.clear()

    async def body() -> str:
        pacing = Pacing(audio_pace=0, text_tokens_per_s=0)
        async with RealtimeServer(scenario=SCENARIO, tts=None, pacing=pacing) as server:
            session = RealtimeSession(shop.shop_assistant(), url=server.url(), config=TEXT)
            async with session:
                await session.send_message("I would like a refund for order 7.")
                said = await next_event(session, "assistant_transcript_done")
                return str(said.transcript)

    assert run(body()) == "Done: refunded 20.00 EUR on order 7."
    assert shop.refunds == [("7", 20.0)]
