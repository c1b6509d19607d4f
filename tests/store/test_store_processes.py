"""Several writer processes on one store, a writer killed mid-stream, migrations, and the event
loop staying free during a large write — on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time

import pytest

from tests.store.conftest import Backend, spawn
from tests.store.frames import run, user
from voxwire.exceptions import StoreVersionError
from voxwire.store import PutItem, StoredItem
from voxwire.store._schema import SCHEMA_VERSION


def writer(
    backend: Backend, conversation_id: str, count: int, *shared: str
) -> subprocess.Popen[str]:
    return spawn("tests.store.writer", *backend.argv(), conversation_id, str(count), *shared)


def test_several_writer_processes_share_one_store(backend: Backend) -> None:
    # Four processes open the same fresh store at once (so they also race to create and
    # migrate it), each writes its own conversation and, for every item, an output into one
    # shared conversation — every transaction contends for that conversation's row.
    processes = [writer(backend, f"w{n}", 60, "shared") for n in range(4)]
    results = [process.communicate(timeout=120) for process in processes]
    for process, (out, err) in zip(processes, results, strict=True):
        assert process.returncode == 0, err
        assert out.count("ok ") == 60

    async def body() -> None:
        store = await backend.open()
        for n in range(4):
            loaded = await store.load(f"w{n}")
            assert [item.id for item in loaded.items] == [f"w{n}-{i}" for i in range(60)]
        shared = await store.load("shared")
        await store.close()
        assert shared.outputs == {f"w{n}-{i}": {"n": i} for n in range(4) for i in range(60)}

    run(body())


def test_many_sessions_in_one_process_share_one_store(backend: Backend) -> None:
    async def session(store: object, n: int) -> None:
        assert hasattr(store, "apply")
        await store.create(f"s{n}")  # type: ignore[attr-defined]
        for i in range(15):
            item = StoredItem(id=f"s{n}-{i}", position=i, wire=user(f"s{n}-{i}", "x"))
            await store.apply(f"s{n}", [PutItem(item=item)])  # type: ignore[attr-defined]

    async def body() -> None:
        store = await backend.open()
        await asyncio.gather(*(session(store, n) for n in range(12)))
        for n in range(12):
            loaded = await store.load(f"s{n}")
            assert [item.id for item in loaded.items] == [f"s{n}-{i}" for i in range(15)]
        assert len(await store.list_conversations()) == 12
        await store.close()

    run(body())


def test_a_killed_writer_loses_nothing_it_confirmed(backend: Backend) -> None:
    process = writer(backend, "crash", 100_000)
    assert process.stdout is not None
    confirmed: list[str] = []
    while len(confirmed) < 40:
        line = process.stdout.readline()
        assert line, process.stderr.read() if process.stderr else "writer ended early"
        confirmed.append(line.split()[1])
    process.send_signal(signal.SIGKILL)  # mid-stream: the next apply is in flight
    rest, _ = process.communicate(timeout=30)
    confirmed += [line.split()[1] for line in rest.splitlines()]
    assert process.returncode == -signal.SIGKILL

    async def body() -> None:
        store = await backend.open()
        loaded = await store.load("crash")
        await store.close()
        ids = [item.id for item in loaded.items]
        # Everything confirmed is there, in order; at most the item in flight beyond it.
        assert ids[: len(confirmed)] == confirmed
        assert len(ids) - len(confirmed) in (0, 1)
        assert ids == [f"crash-{i}" for i in range(len(ids))]

    run(body())


def test_an_older_store_is_migrated(backend: Backend) -> None:
    async def body() -> None:
        old = await backend.open(schema_version=1)
        await old.create("kept")
        await old.put_item("kept", StoredItem(id="x", position=0, wire=user("x", "hi")))
        await old.close()
        assert backend.execute("SELECT version FROM schema_version") == [(1,)]
        store = await backend.open()
        loaded = await store.load("kept")
        listed = await store.list_conversations()
        await store.close()
        assert [item.id for item in loaded.items] == ["x"]
        assert [c.conversation_id for c in listed] == ["kept"]
        assert backend.execute("SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]

    run(body())


def test_a_store_from_a_newer_voxwire_fails_clearly(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        await store.close()
        backend.execute("UPDATE schema_version SET version = 99, written_by = '9.9.9'")
        with pytest.raises(StoreVersionError) as caught:
            await backend.open()
        message = str(caught.value)
        assert "schema version 99" in message
        assert "voxwire 9.9.9" in message
        assert f"up to {SCHEMA_VERSION}" in message
        assert "Upgrade voxwire" in message

    run(body())


def test_a_large_write_does_not_block_the_event_loop(backend: Backend) -> None:
    items = [
        PutItem(item=StoredItem(id=f"i{n}", position=n, wire=user(f"i{n}", "x" * 4000)))
        for n in range(4000)
    ]

    async def body() -> None:
        store = await backend.open()
        await store.create("big")
        ticks: list[float] = []

        async def heartbeat() -> None:
            while True:
                ticks.append(time.perf_counter())
                await asyncio.sleep(0.002)

        beating = asyncio.create_task(heartbeat())
        await asyncio.sleep(0.01)
        start = time.perf_counter()
        await store.apply("big", items)
        end = time.perf_counter()
        beating.cancel()
        await store.close()
        during = [t for t in ticks if start <= t <= end]
        # A blocked loop would not tick at all while the write runs; a loop that is free ticks
        # throughout it, in its second half too (no bound on the gaps: a busy machine may
        # delay any one tick).
        assert len(during) >= 3, (end - start, len(during))
        assert any(t > (start + end) / 2 for t in during), (end - start, during)

    run(body())
