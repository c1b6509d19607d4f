"""Opening a session's connection: the API key, then each URL in turn, each attempt abortable.

``close()`` during ``connect()`` must not wait for a slow handshake: every attempt runs as a
task of its own that :meth:`Dialer.abort` cancels at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from voxwire.asyncio.endpoint import build_headers, is_hosted, resolve_api_key
from voxwire.asyncio.errors import ConnectionFailed, SessionClosed
from voxwire.asyncio.options import SessionOptions
from voxwire.asyncio.transport import ConnectRequest, Transport

__all__ = ["Dialer"]


class Dialer:
    """Opens connections for one session. ``check_closed()`` raises once the session was asked
    to close (it is called between steps)."""

    def __init__(self, options: SessionOptions, check_closed: Callable[[], None]) -> None:
        self._options = options
        self._check_close_requested = check_closed
        self._attempt: asyncio.Future[Transport] | None = None  # the connection being opened

    def abort(self) -> None:
        """Cancel the attempt under way, if any."""
        if self._attempt is not None:
            self._attempt.cancel()

    async def open(self) -> tuple[Transport, str]:
        """Resolve the key, then try the primary URL and the fallbacks in order; the first
        connection that opens, and its URL."""
        options = self._options
        # The hosted service refuses connections without a key: say so before trying. (A custom
        # connector — a test double, a proxy — decides for itself.)
        required = is_hosted(options.primary_url) and options.uses_default_connector
        key = await resolve_api_key(options.api_key, required=required)
        self._check_close_requested()
        headers = build_headers(key, options.headers or {})
        del key
        failures: list[ConnectionFailed] = []
        for url in options.urls:
            try:
                return await self._connect_one(options.connect_request(url, headers)), url
            except ConnectionFailed as exc:
                failures.append(exc)
                self._check_close_requested()
        if len(failures) == 1:
            raise failures[0]
        raise ConnectionFailed(
            "every endpoint failed: " + "; ".join(str(f) for f in failures)
        ) from failures[-1]

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
