"""The pure side of agent features: tool schemas and arguments, output formatting, agent
resolution and switch updates, the follow-up bookkeeping, guardrail debounce and trip latch."""

from __future__ import annotations

import asyncio
import enum
from typing import Annotated, Any, Literal

import pytest

from voxwire.agents import (
    CallOutcome,
    FunctionTool,
    GuardrailResult,
    RealtimeAgent,
    ToolArgumentsError,
    ToolBatches,
    ToolContext,
    TranscriptWatch,
    TripLatch,
    agent_session_config,
    agent_update_config,
    format_output,
    function_tool,
    handoff,
    output_guardrail,
    resolve_agent,
    transfer_tool_name,
)
from voxwire.exceptions import ConfigurationError
from voxwire.protocol.config import SessionConfig


class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


@function_tool
def forecast(
    context: ToolContext,
    city: str,
    days: int = 1,
    unit: Unit = Unit.C,
    hours: list[int] | None = None,
    mood: Annotated[Literal["sunny", "grim"], "How to say it"] = "sunny",
) -> str:
    """Forecast the weather.

    Args:
        city: Where.
        days: How many days,
            counted from today.
    """
    return city


def test_a_schema_is_made_from_type_hints_and_the_docstring() -> None:
    assert forecast.name == "forecast"
    assert forecast.description == "Forecast the weather."
    assert forecast.takes_context
    assert forecast.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "Where."},
            "days": {"type": "integer", "description": "How many days, counted from today."},
            "unit": {"enum": ["celsius", "fahrenheit"], "type": "string"},
            "hours": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
            "mood": {"enum": ["sunny", "grim"], "type": "string", "description": "How to say it"},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    declaration = forecast.declaration()
    assert (declaration.name, declaration.parameters) == ("forecast", forecast.parameters)


def test_arguments_are_checked_strictly_or_leniently() -> None:
    assert forecast.parse_arguments('{"city": "Oslo", "unit": "fahrenheit"}') == {
        "city": "Oslo",
        "days": 1,
        "unit": Unit.F,
        "hours": None,
        "mood": "sunny",
    }
    assert forecast.parse_arguments(' {"city": "Oslo"} ')["days"] == 1
    for bad, reason in [
        ("{oops", "not valid JSON"),
        ("[1]", "must be a JSON object"),
        ('{"city": 3}', "Expected `str`"),
        ('{"city": "x", "extra": 1}', "unknown field"),
        ("{}", "missing required field"),
        ('{"city": "x", "mood": "meh"}', "Invalid enum value"),
    ]:
        with pytest.raises(ToolArgumentsError, match=reason):
            forecast.parse_arguments(bad)

    @function_tool(strict=False)
    def lenient(count: int) -> int:
        return count

    assert "additionalProperties" not in lenient.parameters
    assert lenient.parse_arguments('{"count": "3", "extra": true}') == {"count": 3}


def test_explicit_parameters_pass_arguments_as_given() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}

    @function_tool(name="search", description="Search.", parameters=schema)
    def search(**kwargs: Any) -> Any:
        return kwargs

    assert search.arguments_type is None
    assert search.parse_arguments('{"q": 1, "x": 2}') == {"q": 1, "x": 2}


def test_misuse_is_a_configuration_error_naming_the_problem() -> None:
    with pytest.raises(ConfigurationError, match="has no type hint"):

        @function_tool
        def untyped(city):  # type: ignore[no-untyped-def]
            return city

    with pytest.raises(ConfigurationError, match="no simple JSON Schema"):

        @function_tool
        def rich(when: complex) -> None: ...

    with pytest.raises(ConfigurationError, match="cannot be filled"):

        @function_tool
        def splat(*cities: str) -> None: ...

    with pytest.raises(ConfigurationError, match="ToolContext parameter must come first"):

        @function_tool
        def late(city: str, context: ToolContext) -> None: ...

    with pytest.raises(ConfigurationError, match="tool name"):
        FunctionTool(name="has space", function=print)
    with pytest.raises(ConfigurationError, match="timeout_s"):
        function_tool(timeout_s=0)(forecast.function)
    with pytest.raises(ConfigurationError, match=r"tool .* is invalid"):
        RealtimeAgent(name="a", tools=[print])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="handoff"):
        RealtimeAgent(name="a", handoffs=["b"])  # type: ignore[list-item]


def test_outputs_become_text() -> None:
    assert format_output("plain") == "plain"
    assert format_output({"a": [1, 2]}) == '{"a":[1,2]}'
    assert format_output(None) == "null"
    assert format_output(object()).startswith("<object object")


