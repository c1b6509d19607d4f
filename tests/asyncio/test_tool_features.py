"""Tools, finished: the tool context (the application's context object, the history snapshot)
and delegation through a tool; tool input guardrails (before and after approval) and output
guardrails; ``on_timeout="raise"``; the ``tool_error_formatter`` and its precedence; sticky
always-reject; generator tools that send progress before their result. Against the local
server over loopback (and the scripted peer where the exact frames matter)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.asyncio.agent_helpers import (
    StuckTool,
    agent_session,
    ask,
    counting_tool,
    last_assistant_text,
    of_type,
    settle,
    tool_failure,
)
from tests.asyncio.helpers import run as run_test
from tests.asyncio.helpers import until
from voxwire.agents import (
    GuardrailResult,
    RealtimeAgent,
    ToolCall,
    ToolContext,
    ToolErrorInfo,
    function_tool,
    progress,
    tool_input_guardrail,
    tool_output_guardrail,
)
from voxwire.asyncio import HistoryFunctionCall, HistoryMessage, RealtimeSession
from voxwire.asyncio.events import (
    AssistantTranscriptDoneEvent,
    ErrorEvent,
    FunctionToolsExecutedEvent,
    SpeechCreatedEvent,
    ToolApprovalRequestedEvent,
    ToolEndEvent,
    ToolGuardrailTrippedEvent,
    ToolProgressEvent,
    ToolStartEvent,
)
from voxwire.exceptions import ConfigurationError
from voxwire.server import Scenario
from voxwire.testing import ScriptedServer

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"match": "rome", "call": {"name": "get_weather", "arguments": {"city": "Rome"}}},
            {"after_tool": "get_weather", "say": "Tool said: {output}"},
            {"match": "refund", "call": {"name": "refund", "arguments": {"order": "A17"}}},
            {"after_tool": "refund", "say": "Supervisor: {output}"},
        ],
        "fallback": "You said: {text}",
    }
)


def run(coro: Any) -> None:
    run_test(coro)


# --- context and delegation ---------------------------------------------------------------------


@dataclass
class Account:
    """The application's own context object."""

    customer: str
    lookups: list[str] = field(default_factory=list)


def test_a_tool_gets_the_application_context_and_a_history_snapshot() -> None:
    seen: dict[str, Any] = {}

    @function_tool
    async def get_weather(ctx: ToolContext[Account], city: str) -> str:
        ctx.context.lookups.append(city)
        seen["history"] = ctx.history
        seen["ids"] = (ctx.call_id, ctx.agent.name)
        return f"sunny for {ctx.context.customer}"

    assert get_weather.takes_context
    assert "ctx" not in get_weather.parameters["properties"]
    account = Account(customer="Ada")
    agent = RealtimeAgent(name="concierge", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, SCENARIO, context=account) as session:
            events = await ask(session, "what is the weather?")
            (end,) = of_type(events, ToolEndEvent)
            assert account.lookups == ["Paris"]
            assert seen["ids"] == (end.call_id, "concierge")
            first, call = seen["history"]
            assert isinstance(first, HistoryMessage)
            assert (first.role, first.text) == ("user", "what is the weather?")
            assert isinstance(call, HistoryFunctionCall)
            assert (call.call_id, call.output) == (end.call_id, None)  # a snapshot at the call
            assert last_assistant_text(session) == "Tool said: sunny for Ada"
            assert session.options.context is account

    run(body())


def supervisor(history: tuple[Any, ...], order: str) -> dict[str, Any]:
    """The backend "model" a tool delegates to: here plain application code reading the
    conversation it was handed (in docs/agents.md it is a chat model)."""
    said = [m.text for m in history if isinstance(m, HistoryMessage) and m.role == "user"]
    approved = any("broken" in text for text in said)
    return {"order": order, "approved": approved, "heard": said[-1]}


