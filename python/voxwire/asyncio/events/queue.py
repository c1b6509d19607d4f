"""The session's event queue: bounded, never blocking the connection.

Policy. The receive loop must keep reading (a stalled reader stalls keepalive pings and the
audio behind them), so ``put`` never waits. When the queue holds ``max_events`` events, the
oldest *droppable* event goes — audio chunks, transcript deltas, interim transcriptions, raw
server events: things superseded by what follows them — and only if there is none, the oldest
event of any kind. Every dropped event is counted in :attr:`EventQueue.dropped`. The ``close``
event is put last and nothing follows it, so it is never dropped.

Any number of tasks may wait in ``get``; each event goes to one of them. ``close`` wakes them
all: they drain what is queued, then get :class:`QueueClosed`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from voxwire.exceptions import ConfigurationError

__all__ = ["EventQueue", "QueueClosed", "QueueIterator"]

_T = TypeVar("_T")


class QueueClosed(Exception):
    """The queue is closed and empty."""


class EventQueue(Generic[_T]):
    def __init__(self, max_events: int, *, droppable: Callable[[_T], bool]) -> None:
        if not isinstance(max_events, int) or max_events < 1:
            raise ConfigurationError(
                f"max_queued_events={max_events!r} is invalid: expected an integer >= 1"
            )
        self._max = max_events
        self._droppable = droppable
        self._events: deque[_T] = deque()
        self._droppable_queued = 0  # how many queued events are droppable: a full queue with
        # none (a long restoration's history events) drops its oldest without looking
        self._waiters: set[asyncio.Future[None]] = set()
        self._closed = False
        self.dropped = 0
        """Events dropped because the queue was full."""

    def __len__(self) -> int:
        return len(self._events)

    @property
    def closed(self) -> bool:
        return self._closed

    def put(self, event: _T) -> None:
        """Queue ``event`` (dropping one if full, see the module docstring); ignored once closed."""
        if self._closed:
            return
        if len(self._events) >= self._max:
            self._drop_one()
        self._events.append(event)
        if self._droppable(event):
            self._droppable_queued += 1
        self._wake()

    def close(self) -> None:
        """No more events; wake every waiter (idempotent)."""
        self._closed = True
        self._wake()

    async def get(self) -> _T:
        """The oldest event; waits for one. Raises :class:`QueueClosed` once closed and empty."""
        while not self._events:
            if self._closed:
                raise QueueClosed
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.add(waiter)
            try:
                await waiter
            finally:
                self._waiters.discard(waiter)
        event = self._events.popleft()
        if self._droppable_queued and self._droppable(event):
            self._droppable_queued -= 1
        return event

    def _wake(self) -> None:
        # Wake everyone: a woken waiter that is cancelled before it runs must not strand an
        # event while another waiter sleeps.
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    def _drop_one(self) -> None:
        if self._droppable_queued:
            index = next(i for i, event in enumerate(self._events) if self._droppable(event))
            self._droppable_queued -= 1
        else:
            index = 0
        del self._events[index]
        self.dropped += 1


class QueueIterator(Generic[_T]):
    """``async for`` over a queue until it is closed and empty (several iterators may share
    one queue: each item goes to one of them)."""

    def __init__(self, queue: EventQueue[_T]) -> None:
        self._queue = queue

    def __aiter__(self) -> QueueIterator[_T]:
        return self

    async def __anext__(self) -> _T:
        try:
            return await self._queue.get()
        except QueueClosed:
            raise StopAsyncIteration from None
