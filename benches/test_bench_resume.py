"""Resuming a stored conversation of 100, 500 and 2,000 items: ``RealtimeSession.resume(store,
id)`` then ``connect()`` — the load from the store, the connection to the local server on
loopback, the agent's ``session.update``, the replay of every item and the server's
acknowledgement of every one — on SQLite and on PostgreSQL (a throwaway local cluster, as in
tests/store). The peer in the same run: ``connect()`` of a new session with the same store (no
replay). Issue 19's target: at most 100 ms for 500 items on SQLite.

    pytest benches/test_bench_resume.py -k "resume_conversation or connect_new" \
        --benchmark-only --benchmark-group-by=group --benchmark-columns=median,iqr,rounds

The local server runs in the same process and event loop (``server-in-process``), so its work
is in the figure; ``-k own_process`` runs it as ``voxwire serve`` in a process of its own, which
leaves the client's share (on a machine with a core to spare for the server). Each resume
benchmark also records the process's median CPU time per round (``extra_info["cpu_ms_median"]``
in ``--benchmark-json``), steadier than the wall time on a shared machine.

Each round opens a new session and closes it after ``connect()`` returned (the close is timed
too: it is the same for both).
"""

from __future__ import annotations

import asyncio
import re
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package (fixtures)

from benches.test_bench_store import conversation
from tests.children import child_env
from tests.store.conftest import Backend, pg_cluster  # noqa: F401

from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.persistence.resumption import items_to_replay
from voxwire.server import Pacing, RealtimeServer
from voxwire.store import ConversationRecorder, PutItem

MANUAL = {"output_modalities": ["text"], "audio": {"input": {"turn_detection": None}}}
LENGTHS = [100, 500, 2_000]


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture
def server(loop: asyncio.AbstractEventLoop) -> Iterator[RealtimeServer]:
    server = RealtimeServer(pacing=Pacing(audio_pace=0, text_tokens_per_s=0), tts=None)
    loop.run_until_complete(server.__aenter__())
    yield server
    loop.run_until_complete(server.__aexit__(None, None, None))


