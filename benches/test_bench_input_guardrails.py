"""What input guardrails add to a turn: ``send_message`` -> ``response.created``, against the
local server on loopback (in this process, fast pacing), with and without input guardrails.

    PYTHONPATH=python python -m pytest benches/test_bench_input_guardrails.py --benchmark-only \
        --benchmark-group-by=group

Without guardrails the ``response.create`` leaves with the message; with them it leaves when
every guardrail has passed (the check runs while the message travels). The difference of the
medians is the latency the checks add per turn: scheduling the check task, the guardrails
themselves (trivial here: what is measured is voxwire's cost, not a classifier's), and the
``response.create`` going out in a second frame. Timing stops at ``response_started``; the rest
of the response is drained outside the timed part.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Any

import pytest

from voxwire.agents import RealtimeAgent, input_guardrail
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import ResponseDoneEvent, ResponseStartedEvent
from voxwire.server import Pacing, RealtimeServer, Scenario

MANUAL = {"output_modalities": ["text"], "audio": {"input": {"turn_detection": None}}}
SCENARIO = Scenario.from_mapping({"rules": [], "fallback": "Fine."})


@input_guardrail
def sync_pass(agent: RealtimeAgent, text: str) -> bool:
    return "forbidden" in text


@input_guardrail
async def async_pass(agent: RealtimeAgent, text: str) -> bool:
    await asyncio.sleep(0)
    return "forbidden" in text


AGENTS = {
    "none": RealtimeAgent(name="open"),
    "one_sync": RealtimeAgent(name="sync", input_guardrails=[sync_pass]),
    "one_async": RealtimeAgent(name="async", input_guardrails=[async_pass]),
    "three": RealtimeAgent(name="three", input_guardrails=[sync_pass, async_pass, sync_pass]),
}


async def _until(session: RealtimeSession, kind: type[Any]) -> None:
    async for event in session:
        if isinstance(event, kind):
            return


@pytest.mark.parametrize("guardrails", list(AGENTS))
def test_turn_latency(benchmark: Any, guardrails: str) -> None:
    benchmark.group = "send_message -> response.created"
    loop = asyncio.new_event_loop()
    stack = AsyncExitStack()

    async def start() -> RealtimeSession:
        server = await stack.enter_async_context(
            RealtimeServer(
                scenario=SCENARIO, pacing=Pacing(audio_pace=0, text_tokens_per_s=0), tts=None
            )
        )
        return await stack.enter_async_context(
            RealtimeSession(AGENTS[guardrails], url=server.url(), config=MANUAL)
        )

    session = loop.run_until_complete(start())
    started = [0]

    def turn() -> None:
        async def ask() -> None:
            await session.send_message("good morning")
            await _until(session, ResponseStartedEvent)

        loop.run_until_complete(ask())
        started[0] += 1

    def drain() -> None:
        if started[0]:
            loop.run_until_complete(_until(session, ResponseDoneEvent))

    try:
        benchmark.pedantic(turn, setup=drain, rounds=200, warmup_rounds=10)
        drain()
    finally:
        loop.run_until_complete(stack.aclose())
        loop.close()
    assert session.protocol.responses.all()
