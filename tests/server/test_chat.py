"""The chat-completions responder against a tiny real OpenAI-compatible HTTP server on loopback
(a test peer with a deterministic "model"): the request it sends (messages, tools, key), tool
calls over the wire, and the failures (HTTP 500, unreachable, not a completion, an undeclared
tool) — each a failed response with a clear message, the session going on."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.children import default_sigint
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import (
    FunctionCallItem,
    FunctionCallOutputItem,
    InputAudio,
    InputImage,
    InputText,
    MessageItem,
    OutputAudio,
    OutputText,
)
from voxwire.server import CallTool, Say, Turn
from voxwire.server.engines.chat import ChatCompletionsResponder, ChatEndpointError, chat_request

from .helpers import Client, client_of, run, serving

KEY = "sk-chat-secret-1234"
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


class TinyModel:
    """A deterministic chat "model" and what it was asked."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.status = 200
        self.raw: bytes | None = None  # answer these bytes instead of a completion

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        last = body["messages"][-1]
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        message: dict[str, Any]
        if last["role"] == "tool":
            temperature = json.loads(last["content"])["temperature"]
            message = {"role": "assistant", "content": f"It is {temperature} degrees."}
        elif "weather" in str(last["content"]) and "get_weather" in tools:
            message = {
                "role": "assistant",
                "content": "<think>The user wants weather.</think>",
                "tool_calls": [
                    {
                        "id": "call_tiny_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                    }
                ],
            }
        elif "rogue" in str(last["content"]):
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "rm_rf"}}],
            }
        else:
            message = {"role": "assistant", "content": f"Echo: {last['content']}"}
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }


@contextmanager
def chat_server() -> Iterator[tuple[str, TinyModel]]:
    model = TinyModel()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            model.requests.append(body)
            model.headers.append(dict(self.headers))
            if self.path != "/v1/chat/completions":
                self._reply(404, b'{"error": {"message": "no such route"}}')
            elif model.status != 200:
                self._reply(model.status, b'{"error": {"message": "model crashed: CUDA OOM"}}')
            elif model.raw is not None:
                self._reply(200, model.raw)
            else:
                self._reply(200, json.dumps(model.answer(body)).encode())

        def _reply(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, name="tiny-chat-server"
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", model
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_tool_call_round_trip_over_the_wire_and_the_request_sent() -> None:
    async def body() -> None:
        with chat_server() as (url, model):
            responder = ChatCompletionsResponder(url, "tiny-1", api_key=KEY)
            async with (
                serving(scenario=None, responder=responder, tts=None) as server,
                client_of(server) as client,
            ):
                await client.update(instructions="Be brief.", tools=[WEATHER_TOOL])
                await client.say("What is the weather?")
                done = (await client.respond())[-1]["response"]
                assert done["status"] == "completed"
                (call,) = done["output"]  # the <think> block is not said
                assert call["type"] == "function_call"
                assert (call["name"], call["arguments"]) == ("get_weather", '{"city":"Oslo"}')
                await client.send(
                    {
                        "type": "conversation.item.create",
                        "item": {
                            "type": "function_call_output",
                            "call_id": call["call_id"],
                            "output": '{"temperature": 7}',
                        },
                    }
                )
                await client.until("conversation.item.done")
                done = (await client.respond())[-1]["response"]
                assert done["output"][0]["content"][0]["text"] == "It is 7 degrees."
            first, second = model.requests
            assert first["model"] == "tiny-1"
            assert first["stream"] is False
            assert first["messages"] == [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is the weather?"},
            ]
            assert first["tools"] == [
                {
                    "type": "function",
                    "function": {k: WEATHER_TOOL[k] for k in ("name", "description", "parameters")},
                }
            ]
            assert "tool_choice" not in first
            assert second["messages"][2:] == [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call["call_id"],
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call["call_id"], "content": '{"temperature": 7}'},
            ]
            assert model.headers[0]["Authorization"] == f"Bearer {KEY}"
            assert KEY not in repr(responder)

    run(body())


