"""The SIP workers' calls table (voxwire.telephony.calls_table) on a real PostgreSQL cluster:
calls listed active in order, ended once, listed again by nobody; workers that start together
make the table without colliding in PostgreSQL's catalogs."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.store.conftest import pg_cluster  # noqa: F401 - the throwaway PostgreSQL cluster
from voxwire.exceptions import ConfigurationError
from voxwire.telephony.calls_table import CallsTable


def test_calls_are_listed_until_they_end(pg_cluster: str) -> None:  # noqa: F811
    async def body() -> None:
        schema = f"c_{uuid.uuid4().hex[:12]}"
        table, other = await CallsTable.open(pg_cluster, schema=schema), None
        try:
            for call_id in ("rtc_1", "rtc_2", "rtc_3"):
                await table.add(call_id)
            await table.add("rtc_1")  # a webhook delivered twice: listed once
            other = await CallsTable.open(pg_cluster, schema=schema)  # another worker
            assert await other.active() == ["rtc_1", "rtc_2", "rtc_3"]
            await other.end("rtc_2")
            await other.end("rtc_2")
            assert await table.active() == ["rtc_1", "rtc_3"]
        finally:
            await table.close()
            if other is not None:
                await other.close()

    asyncio.run(body())


def test_workers_starting_together_make_the_table_once(pg_cluster: str) -> None:  # noqa: F811
    async def body() -> None:
        for _ in range(8):
            schema = f"c_{uuid.uuid4().hex[:12]}"
            opened = await asyncio.gather(
                *(CallsTable.open(pg_cluster, schema=schema) for _ in range(4))
            )
            await opened[0].add("rtc_1")
            assert [await t.active() for t in opened] == [["rtc_1"]] * 4
            for table in opened:
                await table.close()

    asyncio.run(body())


def test_a_bad_schema_name_is_refused_before_connecting() -> None:
    with pytest.raises(ConfigurationError, match="lower-case SQL identifier"):
        asyncio.run(CallsTable.open("host=/nonexistent", schema="Robert'); DROP"))
