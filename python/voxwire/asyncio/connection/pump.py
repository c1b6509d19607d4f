"""The pump: frames between the connection in use and the protocol core.

Like python-websockets' ``asyncio/connection.py`` over its sans-I/O ``protocol.py``: the pump
only moves bytes. Each frame received goes into the protocol core; the events the core hands out
go to the session's dispatcher, the session updates it settled to the session's waiters; the
frames the core queued go out, in order, one sender at a time. What any of it means is the
core's (and the parts') business.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable

import voxwire.asyncio.events as ev
from voxwire.asyncio.connection.transport import Transport, TransportClosed
from voxwire.asyncio.errors import SessionClosed
from voxwire.protocol.protocol import RealtimeProtocol
from voxwire.protocol.server_events import ReceivedEvent
from voxwire.protocol.updates import UpdateRecord

__all__ = ["Pump"]

log = logging.getLogger("voxwire.session")


class Pump:
    """Moves the frames of one connection at a time (``transport``; replaced on reconnection).

    ``protocol()`` gives the connection's protocol core; ``dispatch`` gets the events it hands
    out, ``settled`` the session updates it settled."""

    def __init__(
        self,
        protocol: Callable[[], RealtimeProtocol],
        dispatch: Callable[[list[ReceivedEvent]], None],
        settled: Callable[[list[UpdateRecord]], None],
    ) -> None:
        self.transport: Transport | None = None
        self._protocol = protocol
        self._dispatch = dispatch
        self._settled = settled
        self._outbox: deque[str] = deque()
        self._send_lock: asyncio.Lock | None = None

    def discard(self) -> None:
        """Drop the frames not sent yet (their connection is gone)."""
        self._outbox.clear()

    def receive(self, frame: str | bytes) -> None:
        protocol = self._protocol()
        protocol.receive_text(frame)
        self._dispatch(protocol.events_received())
        self._settled(protocol.updates_settled())
        self._outbox.extend(protocol.data_to_send())

    async def flush(self) -> None:
        """Send what the protocol core queued, in order (one sender at a time)."""
        self._outbox.extend(self._protocol().data_to_send())
        if not self._outbox:
            return
        if self._send_lock is None:
            self._send_lock = asyncio.Lock()
        assert self.transport is not None
        async with self._send_lock:
            while self._outbox:
                frame = self._outbox.popleft()
                try:
                    await self.transport.send(frame)
                except TransportClosed as exc:
                    self._outbox.clear()
                    raise SessionClosed(f"the connection is closed: {exc.describe()}") from exc

    async def run(self, transport: Transport) -> ev.CloseEvent:
        """Frames in, events out, until the connection ends; how it ended."""
        try:
            await self.flush()  # what a resumption queued (tool outputs, a response request)
            while True:
                frame = await transport.recv()
                if transport is not self.transport:  # replaced (a renewal): drop the old's frames
                    return ev.CloseEvent(reason="client_closed", detail="replaced")
                self.receive(frame)
                if self._outbox:
                    await self.flush()
        except TransportClosed as closed:
            return ev.CloseEvent(
                reason="server_closed" if closed.clean else "connection_lost",
                error=None if closed.clean else closed,
                code=closed.code,
                detail=closed.describe(),
            )
        except SessionClosed as exc:  # a flush found the connection gone
            cause = exc.__cause__
            clean = isinstance(cause, TransportClosed) and cause.clean
            return ev.CloseEvent(
                reason="server_closed" if clean else "connection_lost",
                error=None if clean else cause or exc,
                code=cause.code if isinstance(cause, TransportClosed) else None,
                detail=str(exc),
            )
        except Exception as exc:  # a transport failing in an unforeseen way, or a bug of ours
            log.exception("the receive loop failed")
            return ev.CloseEvent(
                reason="error", error=exc, detail=f"the receive loop failed: {exc!r}"
            )
