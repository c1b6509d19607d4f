"""Local MCP servers as the agent's tools, end to end: the local realtime server's scenario
calls a tool by name, the session runs it on a real MCP server (tests/agents/mcp_server.py,
over stdio or streamable HTTP) through the function-tool machinery."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.asyncio.agent_helpers import (
    agent_session,
    ask,
    last_assistant_text,
    of_type,
    server_tools,
    settle,
)
from tests.asyncio.helpers import assert_only_current_task, poll, run, serving, speech_pcm, until
from tests.children import ROOT, child_env
from voxwire.agents import (
    GuardrailResult,
    MCPServerHTTP,
    MCPServerStdio,
    RealtimeAgent,
    ToolCall,
    function_tool,
    tool_input_guardrail,
)
from voxwire.asyncio import McpConnection, RealtimeSession
from voxwire.asyncio.events import (
    ErrorEvent,
    ToolApprovalRequestedEvent,
    ToolEndEvent,
    ToolProgressEvent,
)
from voxwire.asyncio.events.guardrail import ToolGuardrailTrippedEvent
from voxwire.exceptions import ConfigurationError
from voxwire.server import Scenario
from voxwire.server.engines.transcribe import WhisperTranscriber

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "call": {"name": "weather", "arguments": {"city": "Paris"}}},
            {"after_tool": "weather", "say": "Tool said: {output}"},
        ],
        "fallback": "You said: {text}",
    }
)


def stdio_server(name: str = "test", runs: Path | None = None, **options: object) -> MCPServerStdio:
    env = child_env(**({"VOXWIRE_MCP_RUNS": str(runs)} if runs is not None else {}))
    return MCPServerStdio(
        name=name,
        command=sys.executable,
        args=["-m", "tests.agents.mcp_server"],
        env=env,
        cwd=str(ROOT),
        **options,  # type: ignore[arg-type]
    )


def test_a_turn_calls_a_stdio_mcp_tool() -> None:
    agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server()])

    async def body() -> None:
        async with agent_session(agent, SCENARIO, wait_for_session_updated=True) as session:
            events = await ask(session, "what is the weather")
            assert last_assistant_text(session) == "Tool said: Sunny in Paris"
            assert [e.name for e in of_type(events, ToolEndEvent)] == ["weather"]

    run(body())


SCENARIO_ALL = Scenario.from_mapping(
    {
        "rules": [
            {
                "match": "both",
                "call": [
                    {"name": "local__weather", "arguments": {"city": "Paris"}},
                    {"name": "remote__weather", "arguments": {"city": "Rome"}},
                ],
            },
            {"after_tool": "remote__weather", "say": "Tool said: {output}"},
            {"after_tool": "local__weather", "say": "Tool said: {output}"},
            {"match": "add", "call": {"name": "add", "arguments": {"a": 2, "b": 3}}},
            {"after_tool": "add", "say": "Tool said: {output}"},
            {"match": "note", "call": {"name": "note", "arguments": {"context": "kitchen"}}},
            {"after_tool": "note", "say": "Tool said: {output}"},
            {"match": "steps", "call": {"name": "steps", "arguments": {}}},
            {"after_tool": "steps", "say": "Tool said: {output}"},
            {"match": "fail", "call": {"name": "fail", "arguments": {}}},
            {"after_tool": "fail", "say": "Tool said: {output}"},
            {"match": "die", "call": {"name": "die", "arguments": {}}},
            {"after_tool": "die", "say": "Tool said: {output}"},
            {"match": "grow", "call": {"name": "grow", "arguments": {}}},
            {"after_tool": "grow", "say": "Tool said: {output}"},
            {"match": "slow", "call": {"name": "slow", "arguments": {"seconds": 60}}},
            {"after_tool": "slow", "say": "Tool said: {output}"},
        ],
        "fallback": "You said: {text}",
    }
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def start_http(port: int) -> asyncio.subprocess.Process:
    """The test MCP server over streamable HTTP on ``port``, in a child process, accepting."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.agents.mcp_server",
        "http",
        str(port),
        cwd=str(ROOT),
        env=child_env(),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    for _ in range(400):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return child
    child.kill()
    await child.wait()
    raise AssertionError("the MCP server never accepted connections")


@contextlib.asynccontextmanager
async def http_server() -> AsyncIterator[str]:
    """The test MCP server over streamable HTTP in a child process; its URL."""
    port = free_port()
    child = await start_http(port)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        child.terminate()
        await child.wait()


