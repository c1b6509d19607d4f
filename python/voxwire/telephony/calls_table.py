"""The live SIP calls of a pool of workers, in PostgreSQL: which calls exist and are not over.

Who *owns* a call is not kept here: that is the lease of its conversation in the store
(:mod:`voxwire.store.lease`; conversation id = call id), fenced and renewed by the session that
holds it. This table only lists the calls a worker may have to take over: a row is added when
a call is accepted, and marked ended when its session ends normally (the call hung up,
transferred or over). A worker that dies leaves its calls active here, with a lease that runs
out (or is freed at once on its host): that is how another worker finds them
(:class:`voxwire.telephony.sip_worker.SipWorker`).

The table lives in the store's schema (``sip_calls``) and is made if missing. One connection per
table object, in autocommit; each statement sets its ``search_path`` (as the store does), so a
transaction-mode pooler in front of the server works.
"""

from __future__ import annotations

import asyncio
import re
from typing import Final

import psycopg
from psycopg import sql

from voxwire.exceptions import ConfigurationError

__all__ = ["CallsTable"]

_SCHEMA_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_CREATE: Final = (
    "CREATE TABLE IF NOT EXISTS sip_calls ("
    " call_id TEXT PRIMARY KEY,"
    " state TEXT NOT NULL DEFAULT 'active',"
    " created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),"
    " ended_at TIMESTAMPTZ)"
)


class CallsTable:
    """The ``sip_calls`` table of one schema (see the module docstring). Open with
    :meth:`open`; close with :meth:`close`."""

    def __init__(self, connection: psycopg.AsyncConnection[tuple[object, ...]], schema: str):
        self._connection = connection
        self._schema = schema
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, conninfo: str = "", *, schema: str = "voxwire") -> CallsTable:
        """Connect (the store's connection string and schema) and make the table if needed."""
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ConfigurationError(f"schema={schema!r}: expected a lower-case SQL identifier")
        connection = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
        # Workers starting together: concurrent CREATE ... IF NOT EXISTS can still collide in
        # PostgreSQL's catalogs, so they make the table one after the other.
        async with connection.transaction():
            await connection.execute("SELECT pg_advisory_xact_lock(hashtext('voxwire.sip_calls'))")
            await connection.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema))
            )
            await connection.execute("SELECT set_config('search_path', %s, true)", (schema,))
            await connection.execute(sql.SQL(_CREATE))
        return cls(connection, schema)

    async def _run(
        self, statement: sql.SQL | sql.Composed, params: tuple[object, ...] = ()
    ) -> list[tuple[object, ...]]:
        async with self._lock, self._connection.transaction():
            await self._connection.execute(
                "SELECT set_config('search_path', %s, true)", (self._schema,)
            )
            cursor = await self._connection.execute(statement, params)
            return await cursor.fetchall() if cursor.description is not None else []

    async def add(self, call_id: str) -> None:
        """A call was accepted: listed as active (again, if it was listed before)."""
        await self._run(
            sql.SQL("INSERT INTO sip_calls (call_id) VALUES (%s) ON CONFLICT (call_id) DO NOTHING"),
            (call_id,),
        )

    async def end(self, call_id: str) -> None:
        """The call is over: no worker takes it over any more."""
        await self._run(
            sql.SQL(
                "UPDATE sip_calls SET state = 'ended', ended_at = clock_timestamp() "
                "WHERE call_id = %s AND state = 'active'"
            ),
            (call_id,),
        )

    async def active(self, *, listed_for_s: float = 0.0) -> list[str]:
        """The calls not over, oldest first; with ``listed_for_s``, only those listed at least
        that long ago (by the database's clock)."""
        rows = await self._run(
            sql.SQL(
                "SELECT call_id FROM sip_calls WHERE state = 'active' "
                "AND created_at <= clock_timestamp() - make_interval(secs => %s) "
                "ORDER BY created_at"
            ),
            (float(listed_for_s),),
        )
        return [str(row[0]) for row in rows]

    async def close(self) -> None:
        await self._connection.close()
