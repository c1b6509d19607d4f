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
* Failures are the store's own errors (:mod:`voxwire.store._faults`): a file that is not a
  database or is damaged, a read-only file or directory, a full disk. After a failed statement
  the transaction is rolled back only if SQLite has not already done so itself (it has, after
  a full disk), so the error reported is the real one.
* Leases use SQLite's clock (``julianday('now')``, millisecond precision): the machine's, which
  is the only one that can reach the file.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final, Literal

from voxwire.exceptions import ConfigurationError, StoreCorrupt, StoreError
from voxwire.store._faults import sqlite_error, subject
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
_HEADER_BYTES: Final = 100  # https://www.sqlite.org/fileformat.html#the_database_header


class SQLiteStore(SQLStore):
    """Conversations in one SQLite file. Open with :meth:`open` (creates and migrates the file)."""

    _NOW = "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)"

    def __init__(
        self,
        path: Path,
        executor: ThreadPoolExecutor,
        connection: sqlite3.Connection,
        version: int = SCHEMA_VERSION,
    ):
        # Built by open(): the connection lives in the executor's one thread.
        self._path = path
        self._where = str(path)
        self._version = version
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
        :class:`~voxwire.exceptions.StoreVersionError`, a file that is not a store
        :class:`~voxwire.exceptions.StoreCorrupt`, a store missing tables
        :class:`~voxwire.exceptions.StoreSchemaError`, a file that cannot be written
        :class:`~voxwire.exceptions.StoreReadOnly`.
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
            connection, version = await loop.run_in_executor(
                executor, _connect, file, busy_timeout_s, synchronous, schema_version
            )
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(file, executor, connection, version)

    @property
    def path(self) -> Path:
        return self._path

    async def _transaction(
        self,
        steps: Sequence[Step],
        *,
        write: bool,
        conversation_id: str | None = None,
        doing: str = "read",
    ) -> list[Outcome]:
        connection = self._connection
        if connection is None:
            raise StoreError(
                f"{subject(self._where, conversation_id)}: the store is closed: open it again",
                store=self._where,
                conversation_id=conversation_id,
            )
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, _run, connection, steps, write)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise sqlite_error(exc, self._where, conversation_id, doing) from exc
        except OverflowError as exc:  # a Python int beyond SQLite's 64-bit INTEGER
            raise ConfigurationError(
                f"{subject(self._where, conversation_id)}: cannot {doing}: a value does not "
                f"fit in a 64-bit integer ({exc}); positions, times and counts must"
            ) from None

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        loop = asyncio.get_running_loop()
        with contextlib.suppress(sqlite3.Error):  # closing a damaged file can fail; it is closed
            await loop.run_in_executor(self._executor, connection.close)
        self._executor.shutdown(wait=True)


def _connect(
    path: Path, busy_timeout_s: float, synchronous: str, schema_version: int
) -> tuple[sqlite3.Connection, int]:
    """Open the file, set it up and migrate it (in the store's thread); the connection and the
    schema version it is at."""
    size = path.stat().st_size if path.is_file() else 0
    if 0 < size < _HEADER_BYTES:  # SQLite would take it for an empty database and overwrite it
        raise StoreCorrupt(
            f"the store {path}: cannot open it: the file has {size} bytes, fewer than a SQLite "
            "database's header: it is cut short or not a store; restore it from a backup, or "
            "move it away to start an empty store",
            store=str(path),
        )
    try:
        connection = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None)
    except sqlite3.Error as exc:
        raise sqlite_error(exc, str(path), None, "open it") from exc
    try:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute(f"PRAGMA synchronous = {synchronous}")
        connection.execute("PRAGMA foreign_keys = ON")
        version = _migrate(connection, path, schema_version)
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        connection.close()
        raise sqlite_error(exc, str(path), None, "open it") from exc
    except BaseException:
        connection.close()
        raise
    return connection, version


def _migrate(connection: sqlite3.Connection, path: Path, upto: int) -> int:
    connection.execute("BEGIN IMMEDIATE")  # one process migrates; the others wait, then see it
    try:
        connection.execute(SCHEMA_TABLE)
        row = connection.execute("SELECT version, written_by FROM schema_version").fetchone()
        found, written_by = (row[0], row[1]) if row is not None else (None, None)
        tables = {
            name
            for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        # A damaged row may hold text: migration_statements says so (StoreSchemaError).
        version = max(upto, found) if isinstance(found, int) else upto
        steps = migration_statements(found, written_by, str(path), _TYPES, version, tables)
        for sql, params in steps:
            connection.execute(sql, params)
        connection.execute("COMMIT")
    except BaseException:
        _rollback(connection)
        raise
    return version


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
        _rollback(connection)
        raise
    return outcomes


def _rollback(connection: sqlite3.Connection) -> None:
    """Roll back what is left of a failed transaction. SQLite has already rolled back by itself
    after some errors (a full disk, an I/O error): a second ROLLBACK would fail with "no
    transaction is active" and hide the real error, so it is only sent while one is open."""
    if connection.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")
