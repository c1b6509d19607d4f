"""The embedded store: one SQLite file (stdlib ``sqlite3``), the default.

* WAL journal: readers never wait for the writer, and a committed transaction survives a crash
  of the process (``synchronous=NORMAL``, the default here; ``FULL`` also survives a power cut
  at the price of an fsync per transaction — benches/RESULTS.md has both figures).
* Many processes on one file: every write transaction starts with ``BEGIN IMMEDIATE`` (it takes
  the write lock at once, so two writers never deadlock upgrading a read lock) and waits up to
  ``busy_timeout_s`` for another process's transaction; transactions are one ``apply`` long.
* Never blocks the event loop: each store owns one thread and one connection, and every call
  runs there (``loop.run_in_executor`` on a one-thread executor). One connection per store keeps
  SQLite's cache warm and needs no connection locking; calls of many sessions sharing the store
  queue in that thread in arrival order. Measured against ``asyncio.to_thread`` with one
  connection shared under a lock (benches/RESULTS.md): 116 µs vs 186 µs per call from the
  loop, and to_thread would also compete with everything else on the default pool.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final, Literal

from voxwire.exceptions import ConfigurationError, StoreError
from voxwire.store._sql import (
    SCHEMA_TABLE,
    SCHEMA_VERSION,
    Outcome,
    SQLStore,
    Step,
    StepFoundNothing,
    migration_statements,
)

__all__ = ["SQLiteStore"]

_TYPES: Final = {"bigint": "INTEGER", "blob": "BLOB"}


class SQLiteStore(SQLStore):
    """Conversations in one SQLite file. Open with :meth:`open` (creates and migrates the file)."""

    def __init__(self, path: Path, executor: ThreadPoolExecutor, connection: sqlite3.Connection):
        # Built by open(): the connection lives in the executor's one thread.
        self._path = path
        self._executor = executor
        self._connection: sqlite3.Connection | None = connection

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        busy_timeout_s: float = 30.0,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        schema_version: int = SCHEMA_VERSION,
    ) -> SQLiteStore:
        """Open (or create) the store at ``path`` and bring its schema to the current version.

        ``schema_version`` stops the migrations at an older version (tests of the migrations
        use it); a store newer than this release raises
        :class:`~voxwire.exceptions.StoreVersionError`.
        """
        if synchronous not in ("NORMAL", "FULL"):
            raise ConfigurationError(f"synchronous={synchronous!r}: expected 'NORMAL' or 'FULL'")
        if not 0 <= schema_version <= SCHEMA_VERSION:
            raise ConfigurationError(
                f"schema_version={schema_version}: expected 0..{SCHEMA_VERSION}"
            )
        file = Path(path)
        executor = ThreadPoolExecutor(1, thread_name_prefix="voxwire-sqlite")
        loop = asyncio.get_running_loop()
        try:
            connection = await loop.run_in_executor(
                executor, _connect, file, busy_timeout_s, synchronous, schema_version
            )
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(file, executor, connection)

    @property
    def path(self) -> Path:
        return self._path

    async def _transaction(self, steps: Sequence[Step], *, write: bool) -> list[Outcome]:
        connection = self._connection
        if connection is None:
            raise StoreError(f"the store {self._path} is closed: open it again")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, _run, connection, steps, write)
        except sqlite3.Error as exc:
            raise StoreError(f"the SQLite store {self._path} failed: {exc}") from exc

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, connection.close)
        self._executor.shutdown(wait=True)


def _connect(
    path: Path, busy_timeout_s: float, synchronous: str, schema_version: int
) -> sqlite3.Connection:
    """Open the file, set it up and migrate it (in the store's thread)."""
    try:
        connection = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the SQLite store {path}: {exc}") from exc
    try:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute(f"PRAGMA synchronous = {synchronous}")
        connection.execute("PRAGMA foreign_keys = ON")
        _migrate(connection, path, schema_version)
    except BaseException:
        connection.close()
        raise
    return connection


def _migrate(connection: sqlite3.Connection, path: Path, upto: int) -> None:
    connection.execute("BEGIN IMMEDIATE")  # one process migrates; the others wait, then see it
    try:
        connection.execute(SCHEMA_TABLE)
        row = connection.execute("SELECT version, written_by FROM schema_version").fetchone()
        found, written_by = (row[0], row[1]) if row is not None else (None, None)
        steps = migration_statements(found, written_by, str(path), _TYPES, max(upto, found or 0))
        for sql, params in steps:
            connection.execute(sql, params)
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def _run(connection: sqlite3.Connection, steps: Sequence[Step], write: bool) -> list[Outcome]:
    connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        outcomes = []
        for index, step in enumerate(steps):
            if step.many:
                cursor = connection.executemany(step.sql, step.params)
            else:
                cursor = connection.execute(step.sql, step.params)
            rows = cursor.fetchall()
            if step.required and cursor.rowcount == 0:
                raise StepFoundNothing(index)
            outcomes.append(Outcome(cursor.rowcount, rows))
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return outcomes
