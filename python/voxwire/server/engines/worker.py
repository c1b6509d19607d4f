"""One daemon thread that runs an engine's blocking calls, in order, off the event loop.

Like a one-thread ``ThreadPoolExecutor``, except that the thread is a daemon and :meth:`close`
never waits: a synthesis or transcription in progress when the server stops must not hold up
its shutdown (nor the interpreter's exit, which joins every executor thread). Its result is
simply dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["Worker", "in_daemon_thread"]

_T = TypeVar("_T")
_Job = tuple[Future[Any], Callable[[], Any]]


async def in_daemon_thread(call: Callable[[], _T], name: str) -> _T:
    """``call()`` on a daemon thread of its own (calls that may overlap, such as HTTP requests
    of several connections); the default executor is not used because ``asyncio.run`` waits
    for its threads when it ends."""
    future: Future[_T] = Future()

    def target() -> None:
        if future.set_running_or_notify_cancel():
            _settle(future, call)

    threading.Thread(target=target, name=name, daemon=True).start()
    return await asyncio.wrap_future(future)


def _settle(future: Future[_T], call: Callable[[], _T]) -> None:
    try:
        future.set_result(call())
    except BaseException as exc:  # handed to the awaiting task, which decides
        future.set_exception(exc)


class Worker:
    """Runs submitted calls one at a time on its own daemon thread (started on first use)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._ended: Future[None] = Future()  # set by the thread as it ends

    async def run(self, call: Callable[[], _T]) -> _T:
        """``call()`` on the worker thread; cancelling the wait leaves the call to finish
        unobserved (its result is dropped)."""
        future: Future[_T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name} is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._jobs.put((future, call))
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Take no more calls and drop the queued ones; does not wait (idempotent)."""
        with self._lock:
            self._closed = True
            self._jobs.put(None)

    async def wait_closed(self, timeout_s: float) -> None:
        """After :meth:`close`: until the call in progress (if any) has finished and the thread
        has ended, at most ``timeout_s``; the event loop goes on meanwhile (it polls)."""
        if self._thread is None:
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self._ended)), timeout_s)

    def _loop(self) -> None:
        try:
            self._serve()
        finally:
            self._ended.set_result(None)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, call = job
            if not future.set_running_or_notify_cancel():
                continue
            if self._closed:
                future.set_exception(RuntimeError(f"{self._name} is closed"))
            else:
                _settle(future, call)