def test_resolution_settles_enabled_tools_handoffs_and_names() -> None:
    async def off(agent: RealtimeAgent) -> bool:
        await asyncio.sleep(0)
        return False

    hidden = function_tool(is_enabled=off)(forecast.function)
    billing = RealtimeAgent(name="Billing Desk!", handoff_description="Pays.")
    support = RealtimeAgent(name="support")
    agent = RealtimeAgent(
        name="front",
        instructions=lambda a: f"I am {a.name}.",
        voice="ash",
        tools=[forecast],
        handoffs=[billing, handoff(support, is_enabled=False)],
    )
    resolved = asyncio.run(resolve_agent(agent))
    assert resolved.instructions == "I am front."
    assert list(resolved.tools) == ["forecast"]
    assert list(resolved.handoffs) == ["transfer_to_billing_desk"]
    target = resolved.lookup("transfer_to_billing_desk")
    assert target is not None
    assert target.target is billing
    assert "Pays." in resolved.handoffs["transfer_to_billing_desk"].description
    assert [t.name for t in resolved.declarations] == ["forecast", "transfer_to_billing_desk"]  # type: ignore[union-attr]
    assert transfer_tool_name("Ä b-c") == "transfer_to_b_c"

    hidden_agent = RealtimeAgent(name="h", tools=[hidden])
    assert asyncio.run(resolve_agent(hidden_agent)).declarations == ()

    first = agent_session_config({"instructions": "base"}, resolved)
    assert first.instructions == "I am front."
    unlocked = agent_update_config(SessionConfig(), resolved, voice_locked=False).to_wire()
    locked = agent_update_config(SessionConfig(), resolved, voice_locked=True).to_wire()
    assert unlocked["audio"] == {"output": {"voice": "ash"}}
    assert "audio" not in locked
    assert [t["name"] for t in locked["tools"]] == ["forecast", "transfer_to_billing_desk"]

    bare = asyncio.run(resolve_agent(RealtimeAgent(name="bare")))
    update = agent_update_config(
        SessionConfig.from_mapping({"instructions": "base"}), bare, voice_locked=False
    )
    assert (update.instructions, update.tools) == ("base", [])


def test_one_follow_up_once_every_call_of_a_response_is_answered() -> None:
    batches = ToolBatches()
    batches.call_started("r1", "a")
    batches.call_started("r1", "b")
    outcome = CallOutcome(call_id="a", name="t", arguments="{}", output="A")
    batches.call_finished(outcome)
    batches.delivered("a")
    batches.response_done("r1", "completed")
    assert batches.pop_ready() == []  # b is not answered
    batches.call_finished(CallOutcome(call_id="b", name="t", arguments="{}", output="B"))
    assert batches.pop_ready() == []  # nor acknowledged
    batches.delivered("b")
    (ready,) = batches.pop_ready()
    assert ([o.output for o in ready.outcomes], ready.trigger_response) == (["A", "B"], True)
    assert batches.pop_ready() == []
    assert batches.open_calls == 0

    batches.call_started("r2", "c")
    batches.call_finished(
        CallOutcome(call_id="c", name="t", arguments="{}", output="C", trigger_response=False)
    )
    batches.delivered("c")
    batches.response_done("r2", "completed")
    assert not batches.pop_ready()[0].trigger_response  # a background result only

    batches.call_started("r3", "d")
    batches.call_finished(CallOutcome(call_id="d", name="t", arguments="{}", output="D"))
    batches.delivered("d")
    batches.response_done("r3", "cancelled")
    assert not batches.pop_ready()[0].trigger_response  # the user cut the response


def test_guardrails_check_every_debounce_chars_and_at_the_end() -> None:
    watch = TranscriptWatch(10)
    checks = [watch.delta("i", piece) for piece in ["01234", "56789", "abc", "defghij", "k"]]
    assert checks == [None, "0123456789", None, "0123456789abcdefghij", None]
    assert watch.done("i", "0123456789abcdefghijk") == "0123456789abcdefghijk"
    watch.delta("j", "0123456789")
    assert watch.done("j", "0123456789") is None  # exactly this was checked
    only_end = TranscriptWatch(None)
    assert only_end.delta("k", "x" * 500) is None
    assert only_end.done("k", "x" * 500) == "x" * 500
    with pytest.raises(ConfigurationError):
        TranscriptWatch(0)


def test_a_response_trips_once() -> None:
    latch = TripLatch()
    assert latch.trip("r1")
    assert not latch.trip("r1")
    assert latch.tripped("r1")
    assert not latch.tripped("r2")


def test_guardrail_results_are_checked() -> None:
    @output_guardrail(name="odd")
    def odd(agent: RealtimeAgent, text: str) -> Any:
        return "yes"

    agent = RealtimeAgent(name="a")
    with pytest.raises(TypeError, match="expected a bool or a GuardrailResult"):
        asyncio.run(odd.run(agent, "text"))

    @output_guardrail
    async def fine(agent: RealtimeAgent, text: str) -> bool:
        return "bad" in text

    assert asyncio.run(fine.run(agent, "bad")) == GuardrailResult(tripwire_triggered=True)
    assert fine.name == "fine"


def test_a_bare_guardrail_function_is_refused_with_the_decorator_to_use() -> None:
    """docs/agents.md: a guardrail is a function declared with the decorator (as a tool is
    declared with @function_tool); a bare one is refused at once, saying which decorator."""

    def no_prices(agent: RealtimeAgent, text: str) -> bool:
        return "$" in text

    with pytest.raises(ConfigurationError, match="decorate it with @output_guardrail"):
        RealtimeAgent(name="a", output_guardrails=[no_prices])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="decorate it with @input_guardrail"):
        RealtimeAgent(name="a", input_guardrails=[no_prices])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="expected a function decorated with"):
        RealtimeAgent(name="a", output_guardrails=["no_prices"])  # type: ignore[list-item]
    declared = RealtimeAgent(name="a", output_guardrails=[output_guardrail(no_prices)])
    assert [g.name for g in declared.output_guardrails] == ["no_prices"]