def test_delegation_hands_the_conversation_to_a_backend_and_speaks_its_answer() -> None:
    @function_tool
    async def refund(ctx: ToolContext[None], order: str) -> dict[str, Any]:
        """Ask the refund supervisor."""
        return await asyncio.to_thread(supervisor, ctx.history, order)

    agent = RealtimeAgent(name="support", tools=[refund])

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            await ask(session, "hello, my kettle arrived broken")
            await ask(session, "I want a refund please")
            answer = json.loads(last_assistant_text(session).removeprefix("Supervisor: "))
            assert answer == {
                "order": "A17",
                "approved": True,
                "heard": "I want a refund please",
            }

    run(body())


# --- tool guardrails ----------------------------------------------------------------------------


@tool_input_guardrail
def no_rome(call: ToolCall) -> GuardrailResult:
    rome = call.arguments.get("city") == "Rome"
    return GuardrailResult(rome, {"city": call.arguments.get("city")}, "Rome is out of reach.")


def test_an_input_guardrail_after_approval_rejects_without_running_the_tool() -> None:
    get_weather, ran = counting_tool(needs_approval=True, input_guardrails=[no_rome])
    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            await session.send_message("rome please")
            request = (await until(session, "tool_approval_requested"))[-1]
            assert isinstance(request, ToolApprovalRequestedEvent)
            session.approve_tool_call(request.call_id)
            events = await settle(session)
            assert ran == []
            assert not of_type(events, ToolStartEvent)
            (tripped,) = of_type(events, ToolGuardrailTrippedEvent)
            assert (tripped.guardrail, tripped.stage, tripped.output) == ("no_rome", "input", None)
            assert tripped.result.output_info == {"city": "Rome"}
            assert last_assistant_text(session) == "Tool said: Rome is out of reach."
            # A call the guardrail lets through runs.
            await session.send_message("weather in paris")
            request = (await until(session, "tool_approval_requested"))[-1]
            assert isinstance(request, ToolApprovalRequestedEvent)
            session.approve_tool_call(request.call_id)
            await settle(session)
            assert ran == ["Paris"]

    run(body())


def test_an_input_guardrail_before_approval_rejects_without_asking() -> None:
    early = tool_input_guardrail(before_approval=True)(no_rome.function)
    get_weather, ran = counting_tool(needs_approval=True, input_guardrails=[early])
    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            events = await ask(session, "rome please")
            assert not of_type(events, ToolApprovalRequestedEvent)
            assert ran == []
            (tripped,) = of_type(events, ToolGuardrailTrippedEvent)
            assert tripped.stage == "input"
            assert last_assistant_text(session) == "Tool said: Rome is out of reach."

    run(body())


def test_an_output_guardrail_withholds_the_output() -> None:
    @tool_output_guardrail
    async def no_secrets(call: ToolCall, output: str) -> bool:
        return "secret" in output

    get_weather, ran = counting_tool(
        answer=lambda city: "the secret code is 42", output_guardrails=[no_secrets]
    )
    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            events = await ask(session, "weather?")
            assert ran == ["Paris"]
            (tripped,) = of_type(events, ToolGuardrailTrippedEvent)
            assert (tripped.stage, tripped.output) == ("output", "the secret code is 42")
            (end,) = of_type(events, ToolEndEvent)
            assert "42" not in end.output
            assert end.output.startswith("The guardrail no_secrets blocked")
            assert "secret code" not in last_assistant_text(session)

    run(body())


def test_a_raising_tool_guardrail_is_reported_and_lets_the_call_through() -> None:
    @tool_input_guardrail
    def broken(call: ToolCall) -> bool:
        raise RuntimeError("guardrail bug")

    get_weather, ran = counting_tool(input_guardrails=[broken])
    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            events = await ask(session, "weather?")
            assert ran == ["Paris"]
            (error,) = of_type(events, ErrorEvent)
            assert error.source == "guardrail"
            assert "broken" in error.message

    run(body())


def test_tool_guardrails_are_checked_at_declaration() -> None:
    with pytest.raises(ConfigurationError, match="tool input guardrail"):
        counting_tool(input_guardrails=[no_rome.function])
    with pytest.raises(ConfigurationError, match="on_timeout"):
        counting_tool(on_timeout="ignore")


