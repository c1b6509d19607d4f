"""How a :class:`~voxwire.asyncio.live.LiveSession` opens, pumps and ends its connection:
``connect`` (dial, ``session.start``, wait for ``session.started``), the receive loop,
``close``, and the end of the event stream.

A mixin of ``LiveSession`` (as ``reading.py`` is of ``RealtimeSession``): the attributes are
the session's; this module keeps ``session.py`` to its parts, its application side and its
audio path.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Final

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent, ResolvedAgent, resolve_agent
from voxwire.asyncio.errors import ConnectionFailed, SessionClosed
from voxwire.asyncio.events.queue import EventQueue
from voxwire.asyncio.live.config import DelegationMode, start_config
from voxwire.asyncio.live.events import LiveEvent
from voxwire.asyncio.live.microphone import LiveMicrophone
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.audio import AudioOutput
from voxwire.live import LiveProtocol
from voxwire.live import server_events as se

__all__ = ["LiveConnecting"]

_TICK_S: Final = 0.02  # how often held transcripts are checked against what was heard


class LiveConnecting:
    """The connection half of :class:`~voxwire.asyncio.live.LiveSession`."""

    # Set up by LiveSession.
    agent: RealtimeAgent
    protocol: LiveProtocol
    _url: str
    _headers: dict[str, str]
    _options: tuple[str, DelegationMode, str, str | None]
    _start_timeout_s: float
    _ws: ClientConnection | None
    _events: EventQueue[LiveEvent]
    _tasks: OwnedTasks
    _output: AudioOutput | None
    _microphone: LiveMicrophone | None
    _closed: bool
    _ended: bool
    _send_lock: asyncio.Lock
    _setup_work: Callable[[ResolvedAgent], None]
    _on_event: Callable[[se.LiveReceivedEvent], None]
    _release_heard: Callable[[], None]

    async def connect(self) -> None:
        """Open the connection, send ``session.start`` for the agent, wait for
        ``session.started``. Raises :class:`ConnectionFailed` if the server refuses."""
        if self._ws is not None or self._closed:
            raise SessionClosed("connect() may be called once per LiveSession")
        resolved = await resolve_agent(self.agent)
        model, delegation, backend_model, backend_instructions = self._options
        config = start_config(
            resolved,
            model=model,
            delegation=delegation,
            backend_model=backend_model,
            backend_instructions=backend_instructions,
        )
        try:
            self._ws = await connect(self._url, additional_headers=self._headers)
        except (OSError, ConnectionClosed, ValueError) as exc:
            raise ConnectionFailed(f"cannot connect to {self._url}: {exc}") from exc
        self._setup_work(resolved)
        self.protocol.send_session_start(config)
        await self.flush()
        try:
            await asyncio.wait_for(self._until_started(), self._start_timeout_s)
        except BaseException:
            await self._ws.close()
            raise
        self._tasks.spawn(self._receive(), name="live receive", kind="receive")
        if self._output is not None:
            self._tasks.spawn(self._tick(), name="live transcripts", kind="receive")
        if self._microphone is not None:
            self._microphone.start()

    async def _until_started(self) -> None:
        assert self._ws is not None
        while self.protocol.state != "active":
            frame = await self._ws.recv()
            self.protocol.receive_text(frame)
            for event in self.protocol.events_received():
                if isinstance(event, se.LiveErrorEvent):
                    raise ConnectionFailed(f"the Live session was refused: {event.error.message}")
                self._on_event(event)

    async def close(self) -> None:
        """Send ``session.close`` (when open), close the connection, stop the background work;
        idempotent. The event stream ends with a ``close`` event."""
        if self._closed:
            return
        self._closed = True
        if self._microphone is not None:
            await asyncio.to_thread(self._microphone.stop)
        if self._ws is not None and self.protocol.state == "active":
            with contextlib.suppress(ConnectionClosed):
                self.protocol.send_close()
                await self.flush()
        await self._tasks.aclose()
        if self._ws is not None:
            await self._ws.close()
        self._finish(ev.CloseEvent(reason="client_closed"))

    def _finish(self, event: ev.CloseEvent) -> None:
        if self._ended:
            return
        self._ended = True
        self._events.put(event)
        self._events.close()

    async def flush(self) -> None:
        """Send what the protocol core queued, in order."""
        assert self._ws is not None
        async with self._send_lock:
            for frame in self.protocol.data_to_send():
                await self._ws.send(frame)

    # --- receiving ------------------------------------------------------------------------------

    async def _receive(self) -> None:
        assert self._ws is not None
        reason: ev.CloseEvent
        try:
            async for frame in self._ws:
                self.protocol.receive_text(frame)
                for event in self.protocol.events_received():
                    self._on_event(event)
                self._release_heard()
                if self.protocol.state == "closed":
                    break
            reason = ev.CloseEvent(reason="server_closed")
        except ConnectionClosed as exc:
            reason = ev.CloseEvent(reason="connection_lost", error=exc)
        self.protocol.connection_lost()
        self._finish(reason)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(_TICK_S)
            self._release_heard()