def test_http_500_fails_the_response_clearly_and_the_session_goes_on() -> None:
    async def body() -> None:
        with chat_server() as (url, model):
            responder = ChatCompletionsResponder(url, "tiny-1")
            async with (
                serving(scenario=None, responder=responder, tts=None) as server,
                client_of(server) as client,
            ):
                model.status = 500
                await client.say("hello")
                done = (await client.respond())[-1]["response"]
                assert done["status"] == "failed"
                message = done["status_details"]["error"]["message"]
                assert f"{url}/chat/completions answered HTTP 500" in message
                assert "model crashed: CUDA OOM" in message
                assert "Authorization" not in model.headers[0]  # no key, no header
                model.status = 200  # the model server is back: so is the session
                done = (await client.respond())[-1]["response"]
                assert done["status"] == "completed"
                assert done["output"][0]["content"][0]["text"] == "Echo: hello"

    run(body())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_unreachable_endpoint_fails_the_response_and_the_session_survives() -> None:
    async def body() -> None:
        url = f"http://127.0.0.1:{free_port()}/v1"
        responder = ChatCompletionsResponder(url, "tiny-1", timeout_s=5)
        async with (
            serving(scenario=None, responder=responder, tts=None) as server,
            client_of(server) as client,
        ):
            await client.say("hello")
            done = (await client.respond())[-1]["response"]
            assert done["status"] == "failed"
            error = done["status_details"]["error"]
            assert error["type"] == "server_error"
            assert "is unreachable" in error["message"]
            assert "is the model server running" in error["message"]
            updated = await client.update(instructions="still here")
            assert updated["type"] == "session.updated"

    run(body())


def test_replies_that_are_not_completions_and_undeclared_tools_are_clear_errors() -> None:
    turn = Turn(
        items=[MessageItem(role="user", content=[InputText(text="hi")])],
        instructions="",
        tools=[],
        tool_choice="auto",
    )

    async def body() -> None:
        with chat_server() as (url, model):
            responder = ChatCompletionsResponder(url + "/chat/completions", "tiny-1")
            model.raw = b"<html>proxy error</html>"
            with pytest.raises(ChatEndpointError, match="did not answer with JSON: <html>"):
                await responder.respond(turn)
            model.raw = b"[" * 5000 + b"]" * 5000  # was a RecursionError out of json.loads
            with pytest.raises(ChatEndpointError, match="nests deeper than 64 levels"):
                await responder.respond(turn)
            model.raw = b'{"object": "error"}'
            with pytest.raises(ChatEndpointError, match="not a chat completion"):
                await responder.respond(turn)
            model.raw = None
            rogue = Turn(
                items=[MessageItem(role="user", content=[InputText(text="go rogue")])],
                instructions="",
                tools=["get_weather"],
                tool_choice="auto",
            )
            with pytest.raises(ChatEndpointError, match=r"called 'rm_rf'.*declared: get_weather"):
                await responder.respond(rogue)
            wrong_path = ChatCompletionsResponder(url.removesuffix("/v1"), "tiny-1")
            with pytest.raises(ChatEndpointError, match=r"HTTP 404.*Check --chat-url"):
                await wrong_path.respond(turn)
            assert await responder.respond(turn) == [Say("Echo: hi")]
            # Content as parts and arguments as an object, as some servers answer.
            message = {
                "content": [{"type": "text", "text": "Part one. "}, {"text": "Part two."}],
                "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "R"}}}],
            }
            model.raw = json.dumps({"choices": [{"message": message}]}).encode()
            assert await responder.respond(rogue) == [
                Say("Part one. Part two."),
                CallTool("get_weather", '{"city": "R"}'),
            ]

    asyncio.run(body())