def children() -> set[int]:
    """The pids of this process's live child processes (from /proc)."""
    mine = str(os.getpid())
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[1] == mine and fields[0] != "Z":
            pids.add(int(entry.name))
    return pids


def test_one_turn_calls_a_stdio_and_an_http_tool_of_the_same_name() -> None:
    async def body() -> None:
        async with http_server() as url:
            remote = MCPServerHTTP(name="remote", url=url)
            agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server("local"), remote])
            async with agent_session(agent, SCENARIO_ALL, wait_for_session_updated=True) as session:
                # Both servers have "weather": each is offered under its server's prefix.
                tools = server_tools(session)
                assert {"local__weather", "remote__weather", "local__add"} <= set(tools)
                assert "weather" not in tools
                events = await ask(session, "both")
                ends = {e.name: e.output for e in of_type(events, ToolEndEvent)}
                assert ends == {
                    "local__weather": "Sunny in Paris",
                    "remote__weather": "Sunny in Rome",
                }

    run(body(), timeout_s=60)


def test_allow_and_deny_lists_and_a_function_tool_keeping_its_name() -> None:
    @function_tool
    def add(a: int, b: int) -> str:
        """Adds here."""
        return f"local {a + b}"

    server = stdio_server(allowed_tools=["add", "weather", "fail"], blocked_tools=["fail"])
    agent = RealtimeAgent(name="agent", tools=[add], mcp_servers=[server])

    async def body() -> None:
        async with agent_session(agent, SCENARIO_ALL, wait_for_session_updated=True) as session:
            assert sorted(server_tools(session)) == ["add", "test__add", "weather"]
            await ask(session, "add")
            assert last_assistant_text(session) == "Tool said: local 5"

    run(body())


def test_an_approval_asked_and_refused_does_not_run_the_tool(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    agent = RealtimeAgent(
        name="agent", mcp_servers=[stdio_server(runs=runs, needs_approval={"add": True})]
    )

    async def body() -> None:
        async with agent_session(agent, SCENARIO_ALL, wait_for_session_updated=True) as session:
            await session.send_message("add")
            (request,) = of_type(
                await until(session, "tool_approval_requested"), ToolApprovalRequestedEvent
            )
            assert request.name == "add"
            session.reject_tool_call(request.call_id, message="The user said no.")
            await settle(session)
            assert last_assistant_text(session) == "Tool said: The user said no."

    run(body())
    assert not runs.exists()


def test_a_tool_input_guardrail_trips_before_the_server_is_called(tmp_path: Path) -> None:
    @tool_input_guardrail
    def small_numbers(call: ToolCall) -> GuardrailResult:
        big = call.arguments.get("b", 0) > 2
        return GuardrailResult(big, {"b": call.arguments.get("b")}, "Numbers over 2 are refused.")

    runs = tmp_path / "runs"
    server = stdio_server(runs=runs, input_guardrails=[small_numbers])
    agent = RealtimeAgent(name="agent", mcp_servers=[server])

    async def body() -> None:
        async with agent_session(agent, SCENARIO_ALL, wait_for_session_updated=True) as session:
            events = await ask(session, "add")
            assert of_type(events, ToolGuardrailTrippedEvent)
            assert last_assistant_text(session) == "Tool said: Numbers over 2 are refused."

    run(body())
    assert not runs.exists()


def test_the_servers_progress_notifications_are_tool_progress() -> None:
    agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server()])

    async def body() -> None:
        async with agent_session(agent, SCENARIO_ALL, wait_for_session_updated=True) as session:
            events = await ask(session, "steps")
            updates = [e.output for e in of_type(events, ToolProgressEvent)]
            assert updates == ["Half way", "progress 2 of 2"]
            assert last_assistant_text(session) == "Tool said: all done"

    run(body())


def test_an_argument_named_context_reaches_the_server() -> None:
    agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server()])

    async def body() -> None:
        async with agent_session(agent, SCENARIO_ALL, wait_for_session_updated=True) as session:
            await ask(session, "note")
            assert last_assistant_text(session) == "Tool said: noted: kitchen"

    run(body())


def test_an_error_result_is_an_error_output_and_the_session_goes_on() -> None:
    agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server()])

    async def body() -> None:
        async with agent_session(agent, SCENARIO_ALL, wait_for_session_updated=True) as session:
            events = await ask(session, "fail")
            # The SDK's server hides the exception's text: its error result says which tool.
            assert last_assistant_text(session) == (
                "Tool said: An error occurred while running the tool fail: "
                "Error executing tool fail"
            )
            assert [e.source for e in of_type(events, ErrorEvent)] == ["tool"]

    run(body())


