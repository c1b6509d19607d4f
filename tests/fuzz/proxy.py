"""A loopback websocket proxy in front of the local realtime server that slips hostile frames
into what the client receives.

The client (a ``RealtimeSession``) talks to the proxy as to a server; the proxy forwards every
frame both ways, in order, and :meth:`HostileProxy.inject` sends frames of its own to the client
between two of the server's. So a session meets mutated frames mid-conversation and then has a
real server to finish a clean turn with.

:meth:`HostileProxy.cut` kills the client's connection mid-conversation (no close frame: the
client sees 1006, as after a network failure); the server's side is closed after it, at once
or, while :attr:`HostileProxy.upstream_open` is cleared, only once it is set again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from .mutations import Frame


class HostileProxy:
    """One client at a time; ``url`` is what the session connects to."""

    def __init__(self, upstream_url: str) -> None:
        self._upstream_url = upstream_url
        self._client: ServerConnection | None = None
        self._lock = asyncio.Lock()  # one writer to the client: forwarded and injected frames
        self.url = ""
        self.connected = asyncio.Event()
        self.upstream_open = asyncio.Event()  # cleared: a cut client's upstream stays open
        self.upstream_open.set()
        self.paths: list[str] = []  # every connection's path, in order

    def cut(self) -> None:
        """Abort the client's connection now (the server's side follows: see the module)."""
        assert self._client is not None, "no client is connected"
        self._client.transport.abort()

    async def inject(self, frames: Sequence[Frame]) -> None:
        """Send ``frames`` to the client now, between two of the server's frames."""
        assert self._client is not None, "no client is connected"
        async with self._lock:
            for frame in frames:
                await self._client.send(frame)

    async def _handle(self, client: ServerConnection) -> None:
        assert client.request is not None
        path = client.request.path
        self.paths.append(path)
        async with connect(self._upstream_url + path, max_size=None) as server:
            self._client = client
            self.connected.set()
            down = asyncio.create_task(self._down(server, client))
            try:
                with contextlib.suppress(ConnectionClosed):
                    async for frame in client:
                        await server.send(frame)
            finally:
                down.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await down
                if self._client is client:
                    self._client = None
                await self.upstream_open.wait()

    async def _down(self, server: ClientConnection, client: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in server:
                async with self._lock:
                    await client.send(frame)


@asynccontextmanager
async def hostile_proxy(upstream_host_port: str) -> AsyncIterator[HostileProxy]:
    """A proxy to ``ws://HOST:PORT`` (the local server's address), listening on loopback."""
    proxy = HostileProxy(f"ws://{upstream_host_port}")
    async with serve(proxy._handle, "127.0.0.1", 0, max_size=None) as server:
        port = server.sockets[0].getsockname()[1]
        proxy.url = f"ws://127.0.0.1:{port}"
        yield proxy
