"""The seam between the session and the network: a transport moves text frames.

The session needs three things of a connection — send a frame, receive the next frame, close —
and one way to open it (a *connector*). The default connector opens a websocket with
``websockets``; :mod:`voxwire.testing` provides a scripted one for unit tests. A transport
reports the end of the connection by raising :class:`TransportClosed` from ``recv`` / ``send``,
saying whether the close was clean (a close frame with 1000 / 1001) or not.

Credentials travel in :attr:`ConnectRequest.headers`; they are never logged and never shown in
a repr (websockets' debug log of request headers goes through a redacting filter).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import (
    ConnectionClosed,
    ConnectionClosedOK,
    InvalidHandshake,
    InvalidStatus,
    InvalidURI,
)

from voxwire._core import __version__
from voxwire.asyncio.errors import ConnectionFailed
from voxwire.logs import SECRET_HEADERS, redacted_logger
from voxwire.protocol.limits import MAX_FRAME_BYTES

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ConnectRequest",
    "Connector",
    "Transport",
    "TransportClosed",
    "WebSocketTransport",
    "connect_websocket",
]

#: Large enough for ``conversation.item.retrieved`` of an item holding the longest input audio
#: the service accepts (15 MiB of audio is ~20 MiB of base64).
DEFAULT_MAX_MESSAGE_BYTES: Final = MAX_FRAME_BYTES  # the protocol core's bound: one figure


class TransportClosed(Exception):
    """The connection ended. ``clean``: a normal close (1000 going away / 1001 normal);
    ``code`` and ``reason`` come from the close frame (``None`` if there was none)."""

    def __init__(self, *, clean: bool, code: int | None = None, reason: str = "") -> None:
        self.clean, self.code, self.reason = clean, code, reason
        super().__init__(self.describe())

    def describe(self) -> str:
        how = "closed" if self.clean else "lost"
        detail = f" with code {self.code}" if self.code is not None else " without a close frame"
        return f"connection {how}{detail}" + (f": {self.reason}" if self.reason else "")


class Transport(Protocol):
    """An open connection carrying text frames."""

    async def send(self, frame: str) -> None:
        """Send one frame; raise :class:`TransportClosed` if the connection is gone."""

    async def recv(self) -> str | bytes:
        """The next frame; raise :class:`TransportClosed` when the connection ends."""

    async def close(self) -> None:
        """Close the connection (idempotent) and wait until it is closed."""


@dataclass(frozen=True, kw_only=True)
class ConnectRequest:
    """Everything needed to open one connection. ``headers`` may hold credentials: the repr
    redacts them."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    open_timeout_s: float | None = 10.0
    close_timeout_s: float | None = 5.0
    ping_interval_s: float | None = 20.0
    ping_timeout_s: float | None = 20.0
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES

    def __repr__(self) -> str:
        shown = {
            key: "[redacted]" if key.lower() in SECRET_HEADERS else value
            for key, value in self.headers.items()
        }
        return f"ConnectRequest(url={self.url!r}, headers={shown!r})"


#: Opens a connection; raises :class:`~voxwire.asyncio.errors.ConnectionFailed` when it cannot.
Connector = Callable[[ConnectRequest], Awaitable[Transport]]


_wire_log = redacted_logger("voxwire.asyncio.websockets")


class WebSocketTransport:
    """:class:`Transport` over a ``websockets`` client connection."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws

    @property
    def subprotocol(self) -> str | None:
        return self._ws.subprotocol

    async def send(self, frame: str) -> None:
        try:
            await self._ws.send(frame)
        except ConnectionClosed as exc:
            raise _transport_closed(exc) from exc

    async def recv(self) -> str | bytes:
        try:
            return await self._ws.recv()
        except ConnectionClosed as exc:
            raise _transport_closed(exc) from exc

    async def close(self) -> None:
        """Close with the handshake, reading (and dropping) what the server still sends
        meanwhile: with nobody reading, websockets stops reading the socket once its queue of
        received messages is full, and the server's close frame, queued behind them, would only
        be seen at ``close_timeout``."""
        drain = asyncio.ensure_future(self._drain())
        try:
            await self._ws.close()
        finally:
            drain.cancel()
            await asyncio.wait([drain])

    async def _drain(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for _ in self._ws:
                pass


def _transport_closed(exc: ConnectionClosed) -> TransportClosed:
    frame = exc.rcvd if exc.rcvd is not None else exc.sent
    return TransportClosed(
        clean=isinstance(exc, ConnectionClosedOK),
        code=frame.code if frame is not None else None,
        reason=frame.reason if frame is not None else "",
    )


async def connect_websocket(request: ConnectRequest) -> WebSocketTransport:
    """The default connector: a websocket, no compression (base64 audio barely compresses and
    deflate costs CPU on every frame), keepalive pings, the request's limits."""
    try:
        ws = await connect(
            request.url,
            additional_headers=dict(request.headers),
            user_agent_header=f"voxwire/{__version__}",
            compression=None,
            open_timeout=request.open_timeout_s,
            close_timeout=request.close_timeout_s,
            ping_interval=request.ping_interval_s,
            ping_timeout=request.ping_timeout_s,
            max_size=request.max_message_bytes,
            logger=_wire_log,
        )
    except InvalidStatus as exc:
        status = exc.response.status_code
        hint = " (check the API key)" if status in (401, 403) else ""
        raise ConnectionFailed(
            f"{request.url} rejected the websocket handshake with HTTP {status}{hint}"
        ) from exc
    except InvalidURI as exc:
        raise ConnectionFailed(f"{request.url} is not a websocket URL: {exc}") from exc
    except InvalidHandshake as exc:
        raise ConnectionFailed(f"the websocket handshake with {request.url} failed: {exc}") from exc
    except (TimeoutError, asyncio.TimeoutError) as exc:  # distinct types before 3.11
        raise ConnectionFailed(
            f"connecting to {request.url} timed out after {request.open_timeout_s} s"
        ) from exc
    except OSError as exc:
        raise ConnectionFailed(f"could not connect to {request.url}: {exc}") from exc
    return WebSocketTransport(ws)