def test_a_stdio_server_killed_mid_call_is_reported_and_its_tools_withdrawn() -> None:
    agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server()])

    async def body() -> None:
        async with agent_session(agent, SCENARIO_ALL, wait_for_session_updated=True) as session:
            assert "die" in server_tools(session)
            events = await ask(session, "die")
            await poll(lambda: not server_tools(session))
            lost = [e for e in of_type(events, ErrorEvent) if e.code == "mcp_server_lost"]
            assert len(lost) == 1
            assert "'test'" in lost[0].message
            assert last_assistant_text(session).startswith("Tool said: An error occurred")
            await ask(session, "still there?")  # the session lives
            assert last_assistant_text(session) == "You said: still there?"

    run(body())


def test_tools_list_changed_updates_the_session() -> None:
    agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server()])

    async def body() -> None:
        async with agent_session(agent, SCENARIO_ALL, wait_for_session_updated=True) as session:
            assert "fresh" not in server_tools(session)
            await ask(session, "grow")
            # The refresh's session.update is acknowledged with no session event: poll.
            await poll(lambda: "fresh" in server_tools(session))

    run(body())


def test_no_server_process_is_left_after_close() -> None:
    agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server("a"), stdio_server("b")])
    before = children()

    async def body() -> None:
        async with agent_session(agent, SCENARIO, wait_for_session_updated=True) as session:
            assert len(children() - before) == 2
            await ask(session, "what is the weather")

    run(body())
    assert children() - before == set()


def test_a_barge_in_cancels_a_slow_mcp_call() -> None:
    agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server()])
    vad = {
        "output_modalities": ["text"],
        "audio": {"input": {"turn_detection": {"type": "server_vad"}}},
    }

    async def body() -> None:
        async with (
            serving(scenario=SCENARIO_ALL) as server,
            RealtimeSession(agent, url=server.url(), config=vad) as session,
        ):
            await session.send_message("slow")
            await until(session, "tool_start")
            # The user speaks while the call waits 60 s: server VAD's speech_started cancels it.
            await session.send_audio(speech_pcm("Never mind, forget it."))
            end = (await until(session, "tool_end"))[-1]
            assert isinstance(end, ToolEndEvent)
            assert (
                end.output
                == "The call was cancelled: the user started speaking before it finished."
            )
            assert end.error is None

    run(body(), timeout_s=40)


def test_an_http_server_that_restarted_is_connected_again() -> None:
    async def body() -> None:
        port = free_port()
        child = await start_http(port)
        server = MCPServerHTTP(name="remote", url=f"http://127.0.0.1:{port}/mcp")
        agent = RealtimeAgent(name="agent", mcp_servers=[server])
        try:
            async with agent_session(agent, SCENARIO, wait_for_session_updated=True) as session:
                await ask(session, "what is the weather")
                assert last_assistant_text(session) == "Tool said: Sunny in Paris"
                child.terminate()
                await child.wait()
                child = await start_http(port)  # a new server: it knows no session
                events = await ask(session, "what is the weather now")
                assert last_assistant_text(session) == "Tool said: Sunny in Paris"
                assert not of_type(events, ErrorEvent)
        finally:
            child.terminate()
            await child.wait()

    run(body(), timeout_s=60)


def test_a_slow_call_times_out_with_the_servers_timeout_and_is_traced() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server(timeout_s=0.5)])

    async def body() -> None:
        async with agent_session(agent, SCENARIO_ALL, tracer_provider=provider) as session:
            events = await ask(session, "slow")
            assert last_assistant_text(session) == (
                "Tool said: The tool slow timed out after 0.5 seconds."
            )
            (end,) = of_type(events, ToolEndEvent)
            assert end.error is not None

    run(body())
    spans = [s for s in exporter.get_finished_spans() if s.name == "voxwire.realtime.tool"]
    assert [(s.attributes or {}).get("voxwire.tool.name") for s in spans] == ["slow"]


def test_a_connection_the_application_opened_is_shared_by_sessions_and_left_open() -> None:
    server = stdio_server()
    agent = RealtimeAgent(name="agent", mcp_servers=[server])
    before = children()

    async def body() -> None:
        async with McpConnection(server) as connection:
            (process,) = children() - before
            for _ in range(2):  # one session after the other, then two at once
                async with agent_session(
                    agent, SCENARIO, wait_for_session_updated=True, mcp_connections=[connection]
                ) as session:
                    await ask(session, "what is the weather")
                    assert last_assistant_text(session) == "Tool said: Sunny in Paris"
                assert children() - before == {process}  # still running, the same process
            async with (
                agent_session(agent, SCENARIO, mcp_connections=[connection]) as first,
                agent_session(agent, SCENARIO, mcp_connections=[connection]) as second,
            ):
                await asyncio.gather(ask(first, "weather?"), ask(second, "the weather!"))
                assert last_assistant_text(first) == last_assistant_text(second)
            assert children() - before == {process}

    run(body(), timeout_s=60)
    assert children() - before == set()


