"""How a :class:`~voxwire.asyncio.live.LiveSession` opens, pumps and ends its connection:
``connect`` (dial, ``session.start``, wait for ``session.started``), the receive loop,
``close``, the end of the event stream, and reconnection.

Reconnection (opt-in: ``LiveSession(reconnect=ReconnectPolicy(...))``). A Live session does not
survive its socket; the Live API's way of going on is a *fork* of the stored session: the
session is started with ``store: true``, and when its connection is lost (or the server ends it
with ``session.closed`` reason ``connection_lost``) the receive loop opens
``{url}/{session_id}/fork``, sends a fork's ``session.start`` (no overrides: the model, voice,
instructions, delegation and the conversation are the stored session's) and waits for
``session.started``, attempt after attempt as the policy says (``reconnecting`` before each).
A fork of a session that has not finished finalizing is refused; the next attempt tries again.
Once started, the new connection and a fresh protocol core (sharing the session's id factory)
replace the lost ones and a ``live_reconnected`` event says so. What was in flight is settled
first: playback stops (the new session has its own timeline), delegations in progress are
abandoned (the fork does not continue them; their outputs are dropped), and ``send_audio``
drops audio while other sends raise ``SessionReconnecting``.

A mixin of ``LiveSession`` (as ``reading.py`` is of ``RealtimeSession``): the attributes are
the session's; this module keeps ``session.py`` to its parts, its application side and its
audio path.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent, ResolvedAgent, resolve_agent
from voxwire.asyncio.agents.mcp_local import LocalMcp
from voxwire.asyncio.connection.reconnect import ReconnectPolicy
from voxwire.asyncio.errors import ConnectionFailed, SessionClosed
from voxwire.asyncio.events.queue import EventQueue
from voxwire.asyncio.live.agents.decisions import SessionDecisions
from voxwire.asyncio.live.audio.microphone import LiveMicrophone
from voxwire.asyncio.live.audio.playback import LivePlayback
from voxwire.asyncio.live.config import DelegationMode, start_config
from voxwire.asyncio.live.events import LiveEvent, LiveHistoryItem, LiveReconnectedEvent
from voxwire.asyncio.live.recording import LiveRecording, history_of, initial_items
from voxwire.asyncio.live.replies import Replies
from voxwire.asyncio.live.spans import LiveSpans
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.audio import AudioOutput
from voxwire.live import LiveProtocol
from voxwire.live import server_events as se
from voxwire.protocol.ids import IdFactory

__all__ = ["LiveConnecting", "fork_url"]

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
    _ids: IdFactory
    _reconnect: ReconnectPolicy | None
    _reconnecting: bool
    _events: EventQueue[LiveEvent]
    _tasks: OwnedTasks
    _output: AudioOutput | None
    _playback: LivePlayback
    replies: Replies
    decisions: SessionDecisions
    _microphone: LiveMicrophone | None
    _recording: LiveRecording
    _resume_id: str | None
    _history: list[LiveHistoryItem]
    _spans: LiveSpans
    _restored: int
    _closed: bool
    _ended: bool
    _send_lock: asyncio.Lock
    _mcp: LocalMcp
    _setup_work: Callable[[ResolvedAgent], None]
    _on_event: Callable[[se.LiveReceivedEvent], None]
    _release_heard: Callable[[], None]
    _timeline_restarted: Callable[[], None]
    emit: Callable[[LiveEvent], None]

    async def connect(self) -> None:
        """Open the connection, send ``session.start`` for the agent, wait for
        ``session.started``. Raises :class:`ConnectionFailed` if the server refuses."""
        if self._ws is not None or self._closed:
            raise SessionClosed("connect() may be called once per LiveSession")
        try:
            await self._mcp.connect(self.agent)
            resolved = await resolve_agent(self.agent, self._mcp.tools(self.agent))
        except BaseException:
            await self._mcp.aclose()
            raise
        model, delegation, backend_model, backend_instructions = self._options
        config = start_config(
            resolved,
            model=model,
            delegation=delegation,
            backend_model=backend_model,
            backend_instructions=backend_instructions,
            decisions=self.decisions.start_delegation(),
        )
        if self._reconnect is not None:
            config["store"] = True  # a fork needs the stored session
        self._setup_work(resolved)
        try:
            snapshot = await self._recording.start(self.agent, self._resume_id)
            if snapshot is not None:
                config["input"] = initial_items(snapshot) or None
                self._history[:] = history_of(snapshot)
                self._restored = len(self._history)
            await self._open(config)
        except BaseException:
            await self._recording.aclose()  # the conversation's lease goes back
            await self._mcp.aclose()
            raise
        assert self.protocol.session_id is not None  # started, or a sideband's
        self._spans.started(
            **{
                "voxwire.agent": self.agent.name,
                "gen_ai.request.model": model,
                "voxwire.delegation": delegation,
                "voxwire.live.session_id": self.protocol.session_id,
            }
        )
        self._tasks.spawn(self._receive(), name="live receive", kind="receive")
        if self._output is not None:
            self._tasks.spawn(self._tick(), name="live transcripts", kind="receive")
        if self._microphone is not None:
            self._microphone.start()

    async def _open(self, config: dict[str, object]) -> None:
        try:
            self._ws = await connect(self._url, additional_headers=self._headers)
        except (OSError, ConnectionClosed, ValueError) as exc:
            raise ConnectionFailed(f"cannot connect to {self._url}: {exc}") from exc
        self.protocol.send_session_start(config)
        try:
            await self.flush()
            await asyncio.wait_for(self._until_started(), self._start_timeout_s)
        except BaseException:
            await self._ws.close()
            raise

    async def _until_started(self) -> None:
        assert self._ws is not None
        while self.protocol.state != "active":
            frame = await self._ws.recv()
            self.protocol.receive_text(frame)
            for event in self.protocol.events_received():
                if isinstance(event, se.LiveErrorEvent):
                    raise ConnectionFailed(
                        f"the Live session was refused: {event.error.message}",
                    )
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
        await self._mcp.aclose()  # local MCP servers: their processes stopped
        await self._playback.aclose()
        if self._ws is not None:
            await self._ws.close()
            await self._recording.aclose()
        self._finish(ev.CloseEvent(reason="client_closed"))

    def _finish(self, event: ev.CloseEvent) -> None:
        if self._ended:
            return
        self._ended = True
        self.replies.close()
        self._playback.end()  # the last utterance's metrics come before the close event
        self._spans.ended(event.reason, event.error)
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
        """Pump the connection; after a loss, fork and pump the next (module docstring)."""
        while True:
            error = await self._pump()
            lost = error is not None or self.protocol.close_reason == "connection_lost"
            source = self.protocol.session.id if self.protocol.session is not None else None
            self.protocol.connection_lost()
            # abandoned now, or by the server's session.closed before
            abandoned = [d for d in self.protocol.delegations if d.status == "abandoned"]
            for delegation in abandoned:
                self._spans.delegation_ended(delegation)
            if not lost:
                self._finish(ev.CloseEvent(reason="server_closed"))
                return
            if self._reconnect is None or source is None:
                self._finish(ev.CloseEvent(reason="connection_lost", error=error))
                return
            ids = tuple(delegation.id for delegation in abandoned)
            failure = await self._fork_again(self._reconnect, source, error, ids)
            if failure is not None:
                self._finish(ev.CloseEvent(reason="connection_lost", error=failure))
                return

    async def _pump(self) -> BaseException | None:
        """Until the session or the connection ends: the error if the connection was lost."""
        assert self._ws is not None
        try:
            async for frame in self._ws:
                self.protocol.receive_text(frame)
                for event in self.protocol.events_received():
                    self._on_event(event)
                self._release_heard()
                if self.protocol.state == "closed":
                    break
        except ConnectionClosed as exc:
            return exc
        return None

    async def _fork_again(
        self,
        policy: ReconnectPolicy,
        source: str,
        error: BaseException | None,
        abandoned: tuple[str, ...],
    ) -> BaseException | None:
        """Fork ``source`` as ``policy`` says; ``None`` once a fork started, else the last
        attempt's error."""
        self._reconnecting = True
        self._timeline_restarted()
        span = self._spans.reconnect_started(source)
        last = error
        for attempt in range(1, policy.attempts + 1):
            delay_s = policy.delay_s(attempt)
            self.emit(ev.ReconnectingEvent(attempt=attempt, delay_s=delay_s, error=last))
            await asyncio.sleep(delay_s)
            try:
                await self._open_fork(source)
            except (ConnectionFailed, ConnectionClosed, OSError, asyncio.TimeoutError) as exc:
                last = exc
                continue
            assert self.protocol.session is not None
            self._spans.tracer.end(
                span,
                None,
                {
                    "voxwire.reconnect.attempts": attempt,
                    "voxwire.live.session_id": self.protocol.session.id,
                },
            )
            self.emit(
                LiveReconnectedEvent(
                    session_id=self.protocol.session.id,
                    forked_from=source,
                    attempt=attempt,
                    abandoned_delegations=abandoned,
                )
            )
            self._reconnecting = False
            return None
        self._reconnecting = False
        self._spans.tracer.end(span, repr(last), {"voxwire.reconnect.attempts": policy.attempts})
        return last

    async def _open_fork(self, source: str) -> None:
        url = fork_url(self._url, source)
        try:
            ws = await connect(url, additional_headers=self._headers)
        except (OSError, ConnectionClosed, ValueError) as exc:
            raise ConnectionFailed(f"cannot connect to {url}: {exc}") from exc
        self._ws, self.protocol = ws, LiveProtocol(ids=self._ids)
        self.protocol.send_fork_start()
        try:
            await self.flush()
            await asyncio.wait_for(self._until_started(), self._start_timeout_s)
        except BaseException:
            await ws.close()
            raise

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(_TICK_S)
            self._release_heard()


def fork_url(url: str, session_id: str) -> str:
    """``url`` (the Live sessions endpoint) with ``/{session_id}/fork`` added to its path."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"{parts.path.rstrip('/')}/{session_id}/fork"))