# --- timeouts and error messages ----------------------------------------------------------------


def test_on_timeout_raise_sends_no_output_and_fails_the_call() -> None:
    stuck = StuckTool(timeout_s=0.05, on_timeout="raise")
    agent = RealtimeAgent(name="a", tools=[stuck.tool])

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            await session.send_message("weather?")
            events = await until(session, "function_tools_executed")
            assert stuck.cancelled.is_set()
            end, error = tool_failure(events, TimeoutError)
            assert end.output == ""
            assert "on_timeout='raise'" in error.message
            (executed,) = of_type(events, FunctionToolsExecutedEvent)
            (outcome,) = executed.outcomes
            assert (outcome.failed, outcome.is_error) == (True, True)
            assert not executed.response_requested
            call = next(i for i in session.history if isinstance(i, HistoryFunctionCall))
            assert call.output is None  # nothing was sent for the call
            assert len(session.protocol.responses.all()) == 1
            assert session.tool_calls_in_progress == 0

    run(body())


def test_error_messages_follow_per_call_then_formatter_then_default() -> None:
    seen: list[ToolErrorInfo] = []

    def formatter(info: ToolErrorInfo) -> str | None:
        seen.append(info)
        if info.kind == "timeout":
            return None  # the default text
        return f"[{info.kind}] {info.call.name} could not run"

    get_weather, ran = counting_tool(needs_approval=True)

    @function_tool(timeout_s=0.05)
    async def refund(order: str) -> str:
        await asyncio.sleep(30)
        return "never"

    agent = RealtimeAgent(name="a", tools=[get_weather, refund])

    async def body() -> None:
        async with agent_session(
            agent, SCENARIO, tool_error_formatter=formatter, tool_rejection_message="unused"
        ) as session:
            await session.send_message("weather?")
            request = (await until(session, "tool_approval_requested"))[-1]
            assert isinstance(request, ToolApprovalRequestedEvent)
            session.reject_tool_call(request.call_id, message="Not today.")
            await settle(session)
            assert last_assistant_text(session) == "Tool said: Not today."  # per-call wins
            await session.send_message("rome?")
            request = (await until(session, "tool_approval_requested"))[-1]
            assert isinstance(request, ToolApprovalRequestedEvent)
            session.reject_tool_call(request.call_id)
            await settle(session)
            assert last_assistant_text(session) == "Tool said: [rejected] get_weather could not run"
            await ask(session, "refund")
            assert last_assistant_text(session) == (
                "Supervisor: The tool refund timed out after 0.05 seconds."
            )
            assert ran == []
            assert [i.kind for i in seen] == ["rejected", "timeout"]
            assert seen[1].default_message.startswith("The tool refund timed out")

    run(body())


def test_a_failing_formatter_is_reported_and_the_default_used() -> None:
    def formatter(info: ToolErrorInfo) -> str | None:
        raise ValueError("formatter bug")

    @function_tool
    async def get_weather(city: str) -> str:
        raise RuntimeError("down")

    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, SCENARIO, tool_error_formatter=formatter) as session:
            events = await ask(session, "weather?")
            errors = of_type(events, ErrorEvent)
            assert any("tool_error_formatter raised" in e.message for e in errors)
            assert last_assistant_text(session) == (
                "Tool said: An error occurred while running the tool get_weather: down"
            )

    run(body())


def test_always_reject_answers_later_calls_without_asking() -> None:
    get_weather, ran = counting_tool(needs_approval=True)
    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with agent_session(
            agent, SCENARIO, tool_error_formatter=lambda info: f"refused ({info.kind})"
        ) as session:
            await session.send_message("weather?")
            request = (await until(session, "tool_approval_requested"))[-1]
            assert isinstance(request, ToolApprovalRequestedEvent)
            session.reject_tool_call(request.call_id, always=True)
            await settle(session)
            events = await ask(session, "rome?")
            assert not of_type(events, ToolApprovalRequestedEvent)
            assert ran == []
            assert session.pending_tool_approvals == ()
            assert last_assistant_text(session) == "Tool said: refused (rejected)"

    run(body())


