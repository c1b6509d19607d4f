"""Function tools run by the session: round trips against the local server, concurrency, one
follow-up per response, failures reported without ending the session, output delivery retried
without running the tool twice, and no task left after close."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from tests.asyncio.agent_helpers import (
    StuckTool,
    agent_session,
    ask,
    counting_tool,
    last_assistant_text,
    of_type,
    tool_error,
    tool_failure,
)
from tests.asyncio.helpers import MANUAL, assert_only_current_task, run, serving, until
from voxwire.agents import (
    RealtimeAgent,
    ToolContext,
    background_result,
    function_tool,
)
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.connection.transport import ConnectRequest, Transport, connect_websocket
from voxwire.asyncio.events import (
    ConversationItemAddedEvent,
    ErrorEvent,
    FunctionToolsExecutedEvent,
    SpeechCreatedEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from voxwire.asyncio.events.history import HistoryFunctionCall, HistoryFunctionCallOutput
from voxwire.server import Scenario
from voxwire.testing import ScriptedServer

WEATHER = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"after_tool": "get_weather", "say": "Tool said: {output}"},
            {
                "match": "both",
                "call": [
                    {"name": "get_weather", "arguments": {"city": "Paris"}},
                    {"name": "get_time", "arguments": {"city": "Paris"}},
                ],
            },
            {"after_tool": "get_time", "say": "Done: {output}"},
            {"match": "typo", "call": {"name": "get_weather", "arguments": {"town": 3}}},
        ],
        "fallback": "You said: {text}",
    }
)


def test_a_tool_round_trip_against_the_local_server() -> None:
    get_weather, calls = counting_tool(answer=lambda city: {"temperature": 21, "city": city})
    agent = RealtimeAgent(name="forecaster", instructions="Answer.", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, WEATHER) as session:
            events = await ask(session, "what is the weather?")
            assert calls == ["Paris"]
            (start,) = of_type(events, ToolStartEvent)
            (end,) = of_type(events, ToolEndEvent)
            assert (start.name, json.loads(start.arguments), start.agent) == (
                "get_weather",
                {"city": "Paris"},
                agent,
            )
            assert json.loads(end.output) == {"temperature": 21, "city": "Paris"}
            assert end.error is None
            (executed,) = of_type(events, FunctionToolsExecutedEvent)
            assert executed.response_requested
            assert [o.call_id for o in executed.outcomes] == [start.call_id]
            sources = [e.source for e in of_type(events, SpeechCreatedEvent)]
            assert sources == ["response", "tool_response"]
            kinds = [type(i).__name__ for i in session.history]
            assert kinds == [
                "HistoryMessage",
                "HistoryFunctionCall",
                "HistoryFunctionCallOutput",
                "HistoryMessage",
            ]
            assert last_assistant_text(session).startswith('Tool said: {"temperature":21')
            # The tool ran before the follow-up was created, and events came in that order.
            order = [e.type for e in events]
            assert order.index("tool_end") < order.index("function_tools_executed")
            assert session.background_tasks == 0

    run(body())


def test_calls_of_one_response_run_concurrently_and_get_one_follow_up() -> None:
    both_running = asyncio.Event()
    running = 0

    async def rendezvous() -> None:
        # Each tool waits until the other one runs too: run one after the other, they would
        # both time out instead.
        nonlocal running
        running += 1
        if running == 2:
            both_running.set()
        await asyncio.wait_for(both_running.wait(), 5)

    @function_tool
    async def get_weather(city: str) -> str:
        await rendezvous()
        return "sunny"

    @function_tool
    async def get_time(city: str) -> str:
        await rendezvous()
        return "noon"

    agent = RealtimeAgent(name="a", tools=[get_weather, get_time])

    async def body() -> None:
        async with agent_session(agent, WEATHER) as session:
            events = await ask(session, "both please")
            (executed,) = of_type(events, FunctionToolsExecutedEvent)
            assert [(o.name, o.output) for o in executed.outcomes] == [
                ("get_weather", "sunny"),
                ("get_time", "noon"),
            ]
            # One follow-up response, after both outputs are in the conversation.
            assert [e.source for e in of_type(events, SpeechCreatedEvent)] == [
                "response",
                "tool_response",
            ]
            kinds = [i.type for i in session.history]
            assert kinds == [
                "message",
                "function_call",
                "function_call",
                "function_call_output",
                "function_call_output",
                "message",
            ]
            assert last_assistant_text(session) == "Done: noon"
            assert not of_type(events, ErrorEvent)

    run(body())


def test_a_sync_tool_runs_in_a_thread_and_gets_its_context() -> None:
    seen: dict[str, Any] = {}

    @function_tool
    def get_weather(context: ToolContext, city: str) -> str:
        seen["thread"] = threading.current_thread() is not threading.main_thread()
        seen["call_id"] = context.call_id
        seen["agent"] = context.agent.name
        return f"rain in {city}"

    agent = RealtimeAgent(name="threads", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, WEATHER) as session:
            events = await ask(session, "weather?")
            (end,) = of_type(events, ToolEndEvent)
            assert seen == {"thread": True, "call_id": end.call_id, "agent": "threads"}
            assert last_assistant_text(session) == "Tool said: rain in Paris"

    run(body())


def test_a_failing_tool_is_reported_and_the_model_is_told() -> None:
    @function_tool(failure_message=lambda call, exc: f"sorry: {exc}")
    async def get_weather(city: str) -> str:
        raise RuntimeError("the weather service is down")

    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, WEATHER) as session:
            events = await ask(session, "weather?")
            end, _ = tool_failure(events, RuntimeError)
            assert end.output == "sorry: the weather service is down"
            assert last_assistant_text(session) == "Tool said: sorry: the weather service is down"
            # The session goes on.
            await ask(session, "hello there")
            assert last_assistant_text(session) == "You said: hello there"

    run(body())


def test_a_tool_that_cancels_itself_is_a_failure_not_a_hang() -> None:
    @function_tool
    async def get_weather(city: str) -> str:
        raise asyncio.CancelledError  # e.g. it awaited something another task cancelled

    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, WEATHER) as session:
            events = await ask(session, "weather?")
            _, error = tool_failure(events, Exception)
            assert "cancelled by its own code" in str(error.exception)
            assert last_assistant_text(session).startswith("Tool said: An error occurred")

    run(body())


def test_a_timeout_gives_the_model_the_configured_message_and_cancels_the_tool() -> None:
    stuck = StuckTool(timeout_s=0.05, timeout_message="The weather service is slow today.")
    agent = RealtimeAgent(name="a", tools=[stuck.tool])

    async def body() -> None:
        async with agent_session(agent, WEATHER) as session:
            events = await ask(session, "weather?")
            assert stuck.cancelled.is_set()
            _, error = tool_failure(events, TimeoutError)
            assert "timed out" in error.message
            assert last_assistant_text(session) == "Tool said: The weather service is slow today."

    run(body())


def test_arguments_that_do_not_fit_are_sent_back_without_running_the_tool() -> None:
    get_weather, calls = counting_tool()
    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, WEATHER) as session:
            events = await ask(session, "typo")
            assert calls == []
            assert not of_type(events, ToolStartEvent)
            tool_error(events)
            output = next(i for i in session.history if isinstance(i, HistoryFunctionCallOutput))
            assert output.output.startswith("Invalid arguments for get_weather")

    run(body())


def test_a_background_result_is_delivered_without_a_follow_up() -> None:
    @function_tool
    async def get_weather(city: str) -> Any:
        return background_result({"temperature": 5})

    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with (
            serving(scenario=WEATHER) as server,
            RealtimeSession(agent, url=server.url(), config=MANUAL) as session,
        ):
            await session.send_message("weather?")
            events = await until(session, "function_tools_executed")
            (executed,) = of_type(events, FunctionToolsExecutedEvent)
            assert not executed.response_requested
            assert session.protocol.can_create_response
            assert session.protocol.held_response_creates == 0
            call = next(i for i in session.history if isinstance(i, HistoryFunctionCall))
            assert call.output == '{"temperature":5}'
            assert len(session.protocol.responses.all()) == 1

    run(body())


def test_bad_json_and_unknown_tools_are_answered_with_errors() -> None:
    get_weather, calls = counting_tool()
    agent = RealtimeAgent(name="a", tools=[get_weather])
    server = ScriptedServer()

    async def body() -> None:
        async with RealtimeSession(agent, connector=server.connect) as session:
            await server.function_call_response(
                [("c1", "get_weather", "{not json"), ("c2", "launch_rockets", "{}")],
                response_id="resp_1",
            )
            events = await until(session, "function_tools_executed")
            errors = of_type(events, ErrorEvent)
            assert [e.source for e in errors] == ["tool", "tool"]
            outputs = {
                e["item"]["call_id"]: e["item"]["output"]
                for e in server.sent_of_type("conversation.item.create")
            }
            assert outputs["c1"].startswith("Invalid arguments for get_weather")
            assert outputs["c2"] == "There is no tool named launch_rockets."
            assert calls == []
            await server.wait_for("response.create")
            assert server.sent_types()[-1] == "response.create"

    run(body())


def test_a_rejected_output_is_sent_again_without_running_the_tool_twice() -> None:
    get_weather, runs = counting_tool()
    agent = RealtimeAgent(name="a", tools=[get_weather])
    server = ScriptedServer(acknowledge_items=False)

    async def body() -> None:
        async with RealtimeSession(agent, connector=server.connect) as session:
            await server.function_call_response(
                [("c1", "get_weather", '{"city": "Rome"}')], response_id="resp_1"
            )
            first = await server.wait_for("conversation.item.create")
            await server.emit(
                {
                    "type": "error",
                    "error": {
                        "type": "server_error",
                        "code": "server_error",
                        "message": "try again",
                        "event_id": first["event_id"],
                    },
                }
            )
            second = await server.wait_for("conversation.item.create", count=2)
            assert second["item"] == first["item"]  # the same output, the same item id
            assert second["event_id"] != first["event_id"]
            assert "response.create" not in server.sent_types()  # not before it is in
            await server.emit(
                {
                    "type": "conversation.item.added",
                    "previous_item_id": None,
                    "item": second["item"],
                }
            )
            events = await until(session, "function_tools_executed")
            await server.wait_for("response.create")
            assert runs == ["Rome"]
            (executed,) = of_type(events, FunctionToolsExecutedEvent)
            assert executed.outcomes[0].output == "sunny"
            assert [e.source for e in of_type(events, ErrorEvent)] == ["server"]

    run(body())


class FlakyTransport:
    """A real websocket transport whose first send of a tool output fails (a seam through the
    session's connector, not a patch of websockets)."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.failed = 0

    async def send(self, frame: str) -> None:
        if '"function_call_output"' in frame and not self.failed:
            self.failed += 1
            raise OSError("injected send failure")
        await self.inner.send(frame)

    async def recv(self) -> str | bytes:
        return await self.inner.recv()

    async def close(self) -> None:
        await self.inner.close()


def test_an_output_send_failure_is_retried_without_running_the_tool_twice() -> None:
    transports: list[FlakyTransport] = []

    async def flaky_connect(request: ConnectRequest) -> Transport:
        transport = FlakyTransport(await connect_websocket(request))
        transports.append(transport)
        return transport

    get_weather, runs = counting_tool()
    agent = RealtimeAgent(name="a", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, WEATHER, connector=flaky_connect) as session:
            events = await ask(session, "weather?")
            assert transports[0].failed == 1
            assert runs == ["Paris"]
            assert last_assistant_text(session) == "Tool said: sunny"
            assert not of_type(events, ErrorEvent)
            outputs = [i for i in session.history if isinstance(i, HistoryFunctionCallOutput)]
            assert len(outputs) == 1

    run(body())


def test_close_while_tools_run_leaves_no_task() -> None:
    stuck = StuckTool()
    agent = RealtimeAgent(name="a", tools=[stuck.tool])

    async def body() -> None:
        async with serving(scenario=WEATHER) as server:
            session = RealtimeSession(agent, url=server.url(), config=MANUAL)
            await session.connect()
            await session.send_message("weather?")
            await asyncio.wait_for(stuck.started.wait(), 5)
            assert session.background_tasks == 1
            await session.close()
            assert stuck.cancelled.is_set()
            assert session.background_tasks == 0
            events = [e async for e in session]
            assert events[-1].type == "close"
            assert events[-2].type == "agent_end"
        assert_only_current_task()

    run(body())


def test_the_server_closing_while_a_tool_runs_leaves_no_task() -> None:
    stuck = StuckTool()
    agent = RealtimeAgent(name="a", tools=[stuck.tool])
    server = ScriptedServer()

    async def body() -> None:
        session = RealtimeSession(agent, connector=server.connect)
        await session.connect()
        await server.function_call_response(
            [("c1", "get_weather", '{"city": "Oslo"}')], response_id="resp_1"
        )
        await asyncio.wait_for(stuck.started.wait(), 5)
        await server.close(1000)
        events = [e async for e in session]
        assert events[-1].type == "close"
        assert session.background_tasks == 0
        await session.close()
        assert_only_current_task()

    run(body())


def test_conversation_item_added_comes_once_per_item_when_it_is_complete() -> None:
    """docs/agents.md: ``conversation_item_added`` — once per item, when it is complete (the
    server's ``conversation.item.done``): through a real session on the local server, for the
    user's message, the tool call, its output and the answer, each with its final content."""
    get_weather, _ = counting_tool(answer=lambda city: {"temperature": 21})
    agent = RealtimeAgent(name="forecaster", instructions="Answer.", tools=[get_weather])

    async def body() -> None:
        async with agent_session(agent, WEATHER) as session:
            events = await ask(session, "what is the weather?")
            added = [e.item for e in of_type(events, ConversationItemAddedEvent)]
            assert [i.item_id for i in added] == [i.item_id for i in session.history]
            user, call, output, answer = added
            assert (user.role, user.text) == ("user", "what is the weather?")
            assert isinstance(call, HistoryFunctionCall)
            assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris"})
            assert isinstance(output, HistoryFunctionCallOutput)
            assert (output.call_id, json.loads(output.output)) == (
                call.call_id,
                {"temperature": 21},
            )
            assert answer.role == "assistant"
            assert answer.text == 'Tool said: {"temperature":21}' == last_assistant_text(session)
            # Complete means after the item's last delta: the answer's comes after its text.
            order = [e.type for e in events]
            last_delta = len(order) - 1 - order[::-1].index("assistant_transcript_delta")
            assert order.index("conversation_item_added", last_delta) > last_delta
            # Once: a second turn announces only its own two items.
            more = await ask(session, "hello")
            again = [e.item.item_id for e in of_type(more, ConversationItemAddedEvent)]
            assert again == [i.item_id for i in session.history[4:]]

    run(body())
