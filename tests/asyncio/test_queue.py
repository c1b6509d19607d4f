"""The bounded event queue: its drop policy and its waiters (no network needed)."""

from __future__ import annotations

import asyncio

import pytest

from voxwire.asyncio.events.queue import EventQueue, QueueClosed
from voxwire.exceptions import ConfigurationError

from .helpers import run


def queue(max_events: int) -> EventQueue[str]:
    # "delta…" events are droppable, everything else is not.
    return EventQueue(max_events, droppable=lambda e: e.startswith("delta"))


async def contents(q: EventQueue[str]) -> list[str]:
    q.close()
    got = []
    while True:
        try:
            got.append(await q.get())
        except QueueClosed:
            return got


def test_full_queue_drops_the_oldest_droppable_then_the_oldest() -> None:
    async def body() -> None:
        q = queue(3)
        for event in ("a", "delta1", "b", "c"):
            q.put(event)
        assert q.dropped == 1
        assert await contents(q) == ["a", "b", "c"]  # the delta went first

        q = queue(3)
        for event in ("a", "delta1", "b", "c", "d"):
            q.put(event)  # the delta, then nothing droppable is left: the oldest
        assert q.dropped == 2
        assert await contents(q) == ["b", "c", "d"]
        q.put("after close")  # ignored
        assert len(q) == 0

    run(body())
    with pytest.raises(ConfigurationError):
        queue(0)


def test_close_wakes_every_waiter_after_draining() -> None:
    async def body() -> None:
        q = queue(10)

        async def take() -> list[str]:
            got = []
            while True:
                try:
                    got.append(await q.get())
                except QueueClosed:
                    return got

        takers = [asyncio.create_task(take()) for _ in range(3)]
        await asyncio.sleep(0)
        q.put("x")
        q.put("y")
        q.close()
        results = await asyncio.gather(*takers)
        assert sorted(e for r in results for e in r) == ["x", "y"]

    run(body())


def test_a_cancelled_waiter_does_not_strand_an_event() -> None:
    async def body() -> None:
        q = queue(10)
        first = asyncio.create_task(q.get())
        second = asyncio.create_task(q.get())
        await asyncio.sleep(0)
        q.put("only")  # wakes both; the first is cancelled before it runs
        first.cancel()
        assert await second == "only"
        with pytest.raises(asyncio.CancelledError):
            await first

    run(body())
