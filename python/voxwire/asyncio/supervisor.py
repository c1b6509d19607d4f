"""``OwnedTasks``: the owner of a session's background work (tool calls, guardrail checks).

Three rules, each one tested through the session:

* every task started here is tracked until it is done, and :meth:`OwnedTasks.aclose` cancels
  and awaits all of them — also tasks started while it runs — so nothing outlives the session;
* an exception escaping a task is handed to ``on_error`` (the session turns it into an
  ``error`` event), never lost and never fatal to the session;
* a cancelled task counts as finished, not as failed; ``CancelledError`` is never swallowed —
  a caller of :meth:`aclose` that is cancelled itself stops waiting and is cancelled.

Synchronous tools run in threads (``asyncio.to_thread``); a thread cannot be cancelled, so one
still running when the session closes finishes on its own, its result unused.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from voxwire.asyncio.errors import SessionClosed

__all__ = ["OwnedTasks", "UserCodeCancelled", "UserCodeTimeout", "run_user_code"]

log = logging.getLogger("voxwire.session")

T = TypeVar("T")


class OwnedTasks:
    """A set of tasks with one owner (see the module docstring). ``on_error(kind, exc)`` is
    called, in the event loop, with the ``kind`` given to :meth:`spawn`."""

    def __init__(self, on_error: Callable[[str, BaseException], None]) -> None:
        self._on_error = on_error
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    def __len__(self) -> int:
        return len(self._tasks)

    @property
    def closed(self) -> bool:
        return self._closed

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str, kind: str) -> asyncio.Task[T]:
        """Start ``coro`` as an owned task. Raises :class:`SessionClosed` after :meth:`aclose`
        began (the coroutine is closed, never run)."""
        if self._closed:
            coro.close()
            raise SessionClosed("the session is closing: no new background work starts")
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(functools.partial(self._finished, kind))
        return task

    def _finished(self, kind: str, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("background %s %s failed", kind, task.get_name(), exc_info=exc)
            try:
                self._on_error(kind, exc)
            except Exception:  # reporting must not break the loop's callback machinery
                log.exception("reporting the failure of %s failed", task.get_name())

    async def aclose(self) -> None:
        """Cancel every task and wait until all are done (idempotent; concurrent callers all
        wait)."""
        self._closed = True
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
            self._tasks.difference_update(tasks)  # done; their callbacks may still be queued


class UserCodeCancelled(Exception):
    """Code of the application (a tool, a guardrail) ended with ``CancelledError`` although
    nothing here cancelled it: a failure of that code, reported like any other."""


async def run_user_code(
    work: Coroutine[Any, Any, T], *, name: str, timeout_s: float | None = None
) -> T:
    """Run ``work`` in a child task and return its result.

    Cancelling the caller cancels the child and waits for it (then re-raises). A child that
    ends cancelled by itself raises :class:`UserCodeCancelled` instead, so an owner never
    mistakes it for its own cancellation. With ``timeout_s``, a child still running then is
    cancelled and :class:`TimeoutError` is raised (a ``TimeoutError`` the code raises itself
    comes out as its own exception, chained to nothing here).
    """
    task = asyncio.get_running_loop().create_task(work, name=name)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    except BaseException:
        task.cancel()
        await asyncio.wait({task})
        raise
    if not done:
        task.cancel()
        await asyncio.wait({task})
        if not task.cancelled() and task.exception() is None:
            return task.result()  # it finished while being cancelled
        raise UserCodeTimeout(f"{name} did not finish within {timeout_s:g} s")
    if task.cancelled():
        raise UserCodeCancelled(f"{name} was cancelled by its own code")
    return task.result()


class UserCodeTimeout(TimeoutError):
    """:func:`run_user_code` ran out of time (told apart from a TimeoutError the code raises)."""
