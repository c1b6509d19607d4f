"""Opening a session's connection: the API key, then each URL in turn, each attempt abortable.

``close()`` during ``connect()`` must not wait for a slow handshake: every attempt runs as a
task of its own that :meth:`Dialer.abort` cancels at once. The URLs are tried healthy first
(:mod:`voxwire.asyncio.connection.health`): an endpoint that failed to open is tried after the
others and probed in the background until it answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Protocol

import voxwire.asyncio.events as ev
from voxwire.asyncio.connection.endpoint import (
    ApiKeySource,
    build_headers,
    is_hosted,
    resolve_api_key,
)
from voxwire.asyncio.connection.health import EndpointHealth, EndpointStatus
from voxwire.asyncio.connection.transport import Connector, ConnectRequest, Transport
from voxwire.asyncio.errors import ConnectionFailed, SessionClosed

__all__ = ["Dialer"]


class DialOptions(Protocol):
    """What the dialer reads of the session's options (:class:`~voxwire.asyncio.options.
    SessionOptions`)."""

    @property
    def urls(self) -> tuple[str, ...]: ...

    @property
    def primary_url(self) -> str: ...

    @property
    def api_key(self) -> ApiKeySource | None: ...

    @property
    def headers(self) -> Mapping[str, str] | None: ...

    @property
    def open_timeout_s(self) -> float: ...

    @property
    def uses_default_connector(self) -> bool: ...

    @property
    def connect_with(self) -> Connector: ...

    def connect_request(self, url: str, headers: Mapping[str, str]) -> ConnectRequest: ...


class Dialer:
    """Opens connections for one session. ``check_closed()`` raises once the session was asked
    to close (it is called between steps)."""

    def __init__(
        self,
        options: DialOptions,
        check_closed: Callable[[], None],
        emit: Callable[[ev.SessionEvent], None],
    ) -> None:
        self._options = options
        self._check_close_requested = check_closed
        self._attempt: asyncio.Future[Transport] | None = None  # the connection being opened
        self.health = EndpointHealth(options.urls, self.probe, emit)

    @property
    def endpoints(self) -> tuple[EndpointStatus, ...]:
        return self.health.statuses()

    async def aclose(self) -> None:
        """Stop the background probes (idempotent)."""
        await self.health.aclose()

    def abort(self) -> None:
        """Cancel the attempt under way, if any."""
        if self._attempt is not None:
            self._attempt.cancel()

    async def open(self) -> tuple[Transport, str]:
        """Resolve the key, then try the URLs — the healthy ones first, each group in the
        configured order (primary, then fallbacks); the first connection that opens, and its
        URL."""
        options = self._options
        headers = await self._headers()
        self._check_close_requested()
        failures: list[ConnectionFailed] = []
        for url in self.health.order():
            try:
                transport = await self._connect_one(options.connect_request(url, headers))
            except ConnectionFailed as exc:
                failures.append(exc)
                self.health.failed(url, exc)
                self._check_close_requested()
                continue
            self.health.succeeded(url)
            return transport, url
        if len(failures) == 1:
            raise failures[0]
        raise ConnectionFailed(
            "every endpoint failed: " + "; ".join(str(f) for f in failures)
        ) from failures[-1]

    async def _headers(self) -> Mapping[str, str]:
        options = self._options
        # The hosted service refuses connections without a key: say so before trying. (A custom
        # connector — a test double, a proxy — decides for itself.)
        required = is_hosted(options.primary_url) and options.uses_default_connector
        key = await resolve_api_key(options.api_key, required=required)
        return build_headers(key, options.headers or {})

    async def probe(self, url: str) -> None:
        """Open a connection to ``url`` and close it at once; raises if it does not open."""
        options = self._options
        request = options.connect_request(url, await self._headers())
        transport = await asyncio.wait_for(options.connect_with(request), options.open_timeout_s)
        with contextlib.suppress(Exception):
            await transport.close()

    async def _connect_one(self, request: ConnectRequest) -> Transport:
        # The attempt is a task of its own so that close() can abort a slow handshake at once
        # (it cancels self._attempt) instead of waiting for the handshake timeout.
        attempt = asyncio.ensure_future(self._options.connect_with(request))
        self._attempt = attempt
        timeout_s = self._options.open_timeout_s
        try:
            done, _ = await asyncio.wait([attempt], timeout=timeout_s)
        finally:
            self._attempt = None
            if not attempt.done():  # timed out, or connect() itself was cancelled
                attempt.cancel()
                await asyncio.gather(attempt, return_exceptions=True)
        if not done:
            raise ConnectionFailed(f"connecting to {request.url} timed out after {timeout_s} s")
        if attempt.cancelled():
            raise SessionClosed("the session was closed while connecting")
        return attempt.result()
