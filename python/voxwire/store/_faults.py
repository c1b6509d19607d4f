"""Driver failures turned into the store's own errors: which :class:`StoreError` subclass, and a
message that names the store, the conversation, what is wrong and what to do.

Only the backends import a driver; this module classifies by what the driver reports — SQLite's
result code (``sqlite3.Error.sqlite_errorcode``, Python 3.11+) or PostgreSQL's SQLSTATE — so it
imports neither.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from voxwire.exceptions import (
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreReadOnly,
    StoreSchemaError,
)

__all__ = ["postgres_error", "sqlite_error", "subject"]

# SQLite primary result codes (https://www.sqlite.org/rescode.html).
_SQLITE_ERROR: Final = 1
_SQLITE_BUSY: Final = 5
_SQLITE_LOCKED: Final = 6
_SQLITE_READONLY: Final = 8
_SQLITE_IOERR: Final = 10
_SQLITE_CORRUPT: Final = 11
_SQLITE_FULL: Final = 13
_SQLITE_CANTOPEN: Final = 14
_SQLITE_NOTADB: Final = 26

_RESTORE: Final = (
    "restore it from a backup, or move it away and start an empty store (the damaged file can "
    "be examined with the sqlite3 shell's .recover)"
)


def subject(where: str, conversation_id: str | None) -> str:
    """``the store X`` or ``the store X, conversation 'c'``: how every message starts."""
    if conversation_id is None:
        return f"the store {where}"
    return f"the store {where}, conversation {conversation_id!r}"


def sqlite_error(exc: Exception, where: str, conversation_id: str | None, doing: str) -> StoreError:
    """The store error for a failure of SQLite while ``doing`` (``"open"``, ``"write"`` …)."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc)
    head = f"{subject(where, conversation_id)}: cannot {doing}"
    kind: type[StoreError] = StoreError
    if primary == _SQLITE_NOTADB:
        kind, what = StoreCorrupt, f"the file is not a SQLite database ({text}); {_RESTORE}"
    elif primary == _SQLITE_CORRUPT:
        kind, what = StoreCorrupt, f"the file is damaged ({text}); {_RESTORE}"
    elif primary == _SQLITE_FULL or "disk is full" in text or "No space" in text:
        kind, what = (
            StoreFull,
            f"the disk is full ({text}); nothing of this write was stored: free space on the "
            "file system holding the store (and its -wal file), then go on",
        )
    elif primary == _SQLITE_READONLY or (primary == _SQLITE_CANTOPEN and _read_only(where)):
        kind, what = (
            StoreReadOnly,
            f"it is read-only ({text}): SQLite writes the file and the -wal and -shm files beside "
            "it, so the process needs write permission on the file and its directory, on a "
            "file system mounted read-write",
        )
    elif primary == _SQLITE_CANTOPEN:
        what = (
            f"the file cannot be opened ({text}): check that its directory exists and that this "
            "process may read and write there"
        )
    elif primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
        what = (
            f"another process held the write lock too long ({text}): raise busy_timeout_s, or "
            "look for a process that keeps a transaction open on this file"
        )
    elif "Could not decode to UTF-8" in text:  # a changed byte in a text column
        kind, what = StoreCorrupt, f"a row is damaged ({text[:200]}); {_RESTORE}"
    elif "unsupported file format" in text:  # a header field changed (or a far newer SQLite)
        kind, what = (
            StoreCorrupt,
            f"the file is damaged or not a format this SQLite reads ({text}); {_RESTORE}",
        )
    elif isinstance(exc, UnicodeDecodeError):  # raised by the driver reading a damaged row
        kind, what = StoreCorrupt, f"a row is damaged (text that is not UTF-8: {exc}); {_RESTORE}"
    elif primary == _SQLITE_ERROR and ("no such table" in text or "no such column" in text):
        kind, what = StoreSchemaError, f"a table is missing or incomplete ({text}); {_RESTORE}"
    elif primary == _SQLITE_IOERR:
        what = f"the disk reported an I/O error ({text}); check the device and its free space"
    else:
        what = f"SQLite failed ({type(exc).__name__}: {text})"
    return kind(f"{head}: {what}", store=where, conversation_id=conversation_id)


def _read_only(path: str) -> bool:
    """Whether the store's file, or the directory that must hold its -wal and -shm files, cannot
    be written (a read-only mount says so even to root)."""
    file = Path(path)
    directory = file.parent
    return (directory.is_dir() and not os.access(directory, os.W_OK)) or (
        file.exists() and not os.access(file, os.W_OK)
    )


# PostgreSQL SQLSTATE classes and codes (https://www.postgresql.org/docs/current/errcodes-appendix.html).
_PG_FULL: Final = ("53100", "53200", "53400")  # disk_full, out_of_memory, configuration_limit
_PG_READ_ONLY: Final = ("25006", "42501")  # read_only_sql_transaction, insufficient_privilege
_PG_CORRUPT: Final = ("XX001", "XX002")  # data_corrupted, index_corrupted
_PG_SCHEMA: Final = ("42P01", "42703", "3F000")  # undefined table / column / schema


def postgres_error(
    exc: Exception, sqlstate: str | None, where: str, conversation_id: str | None, doing: str
) -> StoreError:
    """The store error for a failure of PostgreSQL (``sqlstate``: the error's SQLSTATE, ``None``
    for a failure without one: a lost connection, a pool timeout)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    head = f"{subject(where, conversation_id)}: cannot {doing}"
    kind: type[StoreError] = StoreError
    if sqlstate in _PG_FULL:
        kind, what = (
            StoreFull,
            f"the database is out of space ({text}); nothing of this write was stored: free "
            "space on the server, then go on",
        )
    elif sqlstate in _PG_READ_ONLY:
        kind, what = (
            StoreReadOnly,
            f"the database refuses writes ({text}): connect to the primary, not a standby, "
            "with a role that may write the store's schema",
        )
    elif sqlstate in _PG_CORRUPT:
        kind, what = StoreCorrupt, f"the server reports damaged data ({text})"
    elif sqlstate in _PG_SCHEMA:
        kind, what = (
            StoreSchemaError,
            f"voxwire's tables are missing or incomplete ({text}): the schema was dropped or "
            "edited; restore it from a backup or point the store at another schema",
        )
    elif sqlstate is None:
        what = f"the server cannot be reached or the pool has no free connection ({text})"
    else:
        what = f"PostgreSQL failed ({sqlstate}: {text})"
    return kind(f"{head}: {what}", store=where, conversation_id=conversation_id)
