"""SipWorker's scan in one process, on a real PostgreSQL cluster and the local server's SIP
trunk: an active call nobody owns is taken over by exactly one worker (the lease); a call hung
up while nobody owned it is marked ended after MAX_ATTACH_FAILURES refused attachments."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tests.server.test_sip_trunk import ringing
from tests.store.conftest import pg_cluster  # noqa: F401 - the throwaway PostgreSQL cluster
from tests.telephony.conftest import SECRET
from voxwire.agents import RealtimeAgent
from voxwire.server import RealtimeServer
from voxwire.store.postgres import PostgresStore
from voxwire.telephony.calls_table import CallsTable
from voxwire.telephony.sip import SipCalls
from voxwire.telephony.sip_worker import MAX_ATTACH_FAILURES, SipWorker

AGENT = RealtimeAgent(name="desk", instructions="Answer.")


@asynccontextmanager
async def worker(
    conninfo: str, schema: str, calls: SipCalls, server: RealtimeServer
) -> AsyncIterator[SipWorker]:
    store = await PostgresStore.open(conninfo, schema=schema)
    table = await CallsTable.open(conninfo, schema=schema)
    one = SipWorker(
        AGENT,
        store=store,
        calls_table=table,
        calls=calls,
        secret=SECRET,
        url=server.base_url + "/realtime",
        lease_ttl_s=5,
    )
    try:
        yield one
    finally:
        await one.aclose()
        await table.close()
        await store.close()


def test_one_worker_takes_an_unowned_call_and_the_other_is_refused(
    pg_cluster: str,  # noqa: F811
) -> None:
    async def body() -> None:
        schema = f"w_{uuid.uuid4().hex[:12]}"
        async with (
            ringing() as (trunk, phone, server),
            SipCalls(base_url=trunk.api_base_url) as calls,
        ):
            await calls.accept(phone.call_id, AGENT)
            async with (
                worker(pg_cluster, schema, calls, server) as first,
                worker(pg_cluster, schema, calls, server) as second,
            ):
                await first.store.create(phone.call_id, agent=AGENT.name)
                await first.table.add(phone.call_id)  # its owner died before attaching
                assert await first.scan() == [phone.call_id]
                assert await second.scan() == []  # the lease is the first one's
                assert list(first.owned) == [phone.call_id]
                assert second.owned == {}
                assert phone.call.attached == 1

    asyncio.run(body())


def test_a_call_hung_up_while_unowned_is_marked_ended(pg_cluster: str) -> None:  # noqa: F811
    async def body() -> None:
        schema = f"w_{uuid.uuid4().hex[:12]}"
        async with (
            ringing() as (trunk, phone, server),
            SipCalls(base_url=trunk.api_base_url) as calls,
        ):
            await calls.accept(phone.call_id, AGENT)
            await calls.hangup(phone.call_id)
            async with worker(pg_cluster, schema, calls, server) as one:
                await one.store.create(phone.call_id, agent=AGENT.name)
                await one.table.add(phone.call_id)
                for _ in range(MAX_ATTACH_FAILURES - 1):
                    assert await one.scan() == []
                assert await one.table.active() == [phone.call_id]
                assert await one.scan() == []
                assert await one.table.active() == []

    asyncio.run(body())
