"""(f) Out-of-order, duplicated and contradictory server events (``semantic.py``): the core never
raises nor reports a voxwire bug, and a ``RealtimeSession`` running an agent — two function tools
(one failing), a handoff, an output guardrail, and in one session an ``AudioOutput`` — survives
them through the loopback proxy and answers a clean turn after every batch, with nothing logged
as an error and no task left. Plus the regressions those inputs found: tool arguments and tool
outputs nested thousands deep.
"""

from __future__ import annotations

import logging
import os
import random

import pytest

from voxwire.agents import (
    GuardrailResult,
    RealtimeAgent,
    ToolArgumentsError,
    function_tool,
    output_guardrail,
)
from voxwire.asyncio import CloseEvent, ErrorEvent, RealtimeSession
from voxwire.audio import MemoryOutput
from voxwire.protocol import RealtimeProtocol

from ..asyncio.helpers import MANUAL, assert_only_current_task, run, serving
from ..server.helpers import client_of
from ..server.helpers import serving as serving_server
from .conftest import CASES
from .proxy import HostileProxy, hostile_proxy
from .semantic import hostile_sequence
from .test_core_fuzz import check_events
from .test_http_fuzz import ErrorLog
from .test_session_fuzz import clean_turn, settling

BASE_SEED = int(os.environ.get("VOXWIRE_FUZZ_SEED", "19"))
CORE_FRAMES = int(os.environ.get("VOXWIRE_FUZZ_SEMANTIC_CORE", "6000"))
ROUNDS = int(os.environ.get("VOXWIRE_FUZZ_SEMANTIC_ROUNDS", "6"))
PER_ROUND = 150


@pytest.mark.parametrize("chunk", range(2))
def test_the_core_never_raises_on_out_of_order_events(chunk: int) -> None:
    rng = random.Random(BASE_SEED * 1000 + 600 + chunk)
    total = 0
    while total < CORE_FRAMES // 2:
        protocol = RealtimeProtocol(beta=rng.choice([False, "auto"]))
        frames, _ = hostile_sequence(rng, 300)
        for kind, frame in frames:
            protocol.receive_text(frame)
            check_events(protocol.events_received(), frame)
            if rng.random() < 0.05:  # the application interrupts in the middle of it all
                protocol.interrupt({})
                protocol.data_to_send()
            CASES[f"core out-of-order frames: {kind}"] += 1
        total += len(frames)
        protocol.interrupt({})
        protocol.data_to_send()
        assert protocol.connection_lost().plan is not None


@function_tool
async def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@function_tool
def boom(x: int) -> str:
    """Always fails."""
    raise RuntimeError("the tool failed")


@output_guardrail(name="no_upon")
def no_upon(agent: RealtimeAgent, text: str) -> GuardrailResult:
    return GuardrailResult(tripwire_triggered="upon" in text)


AGENT = RealtimeAgent(
    name="main",
    tools=[get_weather, boom],
    handoffs=[RealtimeAgent(name="other", instructions="Be other.")],
    output_guardrails=[no_upon],
)


async def rounds(
    session: RealtimeSession, proxy: HostileProxy, rng: random.Random, speaker: MemoryOutput | None
) -> None:
    for _ in range(ROUNDS):
        frames, responses = hostile_sequence(rng, PER_ROUND)
        await proxy.inject([frame for _, frame in frames] + settling(responses))
        for kind, _ in frames:
            CASES[f"session out-of-order frames: {kind}"] += 1
        events = await clean_turn(session)
        if speaker is not None:  # play what the hostile audio left in the output
            speaker.advance_ms(speaker.output.ring.readable_samples * 1000 / speaker.rate_hz + 100)
        assert not [e for e in events if isinstance(e, CloseEvent)]
        assert not [e for e in events if isinstance(e, ErrorEvent) and not e.recoverable]
        CASES["session rounds (out-of-order batch, then a clean turn)"] += 1


@pytest.mark.parametrize("index", range(2))
def test_an_agent_session_survives_out_of_order_events(index: int) -> None:
    rng = random.Random(BASE_SEED * 1000 + 650 + index)
    errors = ErrorLog()
    logging.getLogger().addHandler(errors)

    speaker = MemoryOutput() if index % 2 else None

    async def body() -> None:
        async with serving() as server, hostile_proxy(f"127.0.0.1:{server.port}") as proxy:
            url = proxy.url + server.url().split(str(server.port), 1)[1]
            session = RealtimeSession(
                AGENT,
                url=url,
                config=MANUAL,
                wait_for_session_updated=True,
                audio_output=speaker,
                guardrail_debounce_chars=5,
            )
            async with session:
                await rounds(session, proxy, rng, speaker)
        assert_only_current_task()

    try:
        run(body(), timeout_s=max(120.0, ROUNDS * 3.0))
    finally:
        logging.getLogger().removeHandler(errors)
    assert not errors.records, [(r.name, r.getMessage()[:200]) for r in errors.records]


@pytest.mark.parametrize(
    "arguments",
    ["[" * 3000 + "]" * 3000, '{"city": "\\ud800"}', '{"city": "\ud800"}', "\xff{"],
)
def test_tool_arguments_nested_deep_or_not_text_are_a_tool_arguments_error(
    arguments: str,
) -> None:
    """Regression: msgspec's RecursionError / UnicodeEncodeError left ``parse_arguments`` (the
    session then reported a voxwire bug instead of telling the model its arguments were bad)."""
    with pytest.raises(ToolArgumentsError, match="not valid JSON"):
        get_weather.parse_arguments(arguments)


def test_a_tool_output_nested_deep_is_answered_not_a_failed_response() -> None:
    """Regression: the local server's responder parsed a client's tool output with json.loads
    and its RecursionError failed the response and logged a traceback."""
    errors = ErrorLog()
    logging.getLogger().addHandler(errors)
    deep = "[" * 5000 + "]" * 5000

    async def body() -> None:
        async with serving_server() as server, client_of(server) as client:
            for item in (
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "get_weather",
                    "arguments": "{}",
                },
                {"type": "function_call_output", "call_id": "c1", "output": deep},
            ):
                await client.send({"type": "conversation.item.create", "item": item})
                await client.until("conversation.item.done")
            done = (await client.respond(output_modalities=["text"]))[-1]
            assert done["response"]["status"] == "completed"

    try:
        run(body())
    finally:
        logging.getLogger().removeHandler(errors)
    assert not errors.records, [(r.name, r.getMessage()[:200]) for r in errors.records]
