"""The shared store: PostgreSQL through psycopg 3 (``pip install "voxwire[postgres]"``).

For deployments that outgrow one machine: many agent processes, on many hosts, behind a load
balancer, all writing to one database. Each :class:`PostgresStore` holds a small async
connection pool (psycopg_pool); every method is one short transaction on one pooled
connection, so the sessions of one process share a few connections.

* Tables live in their own schema (``voxwire`` unless told), selected per transaction with
  ``SET LOCAL search_path`` — no session state is kept on a connection, so a transaction-mode
  pooler (PgBouncer) in front of the server works.
* Migrations run under a transaction-scoped advisory lock: the processes that start together
  migrate once, one after the other.
* Reads (``load``, ``list_conversations``) run in a ``REPEATABLE READ READ ONLY`` transaction,
  so a conversation loads as one consistent picture while other processes write.

Why psycopg 3 rather than asyncpg: it is the maintained successor of psycopg2 (the PostgreSQL
driver most deployments already trust), ships binary wheels with libpq, is fully typed, has a
maintained pool, and honours libpq's connection strings, service files and environment
(``PGHOST``, ``PGPASSFILE`` …) that operators use. asyncpg is faster on large result sets, which
a conversation store does not have (benches/RESULTS.md: the store's cost is round trips).

Failures become the store's own errors by their SQLSTATE (:mod:`voxwire.store._faults`): disk
full, read-only (a standby, a role without rights), damaged data, missing tables. Leases use the
server's clock (``clock_timestamp()``) and its row locks: an acquisition and a write of the
same conversation both update its row, so one waits for the other and then sees its outcome.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import Any, Final

import psycopg
from psycopg import conninfo as pg_conninfo
from psycopg_pool import AsyncConnectionPool

from voxwire.exceptions import ConfigurationError, StoreError
from voxwire.store._faults import postgres_error, subject
from voxwire.store._sql import (
    SCHEMA_TABLE,
    SCHEMA_VERSION,
    TABLES,
    Outcome,
    SQLStore,
    Step,
    StepFoundNothing,
    migration_statements,
    with_paramstyle,
)

__all__ = ["PostgresStore"]

_TYPES: Final = {"bigint": "BIGINT", "blob": "BYTEA"}
_SCHEMA_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_SEARCH_PATH: Final = "SELECT set_config('search_path', %s, true)"


class PostgresStore(SQLStore):
    """Conversations in a PostgreSQL database. Open with :meth:`open`."""

    _NOW = "(extract(epoch from clock_timestamp()) * 1000000)::bigint"

    def __init__(self, pool: AsyncConnectionPool, schema: str, where: str) -> None:
        # Built by open().
        self._pool = pool
        self._schema = schema
        self._where = where
        self._version = SCHEMA_VERSION
        self._closed = False

    @classmethod
    async def open(
        cls,
        conninfo: str = "",
        *,
        schema: str = "voxwire",
        min_connections: int = 1,
        max_connections: int = 4,
        timeout_s: float = 30.0,
        schema_version: int = SCHEMA_VERSION,
    ) -> PostgresStore:
        """Connect (a libpq connection string or URL; ``""`` uses the ``PG*`` environment), make
        the schema if needed and bring it to the current version.

        ``max_connections`` bounds the connections this store opens; ``timeout_s`` how long a
        call waits for one. ``schema_version`` stops the migrations at an older version (tests
        of the migrations use it).
        """
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ConfigurationError(
                f"schema={schema!r}: expected a lower-case SQL identifier ([a-z_][a-z0-9_]*, at "
                "most 63 characters)"
            )
        if not 1 <= min_connections <= max_connections:
            raise ConfigurationError(
                f"min_connections={min_connections}, max_connections={max_connections}: expected "
                "1 <= min_connections <= max_connections"
            )
        if not 0 <= schema_version <= SCHEMA_VERSION:
            raise ConfigurationError(
                f"schema_version={schema_version}: expected 0..{SCHEMA_VERSION}"
            )
        where = _describe(conninfo, schema)
        pool: AsyncConnectionPool = AsyncConnectionPool(
            conninfo,
            kwargs={"autocommit": True},
            min_size=min_connections,
            max_size=max_connections,
            timeout=timeout_s,
            open=False,
            name="voxwire-store",
        )
        try:
            await pool.open(wait=True, timeout=timeout_s)
            store = cls(pool, schema, where)
            await store._migrate(schema_version)
        except BaseException as exc:
            await pool.close()
            if isinstance(exc, psycopg.Error):  # PoolTimeout included
                raise postgres_error(exc, exc.sqlstate, where, None, "open it") from exc
            raise
        return store

    async def _migrate(self, upto: int) -> None:
        async with self._pool.connection() as conn:
            await conn.execute("BEGIN")
            try:
                await conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"voxwire.store:{self._schema}",)
                )
                await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self._schema}"')
                await conn.execute(_SEARCH_PATH, (self._schema,))
                await conn.execute(SCHEMA_TABLE)
                cursor = await conn.execute("SELECT version, written_by FROM schema_version")
                row = await cursor.fetchone()
                found, written_by = (row[0], row[1]) if row is not None else (None, None)
                cursor = await conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
                    "AND table_name = ANY(%s)",
                    (self._schema, list(TABLES)),
                )
                tables = {name for (name,) in await cursor.fetchall()}
                self._version = max(upto, found or 0)
                steps = migration_statements(
                    found, written_by, self._where, _TYPES, self._version, tables
                )
                for sql, params in steps:
                    await conn.execute(with_paramstyle(sql, "%s"), params)
                await conn.execute("COMMIT")
            except BaseException:
                await _rollback(conn)
                raise

    async def _transaction(
        self,
        steps: Sequence[Step],
        *,
        write: bool,
        conversation_id: str | None = None,
        doing: str = "read",
    ) -> list[Outcome]:
        if self._closed:
            raise StoreError(
                f"{subject(self._where, conversation_id)}: the store is closed: open it again",
                store=self._where,
                conversation_id=conversation_id,
            )
        try:
            async with self._pool.connection() as conn:
                return await _run(conn, self._schema, steps, write)
        except psycopg.Error as exc:
            raise postgres_error(exc, exc.sqlstate, self._where, conversation_id, doing) from exc

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._pool.close()


async def _run(
    conn: psycopg.AsyncConnection[Any], schema: str, steps: Sequence[Step], write: bool
) -> list[Outcome]:
    await conn.execute("BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        await conn.execute(_SEARCH_PATH, (schema,))
        outcomes = []
        async with conn.cursor() as cursor:
            for index, step in enumerate(steps):
                sql = with_paramstyle(step.sql, "%s")
                if step.many:
                    await cursor.executemany(sql, step.params)
                else:
                    await cursor.execute(sql, step.params)
                rows = await cursor.fetchall() if cursor.description is not None else []
                if step.required and cursor.rowcount == 0:
                    raise StepFoundNothing(index)
                outcomes.append(Outcome(cursor.rowcount, rows))
        await conn.execute("COMMIT")
    except BaseException:
        await _rollback(conn)
        raise
    return outcomes


async def _rollback(conn: psycopg.AsyncConnection[Any]) -> None:
    if not conn.closed:
        # A failure here means the connection is broken; the pool discards it.
        with contextlib.suppress(psycopg.Error):
            await conn.execute("ROLLBACK")


def _describe(conninfo: str, schema: str) -> str:
    """Where the store is, for messages: host, port, database and schema — never a password."""
    try:
        params = pg_conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError as exc:
        raise ConfigurationError(f"invalid PostgreSQL connection string: {exc}") from None
    host = params.get("host") or "(PGHOST or the default socket)"
    port = params.get("port") or "5432"
    dbname = params.get("dbname") or "(PGDATABASE or the user's database)"
    return f"postgresql {host}:{port}/{dbname} schema {schema}"
