"""Helpers for the server tests: a real loopback server and a plain websocket client.

Every frame the client receives is checked against the official ``openai`` types (the concrete
class for its ``type``, with no field that class does not define, at any depth) and decoded by
the protocol core; a test sees both the raw mapping and the typed event.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import subprocess
import sys
import typing
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pydantic
from openai.types.realtime import RealtimeServerEvent
from websockets.asyncio.client import ClientConnection, connect

from tests.children import default_sigint
from voxwire.protocol import ProtocolErrorEvent, UnknownServerEvent, decode_server_event
from voxwire.server import Pacing, RealtimeServer, Scenario

T = TypeVar("T")

#: Fast enough for the suite, slow enough that a response is still running a moment later.
FAST = Pacing(audio_pace=0, text_tokens_per_s=0)
SLOW = Pacing(audio_pace=2.0, text_tokens_per_s=40)

WEATHER = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"after_tool": "get_weather", "say": "It is {output.temperature} degrees in Paris."},
            {"match": "hello", "say": "Hello! How can I help you today?"},
            {"match": "story", "say": " ".join(["Once upon a time there was a long story."] * 8)},
        ],
        "fallback": "You said: {text}",
    }
)

#: Hosted MCP servers a scenario plays (voxwire.server.core.mcp): "docs" lists three tools, one
#: of which fails when called; "broken" cannot be listed.
MCP_DOCS = Scenario.from_mapping(
    {
        "mcp_servers": {
            "docs": {
                "tools": [
                    {
                        "name": "search",
                        "description": "Search the docs",
                        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
                        "read_only": True,
                        "output": "Three pages match.",
                    },
                    {"name": "publish", "output": "Published."},
                    {"name": "delete_page", "error": "permission denied"},
                ]
            },
            "broken": {"list_error": "connection refused"},
        },
        "rules": [
            {
                "match": "search",
                "mcp": {"server_label": "docs", "name": "search", "arguments": {"q": "x"}},
            },
            {"match": "publish", "mcp": {"server_label": "docs", "name": "publish"}},
            {"match": "delete", "mcp": {"server_label": "docs", "name": "delete_page"}},
            {"match": "ghost", "mcp": {"server_label": "docs", "name": "ghost"}},
            {"after_tool": "search", "say": "Found: {output}"},
            {"after_tool": "publish", "say": "Publishing: {output}"},
            {"after_tool": "delete_page", "say": "Sorry: {output}"},
        ],
        "fallback": "You said: {text}",
    }
)

_OFFICIAL: dict[str, type[pydantic.BaseModel]] = {
    typing.get_args(cls.model_fields["type"].annotation)[0]: cls
    for cls in typing.get_args(typing.get_args(RealtimeServerEvent)[0])
}


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a test body on a fresh event loop (no plugin needed)."""
    return asyncio.run(coro)


def _extras(model: object, path: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(model, pydantic.BaseModel):
        found += [f"{path}.{key}" for key in (model.model_extra or {})]
        for name in type(model).model_fields:
            found += _extras(getattr(model, name), f"{path}.{name}")
    elif isinstance(model, list):
        for index, value in enumerate(model):
            found += _extras(value, f"{path}[{index}]")
    return found


# The real GA service sends these in session objects though the official session types lack
# them (tests/fixtures/realtime/real_ga_sip-gateway_server_events_fileorder.jsonl).
_REAL_EXTRAS = {".session.object", ".session.id", ".session.expires_at"}


def check_official(raw: dict[str, Any]) -> None:
    """``raw`` validates as the official event class of its type, with no unknown field."""
    cls = _OFFICIAL[raw["type"]]
    model = cls.model_validate(raw)
    extras = [extra for extra in _extras(model) if extra not in _REAL_EXTRAS]
    assert not extras, f"{raw['type']} has fields the official types do not define: {extras}"


class Client:
    """A websocket client that records what it receives."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.received: list[dict[str, Any]] = []

    async def send(self, event: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(event))

    async def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        frame = await asyncio.wait_for(self.ws.recv(), timeout)
        raw = json.loads(frame)
        check_official(raw)
        typed = decode_server_event(frame)
        assert not isinstance(typed, ProtocolErrorEvent | UnknownServerEvent), typed
        self.received.append(raw)
        return raw

    async def until(self, kind: str, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Events up to and including the first of type ``kind``."""
        events = []
        while True:
            event = await self.recv(timeout)
            events.append(event)
            if event["type"] == kind:
                return events

    async def update(self, **session: Any) -> dict[str, Any]:
        await self.send({"type": "session.update", "session": {"type": "realtime", **session}})
        events = await self.until_any(("session.updated", "error"))
        return events[-1]

    async def until_any(
        self, kinds: tuple[str, ...], timeout: float = 10.0
    ) -> list[dict[str, Any]]:
        events = []
        while True:
            event = await self.recv(timeout)
            events.append(event)
            if event["type"] in kinds:
                return events

    async def say(self, text: str) -> None:
        await self.send(
            {
                "type": "conversation.item.create",
                "item": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                },
            }
        )
        await self.until("conversation.item.done")

    async def respond(self, **response: Any) -> list[dict[str, Any]]:
        event: dict[str, Any] = {"type": "response.create"}
        if response:
            event["response"] = response
        await self.send(event)
        return await self.until("response.done")


@asynccontextmanager
async def serving(**options: Any) -> AsyncIterator[RealtimeServer]:
    options.setdefault("pacing", FAST)
    if "responder" not in options:
        options.setdefault("scenario", WEATHER)
    async with RealtimeServer(**options) as server:
        yield server


@asynccontextmanager
async def client_of(
    server: RealtimeServer, *, text_only: bool = True, **connect_options: Any
) -> AsyncIterator[Client]:
    async with connect(server.url(), **connect_options) as ws:
        client = Client(ws)
        created = await client.recv()
        assert created["type"] == "session.created"
        if text_only:
            updated = await client.update(
                output_modalities=["text"], audio={"input": {"turn_detection": None}}
            )
            assert updated["type"] == "session.updated", updated
        yield client


def pcm_b64(n_samples: int) -> str:
    return base64.b64encode(b"\x00\x00" * n_samples).decode()


def start_serve(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """``voxwire serve ARGS`` as a subprocess, and its first line (the URL it listens on);
    the caller stops it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "voxwire.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_sigint,  # stopped with SIGINT, also in a suite run in the background
    )
    assert process.stdout is not None
    return process, process.stdout.readline()


def realtime_url(line: str) -> str:
    """The session URL in the line ``voxwire serve`` prints first."""
    match = re.search(r"(ws://127\.0\.0\.1:\d+/v1/realtime)", line)
    assert match, line
    return match.group(1) + "?model=gpt-realtime"