def test_conversation_to_messages() -> None:
    items = [
        MessageItem(role="system", content=[InputText(text="Rules.")]),
        MessageItem(role="user", content=[InputAudio(transcript="Hi there")]),
        MessageItem(role="assistant", content=[OutputAudio(transcript="Hello!")]),
        MessageItem(
            role="user",
            content=[InputAudio(), InputImage(image_url="data:image/png;base64,AAAA")],
        ),
        MessageItem(role="assistant", content=[OutputText(text="Let me look.")]),
        FunctionCallItem(name="get_weather", arguments="{}", call_id="c1"),
        FunctionCallItem(name="get_weather", arguments='{"a":1}', call_id="c2"),
        FunctionCallOutputItem(call_id="c1", output="sunny"),
        FunctionCallOutputItem(call_id="c2", output="rain"),
        FunctionCallItem(name="get_weather", arguments="{}", call_id="unanswered"),
        FunctionCallOutputItem(call_id="orphan", output="?"),
    ]
    turn = Turn(
        items=items,
        instructions="",
        tools=["get_weather"],
        tool_choice="required",
        tool_specs=[WEATHER_TOOL],
    )
    body = chat_request(turn, "m")
    assert body["tool_choice"] == "required"
    assert body["messages"] == [
        {"role": "system", "content": "Rules."},
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello!"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[audio without transcript]"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"a":1}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "rain"},
    ]
    none = Turn(
        items=[], instructions="", tools=["x"], tool_choice="none", tool_specs=[WEATHER_TOOL]
    )
    assert "tools" not in chat_request(none, "m")


def test_bad_settings_fail_at_construction() -> None:
    for kwargs, message in (
        ({"base_url": "127.0.0.1:8080", "model": "m"}, "expected an http"),
        ({"base_url": "http://h/v1", "model": ""}, "model name is empty"),
        ({"base_url": "http://h/v1", "model": "m", "timeout_s": 0}, "timeout_s=0"),
    ):
        with pytest.raises(ConfigurationError, match=message):
            ChatCompletionsResponder(**kwargs)  # type: ignore[arg-type]


def test_voxwire_serve_with_a_chat_endpoint_and_faults(tmp_path: Path) -> None:
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps([{"fault": "reject_response"}]))
    with chat_server() as (url, model):
        env = {**os.environ, "VOXWIRE_TEST_CHAT_KEY": KEY}
        command = [sys.executable, "-m", "voxwire.cli", "serve", "--port", "0", "--no-audio"]
        command += ["--chat-url", url, "--chat-model", "tiny-2"]
        command += ["--chat-key-env", "VOXWIRE_TEST_CHAT_KEY", "--faults", str(faults)]
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=default_sigint,
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            match = re.search(r"(ws://127\.0\.0\.1:\d+/v1/realtime)", line)
            assert match, line
            assert f"answers from {url}/chat/completions (tiny-2)" in line
            assert "1 fault(s) armed" in line

            async def body() -> None:
                async with connect(match.group(1) + "?model=gpt-realtime") as ws:
                    client = Client(ws)
                    await client.recv()
                    await client.say("ping")
                    await client.send({"type": "response.create"})
                    assert (await client.until("error"))[-1]["error"]["type"] == "server_error"
                    done = (await client.respond())[-1]["response"]
                    assert done["output"][0]["content"][0]["text"] == "Echo: ping"

            run(body())
        finally:
            process.send_signal(signal.SIGINT)
            stdout, stderr = process.communicate(timeout=20)
        assert process.returncode == 130, stderr  # Ctrl-C's status
        assert model.requests[0]["model"] == "tiny-2"
        assert model.headers[0]["Authorization"] == f"Bearer {KEY}"
        assert KEY not in line + stdout + stderr


def test_voxwire_serve_chat_options_go_together() -> None:
    command = [sys.executable, "-m", "voxwire.cli", "serve", "--port", "0", "--no-audio"]
    process = subprocess.run(
        [*command, "--chat-url", "http://127.0.0.1:1/v1"], capture_output=True, text=True
    )
    assert process.returncode == 2
    assert "--chat-url and --chat-model go together" in process.stderr