@pytest.fixture
def own_process_server() -> Iterator[str]:
    """``voxwire serve`` in a child process (text only, no pacing); yields its URL."""
    command = [sys.executable, "-m", "voxwire.cli", "serve", "--port", "0", "--no-audio"]
    child = subprocess.Popen(
        [*command, "--pace", "0", "--text-rate", "0"],
        env=child_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        banner = child.stdout.readline()
        found = re.search(r"(ws://\S+/realtime)", banner)
        assert found, f"voxwire serve said {banner!r}"
        yield f"{found.group(1)}?model=gpt-realtime"
    finally:
        child.terminate()
        child.wait(10)


@pytest.fixture(params=LENGTHS, ids=[f"{n}-items" for n in LENGTHS])
def length(request: pytest.FixtureRequest) -> int:
    return int(request.param)


def _open(
    request: pytest.FixtureRequest, kind: str, tmp_path: Path, loop: asyncio.AbstractEventLoop
) -> Any:
    if kind == "sqlite":
        backend = Backend("sqlite", str(tmp_path / "bench.db"))
    else:
        conninfo = request.getfixturevalue("pg_cluster")
        backend = Backend("postgres", conninfo, schema=f"b_{uuid.uuid4().hex[:12]}")
    return loop.run_until_complete(backend.open())


@pytest.fixture(params=["sqlite", "postgres"])
def filled(
    request: pytest.FixtureRequest, tmp_path: Path, loop: asyncio.AbstractEventLoop, length: int
) -> Iterator[Any]:
    """A store holding one conversation ("bench") of ``length`` mixed items."""
    opened = _open(request, request.param, tmp_path, loop)
    loop.run_until_complete(opened.create("bench"))
    ops = [PutItem(item=item) for item in conversation(length)]
    loop.run_until_complete(opened.apply("bench", ops))
    yield opened
    loop.run_until_complete(opened.close())


def _resume_rounds(
    benchmark: Any, store: Any, url: str, length: int, loop: asyncio.AbstractEventLoop
) -> None:
    """Time resume + connect + close; the process's CPU time per round (all its threads: the
    client, the store's, the local server when it runs here) goes in ``extra_info`` — on a
    shared machine it moves less than the wall time."""
    cpu_s: list[float] = []

    async def resume() -> int:
        session = RealtimeSession.resume(store, "bench", url=url, config=MANUAL)
        async with session:
            return len(session.history)

    def round_() -> int:
        started = time.process_time()
        restored = loop.run_until_complete(resume())
        cpu_s.append(time.process_time() - started)
        return restored

    restored = benchmark.pedantic(
        round_, rounds=15 if length <= 500 else 7, iterations=1, warmup_rounds=1
    )
    assert restored == length
    benchmark.extra_info["cpu_ms_median"] = round(statistics.median(cpu_s[1:]) * 1000, 2)


def test_resume_conversation(
    benchmark: Any,
    filled: Any,
    length: int,
    server: RealtimeServer,
    loop: asyncio.AbstractEventLoop,
) -> None:
    benchmark.group = f"session: resume a {length}-item conversation (load, connect, replay, acks)"
    _resume_rounds(benchmark, filled, server.url(), length, loop)


@pytest.mark.parametrize("length", [500], ids=["500-items"])
def test_resume_conversation_own_process(
    benchmark: Any,
    filled: Any,
    length: int,
    own_process_server: str,
    loop: asyncio.AbstractEventLoop,
) -> None:
    """The same with the server as ``voxwire serve`` in a process of its own: the client's
    share (the server works on the other core meanwhile)."""
    benchmark.group = "session: resume a 500-item conversation, server in its own process"
    _resume_rounds(benchmark, filled, own_process_server, length, loop)


@pytest.mark.parametrize("length", [500], ids=["500-items"])
def test_connect_new_conversation(
    benchmark: Any,
    filled: Any,
    length: int,
    server: RealtimeServer,
    loop: asyncio.AbstractEventLoop,
) -> None:
    benchmark.group = "session: resume a 500-item conversation (load, connect, replay, acks)"

    async def connect() -> int:
        session = RealtimeSession(url=server.url(), config=MANUAL, store=filled)
        async with session:
            return len(session.history)

    assert (
        benchmark.pedantic(
            lambda: loop.run_until_complete(connect()), rounds=15, iterations=1, warmup_rounds=1
        )
        == 0
    )


# --- the store side of resuming, by length ------------------------------------------------------
#
#     pytest benches/test_bench_resume.py -k store_side --benchmark-only \
#         --benchmark-group-by=group --benchmark-columns=median,iqr,rounds
#
# What a resumed session asks of the store and of the replay rules before it talks to a server:
# load the conversation (decoded and integrity-checked), pick the items to replay (orphans,
# restoration rules), start the recorder from the snapshot; and, apart, the lease it takes
# (acquire) and gives back (release). No network.


def test_store_side_of_resuming(
    benchmark: Any, filled: Any, length: int, loop: asyncio.AbstractEventLoop
) -> None:
    benchmark.group = f"store side of resuming: {length} items (load, replay, recorder)"

    async def resume() -> int:
        snapshot = await filled.load("bench")
        items, _ = items_to_replay(snapshot)
        ConversationRecorder.from_snapshot(snapshot)
        return len(items)

    replayed = benchmark.pedantic(
        lambda: loop.run_until_complete(resume()), rounds=20, iterations=1, warmup_rounds=2
    )
    assert replayed == length


def test_store_side_lease(
    benchmark: Any, filled: Any, length: int, loop: asyncio.AbstractEventLoop
) -> None:
    """What the lease adds to a resume: acquire before the load, release at close (two short
    write transactions, whatever the length)."""
    if not hasattr(filled, "acquire"):
        pytest.skip("this voxwire has no leases")
    benchmark.group = f"store side of resuming: {length} items (lease acquire + release)"

    async def lease() -> int:
        taken = await filled.acquire("bench")
        await filled.release(taken)
        return int(taken.token)

    assert benchmark.pedantic(
        lambda: loop.run_until_complete(lease()), rounds=20, iterations=1, warmup_rounds=2
    )
