"""Fault injection on a live connection: the sending path the armed faults act on.

The faults themselves (what they are, when they fire, reading a schedule) are plain data in
:mod:`voxwire.server.core.faults`; they are re-exported here. :class:`FaultInjector` arms them
on one connection and fires them (delays, drops, malformed frames, expiry) as events go out.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosedError

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import ServerEvent
from voxwire.server.core.errors import ServerError
from voxwire.server.core.faults import (
    Delay,
    Drop,
    Expire,
    Fault,
    RejectResponse,
    SendMalformed,
    SendUnknown,
    Triggered,
    faults_from_data,
)
from voxwire.server.core.wire import encode_server_event

__all__ = [
    "Delay",
    "Drop",
    "Expire",
    "Fault",
    "FaultInjector",
    "RejectResponse",
    "SendMalformed",
    "SendUnknown",
    "faults_from_data",
    "faults_from_file",
]


def faults_from_file(path: str | Path) -> tuple[Fault, ...]:
    """A schedule from a JSON file (see :func:`faults_from_data`)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"faults file {path} is not valid JSON: {exc}") from None
    return faults_from_data(data, where=f"faults file {path}")


@dataclass
class _Armed:
    fault: Triggered
    remaining: int  # matching events still to send before it fires


@dataclass
class _Delaying:
    fault: Delay
    remaining: int | None


class FaultInjector:
    """The faults armed on one connection, and the sending path they act on.

    Every event of the connection goes through :meth:`send` under one lock once anything was
    armed, so delays keep the order of events and a drop stops every sender.
    """

    def __init__(
        self,
        ws: ServerConnection,
        expired_event: Callable[[], ServerEvent],
        session_id: Callable[[], str],
    ) -> None:
        self._ws = ws
        self._expired_event = expired_event
        self._session_id = session_id
        self._armed: list[_Armed] = []
        self._delays: list[_Delaying] = []
        self._rejections: list[tuple[RejectResponse, int]] = []
        self._lock = asyncio.Lock()
        self._dropped = False

    @property
    def active(self) -> bool:
        """Something was armed (from then on every event goes through :meth:`send`)."""
        return bool(self._armed or self._delays or self._rejections or self._dropped)

    async def arm(self, faults: Sequence[Fault]) -> None:
        """Arm ``faults``; those with no trigger fire now."""
        now: list[Triggered] = []
        for fault in faults:
            if isinstance(fault, Delay):
                self._delays.append(_Delaying(fault, fault.count))
            elif isinstance(fault, RejectResponse):
                self._rejections.append((fault, fault.count))
            elif fault.after is None and fault.of_type is None:
                now.append(fault)
            else:
                self._armed.append(_Armed(fault, fault.after or 1))
        if now:
            async with self._lock:
                for fault in now:
                    await self._fire(fault)

    def take_rejection(self) -> ServerError | None:
        """The error for a client ``response.create`` if a :class:`RejectResponse` is armed."""
        if not self._rejections:
            return None
        fault, left = self._rejections[0]
        if left <= 1:
            self._rejections.pop(0)
        else:
            self._rejections[0] = (fault, left - 1)
        message = fault.message.replace("{session_id}", self._session_id())
        return ServerError(fault.code, message, error_type=fault.error_type)

    async def send(self, events: Sequence[ServerEvent]) -> None:
        async with self._lock:
            for event in events:
                if self._dropped:
                    raise ConnectionClosedError(None, None)
                await self._hold(event.type)
                await self._ws.send(encode_server_event(event))
                for fault in self._due(event.type):
                    await self._fire(fault)

    async def _hold(self, event_type: str) -> None:
        for delaying in self._delays:
            of_type = delaying.fault.of_type
            if of_type is not None and of_type != event_type:
                continue
            if delaying.remaining is not None:
                delaying.remaining -= 1
            await asyncio.sleep(delaying.fault.ms / 1000)
        self._delays = [d for d in self._delays if d.remaining is None or d.remaining > 0]

    def _due(self, event_type: str) -> list[Triggered]:
        due: list[Triggered] = []
        for armed in self._armed:
            if armed.fault.of_type is None or armed.fault.of_type == event_type:
                armed.remaining -= 1
                if armed.remaining == 0:
                    due.append(armed.fault)
        self._armed = [armed for armed in self._armed if armed.remaining > 0]
        return due

    async def _fire(self, fault: Triggered) -> None:
        if isinstance(fault, Drop):
            self._dropped = True
            if fault.code is None:
                # No close frame: the peer sees the TCP connection end (1006).
                self._ws.transport.abort()
            else:
                await self._ws.close(fault.code, fault.reason)
            raise ConnectionClosedError(None, None)
        if isinstance(fault, SendMalformed):
            await self._ws.send(fault.frame)
        elif isinstance(fault, SendUnknown):
            frame = {"type": fault.unknown_type, "event_id": "event_voxwire_fault_injected"}
            await self._ws.send(json.dumps(frame))
        else:  # Expire
            self._dropped = True
            await self._ws.send(encode_server_event(self._expired_event()))
            await self._ws.close(1000, "session expired")
            raise ConnectionClosedError(None, None)
