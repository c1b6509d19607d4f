"""Helpers for the renewal and endpoint-health tests: a connector that records every client
frame per connection (and can hold a connection's handshake), and the official client-event
check."""

from __future__ import annotations

import asyncio
import json
import typing
from typing import Any

import pydantic
from openai.types.realtime import RealtimeClientEvent

from voxwire.asyncio import ConnectRequest, RealtimeSession, Transport, connect_websocket
from voxwire.asyncio.events.history import HistoryMessage
from voxwire.server import RealtimeServer

from ..server.helpers import _extras

_OFFICIAL_CLIENT: dict[str, type[pydantic.BaseModel]] = {
    typing.get_args(cls.model_fields["type"].annotation)[0]: cls
    for cls in typing.get_args(typing.get_args(RealtimeClientEvent)[0])
}


def check_official_client(raw: dict[str, Any]) -> None:
    """``raw`` validates as the official client event class of its type, no unknown field."""
    cls = _OFFICIAL_CLIENT[raw["type"]]
    extras = _extras(cls.model_validate(raw))
    assert not extras, f"{raw['type']} has fields the official types do not define: {extras}"


class _Recorded:
    """A transport that records what is sent on it; its first ``recv`` waits for ``gate``."""

    def __init__(self, inner: Transport, sent: list[dict[str, Any]], gate: asyncio.Event) -> None:
        self._inner, self._sent, self._gate = inner, sent, gate

    async def send(self, frame: str) -> None:
        self._sent.append(json.loads(frame))
        await self._inner.send(frame)

    async def recv(self) -> str | bytes:
        await self._gate.wait()
        return await self._inner.recv()

    async def close(self) -> None:
        await self._inner.close()


class RecordingConnector:
    """Opens real websockets (``connect_websocket``) and records each connection's client
    events in ``sent[n]`` (n-th connection opened) and its URL in ``urls[n]``; ``attempts``
    holds the URL of every connection tried, opened or not. ``hold(n)``
    makes the n-th connection's handshake wait until ``release(n)``; ``opened(n)`` waits until
    the n-th connection is open."""

    def __init__(self) -> None:
        self.sent: list[list[dict[str, Any]]] = []
        self.urls: list[str] = []
        self.attempts: list[str] = []
        self._gates: dict[int, asyncio.Event] = {}
        self._opened: dict[int, asyncio.Event] = {}

    def hold(self, index: int) -> None:
        self._gates[index] = asyncio.Event()

    def release(self, index: int) -> None:
        self._gates[index].set()

    async def opened(self, index: int, timeout_s: float = 10.0) -> None:
        event = self._opened.setdefault(index, asyncio.Event())
        await asyncio.wait_for(event.wait(), timeout_s)

    async def __call__(self, request: ConnectRequest) -> Transport:
        self.attempts.append(request.url)
        inner = await connect_websocket(request)
        index = len(self.sent)
        self.sent.append([])
        self.urls.append(request.url)
        gate = self._gates.get(index)
        if gate is None:
            gate = asyncio.Event()
            gate.set()
        self._opened.setdefault(index, asyncio.Event()).set()
        return _Recorded(inner, self.sent[index], gate)


def server_messages(server: RealtimeServer) -> list[tuple[str, str]]:
    """(role, text) of the newest server session's messages, as the server holds them."""
    out = []
    for item in server.connections[-1].session.conversation.items():
        if getattr(item, "type", None) == "message":
            text = "".join(
                getattr(part, "text", None) or getattr(part, "transcript", None) or ""
                for part in item.content
            )
            out.append((item.role, text))
    return out


def session_messages(session: RealtimeSession) -> list[tuple[str, str]]:
    return [(i.role, i.text) for i in session.history if isinstance(i, HistoryMessage)]
