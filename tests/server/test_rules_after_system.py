"""Rules after a system note: a tool's progress note (``progress(..., respond=True)``) asks for
a response before the tool's result is in; a rule calling the tool must not fire again on the
same user text (docs/agents.md's progress example looped against ordinary rules)."""

from __future__ import annotations

import asyncio

from voxwire.agents import RealtimeAgent, function_tool, progress
from voxwire.asyncio import RealtimeSession
from voxwire.protocol import (
    FunctionCallItem,
    FunctionCallOutputItem,
    InputText,
    MessageItem,
    OutputText,
)
from voxwire.server import CallTool, Pacing, RealtimeServer, RulesResponder, Say, Scenario, Turn

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "flight", "call": {"name": "search", "arguments": {"to": "Paris"}}},
            {"match": "flight", "say": "Flights are my thing."},
            {"after_tool": "search", "say": "The best is {output.best}."},
        ],
        "fallback": "You said: {text}",
    }
)


def turn(*notes: str) -> Turn:
    items = [MessageItem(id="u1", role="user", content=[InputText(text="find a flight")])]
    items += [
        MessageItem(id=f"s{i}", role="system", content=[InputText(text=note)])
        for i, note in enumerate(notes)
    ]
    return Turn(items=items, instructions="", tools=["search"], tool_choice="auto")


def test_a_call_rule_does_not_fire_again_after_a_system_note() -> None:
    responder = RulesResponder(SCENARIO)
    assert responder.decide(turn()) == [CallTool("search", '{"to":"Paris"}')]
    # The progress note: the next matching rule that calls nothing answers.
    assert responder.decide(turn("Progress of the search tool call: comparing")) == [
        Say("Flights are my thing.")
    ]


def test_after_system_rules_may_still_call() -> None:
    scenario = Scenario.from_mapping(
        {"rules": [{"after_system": "retry", "call": {"name": "search", "arguments": {}}}]}
    )
    assert RulesResponder(scenario).decide(turn("please retry")) == [CallTool("search", "{}")]


def test_the_progress_example_runs_once_against_ordinary_rules() -> None:
    runs = 0

    @function_tool(timeout_s=10)
    async def search(to: str):  # type: ignore[no-untyped-def]
        """Search flights."""
        nonlocal runs
        runs += 1
        yield progress(f"Searching flights to {to}")
        yield progress("Comparing prices", respond=True)
        await asyncio.sleep(0.2)
        yield {"best": "AF123"}

    async def body() -> list[str]:
        pacing = Pacing(audio_pace=0, text_tokens_per_s=0)
        async with RealtimeServer(scenario=SCENARIO, tts=None, pacing=pacing) as server:
            agent = RealtimeAgent(name="a", instructions="x", tools=[search])
            config = {"output_modalities": ["text"]}
            said: list[str] = []
            async with RealtimeSession(agent, url=server.url(), config=config) as session:
                await session.send_message("find a flight")
                async for event in session:
                    if event.type == "assistant_transcript_done":
                        said.append(event.transcript)
                        if event.transcript.startswith("The best"):
                            break
            return said

    said = asyncio.run(asyncio.wait_for(body(), 20))
    assert said == ["Flights are my thing.", "The best is AF123."]
    assert runs == 1


def test_a_reply_between_a_tool_output_and_its_answer_leaves_the_answer_to_after_tool() -> None:
    """The progress reply was created before the tool's output arrived, so its message comes
    after the output: the next response still owes the answer to the output."""
    items = [
        MessageItem(id="u1", role="user", content=[InputText(text="find a flight")]),
        FunctionCallItem(id="c1", call_id="call_1", name="search", arguments="{}"),
        FunctionCallOutputItem(id="o1", call_id="call_1", output='{"best": "AF123"}'),
        MessageItem(id="a1", role="assistant", content=[OutputText(text="Still searching.")]),
    ]
    turn = Turn(items=items, instructions="", tools=["search"], tool_choice="auto")
    assert RulesResponder(SCENARIO).decide(turn) == [Say("The best is AF123.")]
