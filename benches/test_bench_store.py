"""Conversation store: write cost per item and load time of a 500-item conversation, on SQLite
and PostgreSQL (a throwaway local cluster, as in tests/store), plus the thread hand-off cost
that chose SQLiteStore's design.

    pytest benches/test_bench_store.py --benchmark-only --benchmark-group-by=group \
        --benchmark-columns=median,iqr,rounds

Each timed call runs one store coroutine to completion on an event loop kept for the whole
benchmark (``loop.run_until_complete``, whose own cost, a few µs, is included). "write" is one
``apply`` of one ``PutItem`` (a user message of about 300 bytes of wire JSON) — one committed
transaction, the unit a session pays per confirmed item. "load" reads a 500-item conversation
(user messages, assistant messages with transcripts, function calls and outputs) back into a
``SessionSnapshot``.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import sys
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package (fixtures)

from tests.store.conftest import Backend, pg_cluster  # noqa: F401
from tests.store.frames import assistant, call, output, user

from voxwire.store import PutItem, StoredItem

BACKENDS = ["sqlite", "sqlite-full", "postgres"]


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(params=BACKENDS)
def store(
    request: pytest.FixtureRequest, tmp_path: Path, loop: asyncio.AbstractEventLoop
) -> Iterator[Any]:
    options: dict[str, Any] = {}
    if request.param.startswith("sqlite"):
        backend = Backend("sqlite", str(tmp_path / "bench.db"))
        if request.param == "sqlite-full":
            options["synchronous"] = "FULL"
    else:
        conninfo = request.getfixturevalue("pg_cluster")
        backend = Backend("postgres", conninfo, schema=f"b_{uuid.uuid4().hex[:12]}")
    opened = loop.run_until_complete(backend.open(**options))
    yield opened
    loop.run_until_complete(opened.close())


def conversation(count: int) -> list[StoredItem]:
    """A mixed conversation: user turn, tool call, tool output, spoken answer, repeated."""
    items = []
    for n in range(count):
        kind = n % 4
        if kind == 0:
            wire = user(f"u{n}", "What is the weather like in Paris this afternoon, please?")
            items.append(StoredItem(id=wire["id"], position=n, wire=wire))
        elif kind == 1:
            wire = call(f"c{n}", f"call_{n}", arguments='{"city": "Paris", "when": "afternoon"}')
            items.append(
                StoredItem(
                    id=wire["id"], position=n, wire=wire, origin="model", response_id=f"r{n}"
                )
            )
        elif kind == 2:
            wire = output(f"o{n}", f"call_{n - 1}", '{"temperature": 21, "sky": "clear"}')
            items.append(StoredItem(id=wire["id"], position=n, wire=wire, origin="sdk"))
        else:
            text = "It is 21 degrees and clear in Paris this afternoon."
            wire = assistant(f"a{n}", text)
            items.append(
                StoredItem(
                    id=wire["id"],
                    position=n,
                    wire=wire,
                    transcripts={0: text},
                    origin="model",
                    response_id=f"r{n}",
                )
            )
    return items


def test_write_one_item(benchmark: Any, store: Any, loop: asyncio.AbstractEventLoop) -> None:
    benchmark.group = "store: write one item (one transaction)"
    loop.run_until_complete(store.create("bench"))
    ids = itertools.count()

    def write() -> None:
        n = next(ids)
        wire = user(f"u{n}", "What is the weather like in Paris this afternoon, please?")
        item = StoredItem(id=wire["id"], position=n, wire=wire)
        loop.run_until_complete(store.apply("bench", [PutItem(item=item)]))

    benchmark.pedantic(write, rounds=300, iterations=1, warmup_rounds=10)


def test_write_one_item_into_a_long_conversation(
    benchmark: Any, store: Any, loop: asyncio.AbstractEventLoop
) -> None:
    """The same write once the conversation holds 2,000 items: what keeping its counts and
    checksums (issue 19) costs must not grow with the length."""
    benchmark.group = "store: write one item into a 2,000-item conversation"
    loop.run_until_complete(store.create("bench"))
    loop.run_until_complete(store.apply("bench", [PutItem(item=i) for i in conversation(2000)]))
    ids = itertools.count()

    def write() -> None:
        n = next(ids)
        wire = user(f"w{n}", "What is the weather like in Paris this afternoon, please?")
        item = StoredItem(id=wire["id"], position=10_000 + n, wire=wire)
        loop.run_until_complete(store.apply("bench", [PutItem(item=item)]))

    benchmark.pedantic(write, rounds=300, iterations=1, warmup_rounds=10)


def test_load_500_items(benchmark: Any, store: Any, loop: asyncio.AbstractEventLoop) -> None:
    benchmark.group = "store: load a 500-item conversation"
    loop.run_until_complete(store.create("bench"))
    items = conversation(500)
    loop.run_until_complete(store.apply("bench", [PutItem(item=item) for item in items]))

    def load() -> Any:
        return loop.run_until_complete(store.load("bench"))

    loaded = benchmark.pedantic(load, rounds=40, iterations=1, warmup_rounds=2)
    assert loaded.items == tuple(items)


@pytest.mark.parametrize("dispatch", ["dedicated-thread", "to_thread"])
def test_thread_hand_off(
    benchmark: Any, dispatch: str, tmp_path: Path, loop: asyncio.AbstractEventLoop
) -> None:
    """One ``SELECT 1`` on a SQLite connection from the event loop: on the store's own thread
    (run_in_executor on a one-thread executor: the connection never changes threads), or on
    the default pool with ``asyncio.to_thread`` (the connection must be shared under a lock)."""
    benchmark.group = "store: SQLite call from the event loop"
    executor = ThreadPoolExecutor(1)
    connection = sqlite3.connect(tmp_path / "d.db", check_same_thread=False, isolation_level=None)
    lock = threading.Lock()

    def select() -> Any:
        with lock:
            return connection.execute("SELECT 1").fetchall()

    async def dedicated() -> Any:
        return await asyncio.get_running_loop().run_in_executor(executor, select)

    async def to_thread() -> Any:
        return await asyncio.to_thread(select)

    call_once = dedicated if dispatch == "dedicated-thread" else to_thread
    benchmark.pedantic(
        lambda: loop.run_until_complete(call_once()), rounds=2000, iterations=1, warmup_rounds=50
    )
    executor.shutdown()
    connection.close()
