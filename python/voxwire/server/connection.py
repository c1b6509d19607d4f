"""One client connection: the pump between the websocket and :class:`ServerSession`.

It sends ``session.created``, then for every frame asks the session what to answer and carries
it out in order — events are sent, ``StartResponse`` / ``CancelResponse`` go to the
:class:`ResponseManager`, ``TranscribeAudio`` to :class:`Transcriptions`. It owns three kinds of
tasks, and awaits them all before it returns: the responses (through the manager), the
transcriptions and the session-expiry timer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from voxwire.protocol import ServerEvent
from voxwire.server.core.conversation import DEFAULT_AUDIO_BUDGET_BYTES
from voxwire.server.core.errors import error_event
from voxwire.server.core.ids import ServerIds
from voxwire.server.core.mcp import McpServers
from voxwire.server.core.session import (
    CancelResponse,
    ServerSession,
    StartResponse,
    TranscribeAudio,
)
from voxwire.server.core.wire import encode_server_event
from voxwire.server.engines.responder import Responder
from voxwire.server.engines.transcribe import Transcriber
from voxwire.server.engines.tts import Voice
from voxwire.server.engines.vad import TurnDetector
from voxwire.server.faults import Fault, FaultInjector
from voxwire.server.responses import Pacing, ResponseManager
from voxwire.server.transcriptions import Transcriptions

__all__ = ["ConnectionSettings", "RealtimeConnection"]

log = logging.getLogger("voxwire.server")


@dataclass(frozen=True)
class ConnectionSettings:
    """What every connection of a server shares."""

    responder: Responder
    voice: Voice | None
    pacing: Pacing
    max_session_s: float
    ids_seed: int | None = None
    faults: tuple[Fault, ...] = ()  # armed afresh on every connection
    transcriber: Transcriber | None = None  # None: transcription requests fail, naming the extra
    mcp_servers: McpServers = field(default_factory=McpServers)  # the hosted MCP servers played
    audio_budget_bytes: int | None = DEFAULT_AUDIO_BUDGET_BYTES  # item audio kept per session
    observer: EventObserver | None = None  # told what each connection sends, None at its end


#: ``observer(connection, events)``: the events a connection sent; ``None`` when it ended.
EventObserver = Callable[[Any, Sequence[ServerEvent] | None], None]


class RealtimeConnection:
    """Serves one websocket until the client leaves, the session expires or the server closes."""

    def __init__(
        self,
        ws: ServerConnection,
        model: str,
        settings: ConnectionSettings,
        *,
        outbound: Callable[[Sequence[ServerEvent]], Sequence[ServerEvent]] | None = None,
        outlives_socket: bool = False,
    ) -> None:
        self._ws = ws
        # A SIP call's session outlives its sideband: it goes on without one, and a new
        # sideband attaches to it (:meth:`attach`); events go to every sideband still open.
        self._outlives = outlives_socket
        self._sidebands: list[ServerConnection] = [ws]
        # A SIP call's phone line takes the audio deltas (they go to the phone, not the socket).
        self._outbound = outbound
        self._feeding = asyncio.Lock()
        self._settings = settings
        self._ids = ServerIds(settings.ids_seed)
        self._started = time.monotonic()
        self.session = ServerSession(
            ids=self._ids,
            model=model,
            expires_at=int(time.time() + settings.max_session_s),
            output_modalities=["audio"] if settings.voice is not None else ["text"],
            responding=lambda: self.responses.responding,
            turn_detection=TurnDetector.from_session,
            mcp_servers=settings.mcp_servers,
            audio_budget_bytes=settings.audio_budget_bytes,
        )
        self.transcriptions = Transcriptions(self.session, self._send, settings.transcriber)
        self.responses = ResponseManager(
            self.session,
            self._send,
            settings.responder,
            settings.voice,
            settings.pacing,
            before_respond=self.transcriptions.settle,
            mcp_servers=settings.mcp_servers,
        )
        self._faults = FaultInjector(ws, self._expired_event, lambda: self.session_id)

    @property
    def session_id(self) -> str:
        return str(self.session.session["id"])

    def attach(self, ws: ServerConnection) -> None:
        """Another sideband on this (SIP call's) session: it gets the events from now on, and
        :meth:`serve` serves its frames."""
        self._ws = ws
        self._sidebands = [s for s in self._sidebands if s.state is State.OPEN] + [ws]
        self._faults = FaultInjector(ws, self._expired_event, lambda: self.session_id)

    async def end(self) -> None:
        """End a session that outlives its sidebands (the call ended): its responses and
        transcriptions stop."""
        await self.responses.close()
        await self.transcriptions.close()

    async def inject(self, *faults: Fault) -> None:
        """Arm ``faults`` on this connection (see :mod:`voxwire.server.faults`); triggers count
        from now, and a fault without one fires now. Returns once those are done."""
        with contextlib.suppress(ConnectionClosed):
            await self._faults.arm(faults)

    async def feed(self, frame: str | bytes) -> None:
        """Handle ``frame`` as if the client had sent it (a SIP call's caller audio). One frame's
        answers go out together: the client's frames and the caller's do not interleave."""
        async with self._feeding:
            await self._carry_out(frame)

    async def _carry_out(self, frame: str | bytes) -> None:
        for step in self.session.handle(frame):
            if isinstance(step, StartResponse):
                rejected = None if step.from_vad else self._faults.take_rejection()
                if rejected is not None:
                    await self._send([rejected.event(self._ids, step.client_event_id)])
                else:
                    await self.responses.start(step)
            elif isinstance(step, CancelResponse):
                await self.responses.cancel(step)
            elif isinstance(step, TranscribeAudio):
                await self.transcriptions.start(step)
            else:
                await self._send([step])

    async def send_events(self, events: Sequence[ServerEvent]) -> None:
        """Send server events of the emulated SIP line (a DTMF key) in order with the rest."""
        with contextlib.suppress(ConnectionClosed):
            await self._send(events)

    async def _send(self, events: Sequence[ServerEvent]) -> None:
        if self._outbound is not None:
            events = self._outbound(events)
        if self._settings.observer is not None:
            self._settings.observer(self, events)
        if self._faults.active:
            await self._faults.send(events)
            return
        if self._outlives:
            await self._to_sidebands(events)
            return
        for event in events:
            await self._ws.send(encode_server_event(event))

    async def _to_sidebands(self, events: Sequence[ServerEvent]) -> None:
        """A call's events to its open sidebands; with none, the session goes on unwatched
        (the phone still gets the audio: the outbound filter took it)."""
        for ws in list(self._sidebands):
            try:
                for event in events:
                    await ws.send(encode_server_event(event))
            except ConnectionClosed:
                if ws in self._sidebands:
                    self._sidebands.remove(ws)

    async def serve(self) -> None:
        expiry = asyncio.create_task(self._expire(), name="voxwire-session-expiry")
        try:
            await self._faults.arm(self._settings.faults)
            ws = self._ws
            if self._outlives:  # a call's session.created goes to the sideband attaching only
                created: Sequence[ServerEvent] = [self.session.created_event()]
                if self._outbound is not None:
                    created = self._outbound(created)
                for event in created:
                    await ws.send(encode_server_event(event))
            else:
                await self._send([self.session.created_event()])
            async for frame in ws:
                try:
                    await self.feed(frame)
                except ConnectionClosed:
                    raise
                except Exception:
                    # A bug of this server (a malformed event is answered by the session's own
                    # error): reported as the service reports its own failures, and the
                    # connection goes on.
                    log.exception("failed to answer a client event")
                    await self._send([_server_error(self._ids)])
        except ConnectionClosed:
            pass
        finally:
            if self._settings.observer is not None:
                self._settings.observer(self, None)
            if not self._outlives:
                await self.end()
            expiry.cancel()
            # The timer's own CancelledError comes back as a result; a cancellation of this
            # task while waiting still propagates.
            await asyncio.gather(expiry, return_exceptions=True)

    async def _expire(self) -> None:
        """GA: a session has a maximum duration; then ``session_expired`` and the socket closes."""
        await asyncio.sleep(self._settings.max_session_s)
        try:
            await self._send([self._expired_event()])
            await self._ws.close(1000, "session expired")
        except ConnectionClosed:
            pass

    def _expired_event(self) -> ServerEvent:
        minutes = self._settings.max_session_s / 60
        shown = (
            f"{minutes:g} minutes" if minutes >= 1 else f"{self._settings.max_session_s:g} seconds"
        )
        return error_event(
            self._ids, "session_expired", f"Your session hit the maximum duration of {shown}."
        )


def _server_error(ids: ServerIds) -> ServerEvent:
    return error_event(
        ids,
        None,
        "The server had an error while processing your request. Sorry about that!",
        error_type="server_error",
    )
