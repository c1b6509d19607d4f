"""SipWorker's scan in one process, on a real PostgreSQL cluster and the local server's SIP
trunk: an active call nobody owns is taken over by exactly one worker (the lease); a call hung
up while nobody owned it is marked ended after MAX_ATTACH_FAILURES refused attachments."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from tests.server.test_sip_trunk import ringing
from tests.store.conftest import pg_cluster  # noqa: F401 - the throwaway PostgreSQL cluster
from tests.telephony.conftest import SECRET, serving_asgi
from voxwire.agents import RealtimeAgent
from voxwire.exceptions import ConversationExists
from voxwire.server import RealtimeServer
from voxwire.server.sip import PhoneCall
from voxwire.store.postgres import PostgresStore
from voxwire.telephony.calls_table import CallsTable
from voxwire.telephony.sip import SipCalls
from voxwire.telephony.sip_worker import MAX_ATTACH_FAILURES, SipWorker

AGENT = RealtimeAgent(name="desk", instructions="Answer.")


@asynccontextmanager
async def accepted() -> AsyncIterator[tuple[PhoneCall, SipCalls, RealtimeServer]]:
    """A call accepted with the agent, on a schema named after it."""
    async with ringing() as (trunk, phone, server), SipCalls(base_url=trunk.api_base_url) as calls:
        await calls.accept(phone.call_id, AGENT)
        yield phone, calls, server


@asynccontextmanager
async def worker(
    conninfo: str, call_id: str, calls: SipCalls, server: RealtimeServer, grace_s: float = 0.0
) -> AsyncIterator[SipWorker]:
    """A worker on the call's schema, where the call is stored and listed (as a worker that
    died right after accepting it left it)."""
    schema = f"w_{call_id.lower()}"
    store = await PostgresStore.open(conninfo, schema=schema)
    table = await CallsTable.open(conninfo, schema=schema)
    with contextlib.suppress(ConversationExists):
        await store.create(call_id, agent=AGENT.name)
    await table.add(call_id)
    one = SipWorker(
        AGENT,
        store=store,
        calls_table=table,
        calls=calls,
        secret=SECRET,
        url=server.base_url + "/realtime",
        lease_ttl_s=5,
        new_call_grace_s=grace_s,
    )
    try:
        yield one
    finally:
        await one.aclose()
        await table.close()
        await store.close()


@asynccontextmanager
async def two_workers(conninfo: str) -> AsyncIterator[tuple[PhoneCall, SipWorker, SipWorker]]:
    async with (
        accepted() as (phone, calls, server),
        worker(conninfo, phone.call_id, calls, server) as first,
        worker(conninfo, phone.call_id, calls, server) as second,
    ):
        yield phone, first, second


def test_one_worker_takes_an_unowned_call_and_the_other_is_refused(
    pg_cluster: str,  # noqa: F811
) -> None:
    async def body() -> None:
        async with two_workers(pg_cluster) as (phone, first, second):
            assert await first.scan() == [phone.call_id]
            assert await second.scan() == []  # the lease is the first one's
            assert list(first.owned) == [phone.call_id]
            assert second.owned == {}
            assert phone.call.attached == 1

    asyncio.run(body())


def test_a_call_hung_up_while_unowned_is_marked_ended(pg_cluster: str) -> None:  # noqa: F811
    async def body() -> None:
        async with accepted() as (phone, calls, server):
            await calls.hangup(phone.call_id)
            async with worker(pg_cluster, phone.call_id, calls, server) as one:
                for _ in range(MAX_ATTACH_FAILURES - 1):
                    assert await one.scan() == []
                assert await one.table.active() == [phone.call_id]
                assert await one.scan() == []
                assert await one.table.active() == []

    asyncio.run(body())


def test_a_draining_worker_says_so_refuses_calls_and_hands_its_calls_over(
    pg_cluster: str,  # noqa: F811
) -> None:
    async def body() -> None:
        async with (
            two_workers(pg_cluster) as (phone, first, second),
            serving_asgi(first) as base,
            httpx.AsyncClient(base_url=base) as http,
        ):
            assert await first.scan() == [phone.call_id]
            health = await http.get("/health")
            assert (health.status_code, health.json()) == (
                200,
                {"status": "ok", "calls": [phone.call_id]},
            )
            await first.drain()
            health = await http.get("/health")
            assert (health.status_code, health.json()) == (503, {"status": "draining", "calls": []})
            refused = await http.post("/webhook", content=b"{}")
            assert refused.status_code == 503
            assert await first.scan() == []  # a draining worker takes nothing
            assert await second.scan() == [phone.call_id]  # released: taken at once
            assert phone.state == "accepted"
            assert phone.call.attached == 2

    asyncio.run(body())


def test_a_call_just_accepted_is_left_to_its_worker_for_the_grace(
    pg_cluster: str,  # noqa: F811
) -> None:
    async def body() -> None:
        async with (
            accepted() as (phone, calls, server),
            worker(pg_cluster, phone.call_id, calls, server, grace_s=60) as patient,
        ):
            assert await patient.table.active() == [phone.call_id]
            assert await patient.scan() == []  # listed just now: its accepting worker's
            assert phone.call.attached == 0

    asyncio.run(body())