@pytest.mark.skipif(
    not WhisperTranscriber.installed(), reason="needs the transcribe extra (faster-whisper)"
)
def test_a_spoken_turn_calls_a_stdio_and_an_http_tool() -> None:
    spoken = {
        "output_modalities": ["text"],
        "audio": {
            "input": {
                "turn_detection": {"type": "server_vad"},
                "transcription": {"model": "whisper-1"},
            }
        },
    }

    async def body() -> None:
        async with http_server() as url:
            remote = MCPServerHTTP(name="remote", url=url)
            agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server("local"), remote])
            async with (
                serving(scenario=SCENARIO_ALL) as server,
                RealtimeSession(agent, url=server.url(), config=spoken) as session,
            ):
                await session.send_audio(speech_pcm("What is the weather in both cities?"))
                await session.send_audio(bytes(24_000 * 2))  # silence: the turn ends
                ended: list[ToolEndEvent] = []

                def both_ended(event: object) -> bool:
                    if isinstance(event, ToolEndEvent):
                        ended.append(event)
                    return len(ended) == 2

                events = await until(session, both_ended, timeout_s=60)
                ends = {e.name: e.output for e in of_type(events, ToolEndEvent)}
                assert ends == {
                    "local__weather": "Sunny in Paris",
                    "remote__weather": "Sunny in Rome",
                }

    run(body(), timeout_s=90)


def test_a_server_that_cannot_start_is_reported_and_the_session_starts() -> None:
    broken = MCPServerStdio(name="broken", command=str(ROOT / "no-such-server"))
    agent = RealtimeAgent(name="agent", mcp_servers=[broken, stdio_server()])

    async def body() -> None:
        async with agent_session(agent, SCENARIO, wait_for_session_updated=True) as session:
            assert "weather" in server_tools(session)  # the other server's tools
            events = await ask(session, "what is the weather")
            assert last_assistant_text(session) == "Tool said: Sunny in Paris"
        unavailable = [e for e in of_type(events, ErrorEvent) if e.code == "mcp_server_unavailable"]
        assert len(unavailable) == 1  # queued while connecting: the first events read
        assert "'broken'" in unavailable[0].message

    run(body())
    with pytest.raises(ConfigurationError, match="expected an MCPServerStdio"):
        McpConnection("python server.py")  # type: ignore[arg-type]


def test_an_agent_switched_to_brings_its_servers_and_close_stops_them() -> None:
    plain = RealtimeAgent(name="plain")
    with_tools = RealtimeAgent(name="with_tools", mcp_servers=[stdio_server()])
    before = children()

    async def body() -> None:
        async with agent_session(plain, SCENARIO, wait_for_session_updated=True) as session:
            assert server_tools(session) == []
            assert children() - before == set()  # nothing started for an agent without servers
            await session.update_agent(with_tools)
            assert "weather" in server_tools(session)
            await ask(session, "what is the weather")
            assert last_assistant_text(session) == "Tool said: Sunny in Paris"
            await session.update_agent(plain)  # its tools go; its server stays connected
            assert server_tools(session) == []
            assert len(children() - before) == 1

    run(body())
    assert children() - before == set()


def test_a_stdio_server_that_dies_between_calls_is_noticed_at_once() -> None:
    agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server()])
    before = children()

    async def body() -> None:
        async with agent_session(agent, SCENARIO, wait_for_session_updated=True) as session:
            (process,) = children() - before
            os.kill(process, signal.SIGKILL)  # no call runs
            lost = await until(session, lambda e: getattr(e, "code", None) == "mcp_server_lost")
            assert isinstance(lost[-1], ErrorEvent)
            await poll(lambda: not server_tools(session))
            await ask(session, "still there?")
            assert last_assistant_text(session) == "You said: still there?"

    run(body())


def test_no_task_is_left_after_close() -> None:
    agent = RealtimeAgent(name="agent", mcp_servers=[stdio_server()])

    async def body() -> None:
        async with agent_session(agent, SCENARIO, wait_for_session_updated=True) as session:
            await ask(session, "what is the weather")
        assert_only_current_task()

    run(body())
