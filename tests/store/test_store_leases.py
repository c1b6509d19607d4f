"""Leases: one live writer per conversation, with a fencing token — in this process, across
real processes, after a holder dies, and when a stalled holder's lease is taken over. On SQLite
and on PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.store.conftest import Backend, spawn
from tests.store.frames import run, user
from voxwire.exceptions import (
    ConfigurationError,
    ConversationHeld,
    ConversationNotFound,
    LeaseLost,
    StoreError,
)
from voxwire.store import ConversationStore, PutItem, SetAgent, StoredItem
from voxwire.store.lease import dead_here, default_holder, describe_holder


def item(n: int) -> PutItem:
    return PutItem(item=StoredItem(id=f"i{n}", position=n, wire=user(f"i{n}", "x")))


def child(
    backend: Backend, cid: str, mode: str, ttl_s: float, *holder: str
) -> subprocess.Popen[str]:
    return spawn("tests.store.lease_child", *backend.argv(), cid, mode, str(ttl_s), *holder)


def test_a_second_writer_is_refused_until_the_lease_is_released(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        await store.create("c")
        first = await store.acquire("c", ttl_s=30, holder="agent-a")
        assert first.token == 1
        with pytest.raises(ConversationHeld) as caught:
            await store.acquire("c", holder="agent-b")
        message = str(caught.value)
        assert "conversation 'c' is held by agent-a (lease token 1)" in message
        assert "s more unless renewed" in message
        assert "if its process died, the lease expires by itself" in message
        assert caught.value.conversation_id == "c"
        with pytest.raises(ConversationHeld, match="held by agent-a"):
            await store.apply("c", [item(0)])  # a write without the lease
        with pytest.raises(ConversationHeld, match="held by agent-a"):
            await store.delete_conversation("c")
        await store.apply("c", [item(0)], lease=first)
        await store.release(first)
        second = await store.acquire("c", holder="agent-b")
        assert second.token == 2
        await store.apply("c", [item(1)], lease=second)
        assert [i.id for i in (await store.load("c")).items] == ["i0", "i1"]
        with pytest.raises(ConversationNotFound, match="no conversation 'nope'"):
            await store.acquire("nope")
        with pytest.raises(ConfigurationError, match="ttl_s=0"):
            await store.acquire("c", ttl_s=0)
        with pytest.raises(ConfigurationError, match="is not a lease of conversation 'd'"):
            await store.apply("d", [], lease=second)
        await store.close()

    run(body())


def test_an_expired_lease_is_taken_over_and_its_holder_fenced_off(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        await store.create("c")
        stalled = await store.acquire("c", ttl_s=0.2, holder="stalled")
        await store.apply("c", [item(0)], lease=stalled)
        await asyncio.sleep(0.35)  # it stops renewing (a long pause, a frozen VM)
        taker = await store.acquire("c", ttl_s=30, holder="taker")
        assert taker.token == stalled.token + 1
        with pytest.raises(LeaseLost) as caught:
            await store.apply("c", [item(1)], lease=stalled)
        message = str(caught.value)
        assert "the lease of stalled (token 1) was taken over by taker (token 2)" in message
        assert "this write was refused" in message
        with pytest.raises(LeaseLost):
            await store.renew(stalled)
        await store.release(stalled)  # nothing happens: it is not the current lease
        await store.apply("c", [item(2)], lease=taker)
        assert [i.id for i in (await store.load("c")).items] == ["i0", "i2"]  # not interleaved
        with pytest.raises(ConversationHeld, match="held by taker"):
            await store.acquire("c")
        await store.close()

    run(body())


def test_a_held_conversation_is_renewed_and_released(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        await store.create("c")
        held = await store.hold("c", ttl_s=1.0, holder="keeper")
        await asyncio.sleep(2.5)  # more than twice the ttl: renewed all along
        with pytest.raises(ConversationHeld, match="held by keeper"):
            await store.acquire("c")
        assert held.lost is None
        await store.apply("c", [item(0)], lease=held.lease)
        await held.release()
        await held.release()  # idempotent
        taken = await store.acquire("c")
        assert taken.token == held.lease.token + 1
        await store.close()

    run(body())


def test_a_holder_learns_when_its_lease_was_taken(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        await store.create("c")
        lost: list[StoreError] = []
        held = await store.hold("c", ttl_s=0.3, holder="victim", on_lost=lost.append)
        # An operator (or a clock jump) expires the lease; another process takes it at once.
        backend.execute("UPDATE conversations SET lease_expires = 0 WHERE id = 'c'")
        await store.acquire("c", holder="usurper")
        for _ in range(100):  # the next renewal (every 0.1 s) finds it gone
            if lost:
                break
            await asyncio.sleep(0.05)
        assert len(lost) == 1
        assert isinstance(lost[0], LeaseLost)
        assert held.lost is lost[0]
        assert "taken over by usurper" in str(lost[0])
        with pytest.raises(LeaseLost):
            await store.apply("c", [item(0)], lease=held.lease)
        await held.release()  # does not free the usurper's lease
        with pytest.raises(ConversationHeld, match="held by usurper"):
            await store.acquire("c")
        await store.close()

    run(body())


def test_import_over_a_held_conversation_keeps_its_fencing(backend: Backend) -> None:
    async def body() -> None:
        store: ConversationStore = await backend.open()
        await store.create("c")
        lease = await store.acquire("c", holder="owner")
        await store.apply("c", [item(0), SetAgent(name="concierge")], lease=lease)
        snapshot = await store.load("c")
        with pytest.raises(ConversationHeld, match="held by owner"):
            await store.import_snapshot(snapshot, replace=True)
        await store.import_snapshot(snapshot, replace=True, lease=lease)
        await store.apply("c", [item(1)], lease=lease)  # the same token still writes
        with pytest.raises(ConversationHeld):
            await store.acquire("c")
        assert len((await store.load("c")).items) == 2
        await store.close()

    run(body())


def test_another_process_cannot_take_a_held_conversation(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        await store.create("held")
        lease = await store.acquire("held", ttl_s=30, holder="this-process")
        process = child(backend, "held", "take", 1.0)
        out, err = await asyncio.to_thread(process.communicate, timeout=60)
        assert process.returncode == 0, err
        acquire, write = out.splitlines()
        assert acquire.startswith("refused ConversationHeld ")
        assert "conversation 'held' is held by this-process (lease token 1)" in acquire
        assert write.startswith("refused ConversationHeld ")
        await store.apply("held", [item(0)], lease=lease)
        assert [i.id for i in (await store.load("held")).items] == ["i0"]  # no intruder
        await store.close()

    run(body())


def test_a_dead_holders_lease_expires_and_the_conversation_is_taken_over(
    backend: Backend,
) -> None:
    ttl_s = 1.0

    async def body() -> None:
        store = await backend.open()
        await store.create("orphan")
        # Named like a holder on another machine: nothing here can tell it died; it expires.
        process = child(backend, "orphan", "hold", ttl_s, "agent-on-another-machine")
        assert process.stdout is not None
        held = await asyncio.to_thread(process.stdout.readline)
        assert held.startswith("held 1 "), held + (process.stderr.read() if process.stderr else "")
        holder = held.split()[2]
        for _ in range(3):  # it writes with its lease
            assert (await asyncio.to_thread(process.stdout.readline)).startswith("wrote ")
        with pytest.raises(ConversationHeld, match=f"held by {holder}"):
            await store.acquire("orphan")
        process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(process.wait)
        died = time.monotonic()
        # Refused while the dead holder's lease runs out, taken within a poll of it expiring.
        while True:
            try:
                lease = await store.acquire("orphan", holder="heir")
                break
            except ConversationHeld:
                assert time.monotonic() - died < ttl_s + 5
                await asyncio.sleep(0.05)
        waited = time.monotonic() - died
        assert lease.token == 2
        assert waited < ttl_s + 5
        loaded = await store.load("orphan")
        await store.apply("orphan", [item(0)], lease=lease)
        assert all(i.id.startswith("child-") for i in loaded.items)
        await store.close()
        print(
            f"lease of a killed holder (ttl {ttl_s:g} s) taken over {waited:.2f} s after the kill"
        )

    run(body())


def test_concurrent_acquisitions_have_exactly_one_winner(backend: Backend) -> None:
    async def body() -> None:
        stores = [await backend.open() for _ in range(6)]
        await stores[0].create("race")
        for round_ in range(5):
            results = await asyncio.gather(
                *(s.acquire("race", holder=f"h{n}", ttl_s=30) for n, s in enumerate(stores)),
                return_exceptions=True,
            )
            won = [r for r in results if not isinstance(r, BaseException)]
            lost = [r for r in results if isinstance(r, BaseException)]
            assert len(won) == 1, results
            assert all(isinstance(r, ConversationHeld) for r in lost), lost
            assert won[0].token == round_ + 1
            assert all(f"held by {won[0].holder}" in str(r) for r in lost)
            await stores[0].release(won[0])
        for s in stores:
            await s.close()

    run(body())


def test_a_released_lease_writes_and_renews_no_more(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        await store.create("c")
        lease = await store.acquire("c")
        with pytest.raises(ConversationHeld) as caught:
            await store.acquire("c", holder="other")
        # The default holder names its process and host.
        assert f"(process {os.getpid()} on host {socket.gethostname()})" in str(caught.value)
        await store.apply("c", [item(0)], lease=lease)
        await store.release(lease)
        with pytest.raises(LeaseLost, match=r"\(token 1\) was released"):
            await store.apply("c", [item(1)], lease=lease)
        with pytest.raises(LeaseLost, match="was released"):
            await store.renew(lease)
        with pytest.raises(LeaseLost, match="was released"):
            await store.import_snapshot(await store.load("c"), replace=True, lease=lease)
        # The stale renewal did not hold the conversation for nobody: it is free.
        again = await store.acquire("c", holder="next")
        assert again.token == 2
        with pytest.raises(LeaseLost, match="taken over by next"):
            await store.apply("c", [item(1)], lease=lease)
        assert [i.id for i in (await store.load("c")).items] == ["i0"]
        await store.close()

    run(body())


def test_a_killed_holder_on_this_machine_is_taken_over_at_once(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        await store.create("orphan")
        process = child(backend, "orphan", "hold", 30.0)  # 30 s: no waiting for it to expire
        assert process.stdout is not None
        held = await asyncio.to_thread(process.stdout.readline)
        assert held.startswith("held 1 "), held + (process.stderr.read() if process.stderr else "")
        holder = held.split()[2]
        assert f"(process {process.pid} on host" in describe_holder(holder)
        assert (await asyncio.to_thread(process.stdout.readline)).startswith("wrote ")
        with pytest.raises(ConversationHeld, match=f"held by {holder}"):
            await store.acquire("orphan")  # alive: refused
        process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(process.wait)
        lease = await store.acquire("orphan", holder="heir")  # dead: taken, no waiting
        assert lease.token == 2
        await store.apply("orphan", [item(0)], lease=lease)
        await store.close()

    run(body())


def test_only_a_provably_dead_holder_is_taken_over_early(backend: Backend) -> None:
    """A name that is not this machine's (another host, another boot, another pid namespace, a
    name given by the application) keeps its lease until it expires, even if no process here
    has its pid; an exited but unreaped child (a zombie) counts as dead."""
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    while not dead_here(default_holder().replace(f":{os.getpid()}:", f":{zombie.pid}:")):
        time.sleep(0.01)  # it exits (the zombie stays until wait())
    gone = default_holder().replace(f":{os.getpid()}:", f":{zombie.pid}:")
    host, pid, tag, machine = gone.rsplit(":", 3)
    boot, namespace = machine.split("-")
    elsewhere = [
        f"another-{host}:{pid}:{tag}:{machine}",
        f"{host}:{pid}:{tag}:{'f' * len(boot)}-{namespace}",  # after a reboot
        f"{host}:{pid}:{tag}:{boot}-1{namespace}",  # in another container
        f"{host}:{pid}:{tag}:-",
        f"agent-{pid}",
    ]
    assert dead_here(gone)
    assert not any(dead_here(name) for name in elsewhere)
    assert not dead_here(default_holder())  # this process

    async def body() -> None:
        store = await backend.open()
        for n, name in enumerate([*elsewhere, gone]):
            await store.create(f"c{n}")
            await store.acquire(f"c{n}", holder=name, ttl_s=30)
        for n in range(len(elsewhere)):
            with pytest.raises(ConversationHeld):
                await store.acquire(f"c{n}")
        assert (await store.acquire(f"c{len(elsewhere)}")).token == 2
        await store.close()

    try:
        run(body())
    finally:
        zombie.wait()
