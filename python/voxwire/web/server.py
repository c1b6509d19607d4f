"""``WebServer``: the page, its files and its two websockets, on one loopback port.

* ``GET /`` — the page; ``GET /static/<name>`` — its modules, worklets and style (package data,
  read once; nothing is fetched from anywhere else);
* ``/talk`` (websocket) — one :class:`~voxwire.web.bridge.TabBridge` per tab: a new session of
  the recipe's agent (refused with 404 when the server was made to watch only);
* ``/watch`` (websocket) — the records of the watched :class:`~voxwire.web.Timeline`: those so far,
  then each new one (refused when nothing is watched).

Plain files are answered from websockets' ``process_request`` (GET only, which is all a page
needs). Websockets are accepted only from the page's own origin, so another site open in the
same browser cannot drive a session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from http import HTTPStatus
from importlib import resources
from types import TracebackType
from typing import Final
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from voxwire.logs import quiet_client_handshake_failures
from voxwire.timeline.observer import Record, Timeline
from voxwire.web.bridge import SessionRecipe as SessionRecipe
from voxwire.web.bridge import TabBridge

__all__ = ["STATIC_FILES", "WebServer", "static_text"]

log = logging.getLogger("voxwire.web")

STATIC_FILES: Final = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "timeline.js": "text/javascript; charset=utf-8",
    "capture-worklet.js": "text/javascript; charset=utf-8",
    "playback-worklet.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
_MAX_MESSAGE_BYTES: Final = 1 << 20
_WIRE: Final = quiet_client_handshake_failures(logging.getLogger("voxwire.web.websockets"))


def static_text(name: str) -> str:
    """One of the page's files (:data:`STATIC_FILES`), from the installed package."""
    if name not in STATIC_FILES:
        raise KeyError(f"{name!r} is not one of the page's files: {sorted(STATIC_FILES)}")
    return (resources.files("voxwire.web") / "static" / name).read_text("utf-8")


class WebServer:
    """Serves the page on ``host:port`` (``port=0``: a free one) for ``recipe`` (talk) and/or
    ``watch`` (a timeline fed from code). ``async with WebServer(...) as web: web.url``."""

    def __init__(
        self,
        recipe: SessionRecipe | None = None,
        *,
        watch: Timeline | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if recipe is None and watch is None:
            raise ValueError("WebServer needs a recipe (to talk), a timeline to watch, or both")
        self.recipe, self.watched = recipe, watch
        self._host, self._port = host, port
        self._server: Server | None = None
        self._files = {name: static_text(name).encode() for name in STATIC_FILES}
        self.bridges: list[TabBridge] = []
        """The tabs talking now (tests reach a tab's session and output through it)."""

    async def start(self) -> None:
        self._server = await serve(
            self._connection,
            self._host,
            self._port,
            process_request=self._request,
            max_size=_MAX_MESSAGE_BYTES,
            compression=None,
            logger=_WIRE,
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close(close_connections=True)
            await self._server.wait_closed()

    async def __aenter__(self) -> WebServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the web server is not started: use 'async with WebServer(...)'")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self.port}/"

    # -- HTTP -------------------------------------------------------------------------------------

    def _request(self, ws: ServerConnection, request: Request) -> Response | None:
        path = urlsplit(request.path).path
        if path in ("/talk", "/watch"):
            return self._check_socket(ws, request, path)
        name = "index.html" if path == "/" else path.removeprefix("/static/")
        if name not in self._files or (path != "/" and not path.startswith("/static/")):
            return _plain(HTTPStatus.NOT_FOUND, f"{path[:200]} is not here: the page is at /")
        body = self._files[name]
        headers = Headers(
            [
                ("Content-Type", STATIC_FILES[name]),
                ("Content-Length", str(len(body))),
                ("Cache-Control", "no-store"),
            ]
        )
        return Response(HTTPStatus.OK, "OK", headers, body)

    def _check_socket(self, ws: ServerConnection, request: Request, path: str) -> Response | None:
        origin = request.headers.get("Origin")
        own = {f"http://{host}:{self.port}" for host in (self._host, "localhost", "127.0.0.1")}
        if origin is not None and origin not in own:
            return _plain(HTTPStatus.FORBIDDEN, f"websockets are for the page itself, not {origin}")
        if path == "/talk" and self.recipe is None:
            return _plain(HTTPStatus.NOT_FOUND, "this server only shows a timeline: open /?watch")
        if path == "/watch" and self.watched is None:
            return _plain(HTTPStatus.NOT_FOUND, "no session is watched here: open / to talk")
        return None

    # -- websockets -------------------------------------------------------------------------------

    async def _connection(self, ws: ServerConnection) -> None:
        assert ws.request is not None
        if urlsplit(ws.request.path).path == "/watch":
            await self._watch(ws)
            return
        assert self.recipe is not None
        try:
            bridge = await TabBridge.open(ws, self.recipe)
        except ConnectionClosed:
            return
        except ValueError as exc:  # a page that says something impossible
            await ws.close(1008, str(exc)[:120])
            return
        self.bridges.append(bridge)
        try:
            await bridge.run()
        except Exception as exc:  # a session that cannot start: tell the page, log the rest
            log.warning("a tab's session ended with %s: %s", type(exc).__name__, exc)
            with contextlib.suppress(ConnectionClosed):
                await ws.close(1011, f"{type(exc).__name__}: {exc}"[:120])
        finally:
            self.bridges.remove(bridge)

    async def _watch(self, ws: ServerConnection) -> None:
        assert self.watched is not None
        queue: asyncio.Queue[Record] = asyncio.Queue()
        for record in self.watched.records:
            queue.put_nowait(record)
        stop = self.watched.subscribe(queue.put_nowait)
        sender = asyncio.create_task(_send_records(ws, queue))
        try:
            await ws.wait_closed()
        finally:
            stop()
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await sender


async def _send_records(ws: ServerConnection, queue: asyncio.Queue[Record]) -> None:
    await ws.send(json.dumps({"type": "hello", "agent": "watching", "endpoint": ""}))
    while True:
        record = await queue.get()
        await ws.send(json.dumps({"type": "record", "record": record}))


def _plain(status: HTTPStatus, text: str) -> Response:
    body = (text + "\n").encode()
    headers = Headers(
        [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
    )
    return Response(status.value, status.phrase, headers, body)