# --- progress ------------------------------------------------------------------------------------


def test_a_generator_tool_sends_progress_then_its_result() -> None:
    @function_tool
    async def get_weather(city: str) -> AsyncIterator[Any]:
        yield progress("Asking the weather station")
        await asyncio.sleep(0)
        yield progress({"stage": "reading"})
        yield {"city": city, "sky": "clear"}
        raise AssertionError("the generator is closed after its result")

    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, SCENARIO) as session:
            events = await ask(session, "weather?")
            updates = of_type(events, ToolProgressEvent)
            assert [u.output for u in updates] == [
                "Asking the weather station",
                '{"stage":"reading"}',
            ]
            (end,) = of_type(events, ToolEndEvent)
            assert (json.loads(end.output), end.error) == ({"city": "Paris", "sky": "clear"}, None)
            kinds = [(type(i).__name__, getattr(i, "role", None)) for i in session.history]
            assert kinds == [
                ("HistoryMessage", "user"),
                ("HistoryFunctionCall", None),
                ("HistoryMessage", "system"),
                ("HistoryMessage", "system"),
                ("HistoryFunctionCallOutput", None),
                ("HistoryMessage", "assistant"),
            ]
            note = session.history[2]
            assert isinstance(note, HistoryMessage)
            assert "Asking the weather station" in note.text
            assert end.call_id in note.text
            assert [e.source for e in of_type(events, SpeechCreatedEvent)] == [
                "response",
                "tool_response",
            ]

    run(body())


def test_progress_with_respond_asks_for_a_response_and_a_generator_without_result_fails() -> None:
    @function_tool
    async def get_weather(city: str) -> AsyncIterator[Any]:
        yield progress("One moment", respond=True)

    agent = RealtimeAgent(name="a", tools=[get_weather])
    server = ScriptedServer()

    async def body() -> None:
        async with RealtimeSession(agent, connector=server.connect) as session:
            await server.function_call_response(
                [("c1", "get_weather", '{"city": "Oslo"}')], response_id="resp_1"
            )
            events = await until(session, "tool_end")
            (end,) = of_type(events, ToolEndEvent)
            assert isinstance(end.error, RuntimeError)
            assert "without a result" in str(end.error)
            await server.wait_for("response.create")
            sent = [
                (e["type"], e.get("item", {}).get("role"), e.get("item", {}).get("type"))
                for e in server.sent
                if e["type"] in ("conversation.item.create", "response.create")
            ]
            assert sent[0] == ("conversation.item.create", "system", "message")
            assert ("response.create", None, None) in sent
            outputs = server.sent_of_type("conversation.item.create")
            assert [o["item"]["type"] for o in outputs] == ["message", "function_call_output"]

    run(body())


PROGRESS = Scenario.from_mapping(
    {
        "rules": [
            {"after_system": "Progress of the get_weather", "say": "Still checking the weather."},
            {"match": "weather", "call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"after_tool": "get_weather", "say": "Tool said: {output}"},
        ],
    }
)


def test_progress_with_respond_is_spoken_before_the_result() -> None:
    released = asyncio.Event()

    @function_tool
    async def get_weather(city: str) -> AsyncIterator[Any]:
        yield progress("One moment", respond=True)
        await released.wait()
        yield f"sunny in {city}"

    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, PROGRESS) as session:
            await session.send_message("weather?")
            first = await until(
                session,
                lambda e: isinstance(e, AssistantTranscriptDoneEvent) and "Still" in e.transcript,
            )
            released.set()
            events = first + await settle(session)
            assert [
                m.text
                for m in session.history
                if isinstance(m, HistoryMessage) and m.role == "assistant"
            ] == ["Still checking the weather.", "Tool said: sunny in Paris"]
            assert [e.source for e in of_type(events, SpeechCreatedEvent)] == [
                "response",
                "tool_response",
                "tool_response",
            ]

    run(body())
