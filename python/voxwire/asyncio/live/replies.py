"""Waiting for the server's answer to one Live command, by its ``event_id``.

Live answers commands with events naming them (``client_event_id``: ``session.updated``,
``decision.item.created`` ...) or with an ``error`` naming them (``error.client_event_id``).
:class:`Replies` turns that into an awaitable: ``await replies.wait(event_id)``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from voxwire.exceptions import SessionClosed, VoxwireError
from voxwire.live import server_events as se

__all__ = ["CommandRefused", "Replies"]


class CommandRefused(VoxwireError):
    """The server refused a command (an ``error`` naming it): ``code``, ``param``."""

    def __init__(self, message: str, code: str, param: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.param = param


class Replies:
    """The commands waited for, by client event id."""

    def __init__(self, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self._waiting: dict[str, asyncio.Future[Any]] = {}

    async def wait(self, event_id: str, send: Any) -> Any:
        """Await ``send()`` (which sends the command), then the answer to ``event_id``; raises
        :class:`CommandRefused`, :class:`SessionClosed` or :class:`TimeoutError`."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[event_id] = future
        try:
            await send()
            return await asyncio.wait_for(future, self.timeout_s)
        finally:
            self._waiting.pop(event_id, None)

    def settle(self, event_id: str | None, value: Any) -> None:
        """The answer to ``event_id`` (an exception fails the wait)."""
        future = self._waiting.get(event_id or "")
        if future is None or future.done():
            return
        if isinstance(value, BaseException):
            future.set_exception(value)
        else:
            future.set_result(value)

    def on_error(self, event: se.LiveErrorEvent) -> None:
        error = event.error
        self.settle(error.client_event_id, CommandRefused(error.message, error.code, error.param))

    def close(self) -> None:
        """The session ended: nothing waited for will come."""
        for event_id in list(self._waiting):
            self.settle(event_id, SessionClosed("the Live session ended before the answer"))
