"""The schema of the SQL stores and its migrations (docs/persistence.md draws it).

``{bigint}`` and ``{blob}`` in a statement are the backend's type names.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any, Final

from voxwire.exceptions import StoreSchemaError, StoreVersionError
from voxwire.store._faults import subject

__all__ = [
    "MIGRATIONS",
    "SCHEMA_TABLE",
    "SCHEMA_VERSION",
    "TABLES",
    "migration_statements",
    "voxwire_version",
    "with_paramstyle",
]

# --- schema -------------------------------------------------------------------------------------

#: The migrations, in order: migration ``n`` (1-based) brings a store from version ``n - 1`` to
#: ``n``. ``{bigint}`` and ``{blob}`` are the backend's type names. Append only:
#: a released migration never changes.
MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    (
        """CREATE TABLE conversations (
            id TEXT PRIMARY KEY,
            created_at {bigint} NOT NULL,
            updated_at {bigint} NOT NULL,
            agent TEXT,
            usage TEXT NOT NULL)""",
        """CREATE TABLE items (
            conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
            item_id TEXT NOT NULL,
            position {bigint} NOT NULL,
            type TEXT NOT NULL,
            role TEXT,
            call_id TEXT,
            origin TEXT NOT NULL,
            response_id TEXT,
            wire TEXT NOT NULL,
            transcripts TEXT NOT NULL,
            truncated_ms TEXT NOT NULL,
            audio {blob},
            PRIMARY KEY (conversation_id, item_id))""",
        "CREATE INDEX items_in_order ON items (conversation_id, position)",
        """CREATE TABLE approvals (
            conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
            call_id TEXT NOT NULL,
            call TEXT NOT NULL,
            created_at {bigint} NOT NULL,
            PRIMARY KEY (conversation_id, call_id))""",
        """CREATE TABLE outputs (
            conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
            call_id TEXT NOT NULL,
            output TEXT NOT NULL,
            created_at {bigint} NOT NULL,
            PRIMARY KEY (conversation_id, call_id))""",
    ),
    (
        # list_conversations pages by updated_at; a call's items are looked up by call id.
        "CREATE INDEX conversations_by_update ON conversations (updated_at, id)",
        "CREATE INDEX items_by_call ON items (conversation_id, call_id)",
    ),
    (
        # The item count a load checks, the conversation's lease (voxwire.store.lease) …
        "ALTER TABLE conversations ADD COLUMN item_count {bigint}",
        "ALTER TABLE conversations ADD COLUMN lease_holder TEXT",
        "ALTER TABLE conversations ADD COLUMN lease_token {bigint} NOT NULL DEFAULT 0",
        "ALTER TABLE conversations ADD COLUMN lease_expires {bigint} NOT NULL DEFAULT 0",
        # CRC-32 of each row's content (voxwire.store._rows); NULL in rows written before.
        "ALTER TABLE items ADD COLUMN checksum {bigint}",
        "ALTER TABLE items ADD COLUMN position_check {bigint}",
        "ALTER TABLE approvals ADD COLUMN checksum {bigint}",
        "ALTER TABLE outputs ADD COLUMN checksum {bigint}",
        "ALTER TABLE conversations ADD COLUMN pending_count {bigint}",
        "ALTER TABLE conversations ADD COLUMN agent_check {bigint}",
        "ALTER TABLE conversations ADD COLUMN usage_check {bigint}",
        "UPDATE conversations SET pending_count = "
        "(SELECT count(*) FROM approvals a WHERE a.conversation_id = conversations.id) + "
        "(SELECT count(*) FROM outputs o WHERE o.conversation_id = conversations.id)",
        "UPDATE conversations SET item_count = "
        "(SELECT count(*) FROM items WHERE items.conversation_id = conversations.id)",
    ),
)

#: The tables of the schema (a store that has some but not all of them is damaged).
TABLES: Final = ("conversations", "items", "approvals", "outputs")

#: The schema version this release writes (and the newest it can open).
SCHEMA_VERSION: Final = len(MIGRATIONS)

SCHEMA_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, written_by TEXT NOT NULL)"
)


def voxwire_version() -> str:
    try:
        return importlib.metadata.version("voxwire")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def migration_statements(
    found: int | None,
    written_by: str | None,
    where: str,
    types: dict[str, str],
    upto: int,
    tables: set[str],
) -> list[tuple[str, tuple[Any, ...]]]:
    """The statements that bring a store at version ``found`` (``None``: a new store) to
    version ``upto``; :class:`StoreVersionError` for a store newer than this release,
    :class:`StoreSchemaError` when ``tables`` (those that exist) do not fit ``found``."""
    if found is None and tables & set(TABLES):
        raise StoreSchemaError(
            f"{subject(where, None)}: voxwire's tables are there but the schema_version row "
            "that says which version they are is missing (the store was damaged or edited): "
            "restore it from a backup; if you know the version that wrote it, put the row back "
            f"(INSERT INTO schema_version VALUES ({SCHEMA_VERSION}, 'restored'))",
            store=where,
        )
    if found is not None and not isinstance(found, int):
        raise StoreSchemaError(
            f"{subject(where, None)}: the schema_version row holds {found!r}, not a version "
            "number (the store was damaged or edited): restore it from a backup",
            store=where,
        )
    missing = [table for table in TABLES if table not in tables]
    if found is not None and missing:
        raise StoreSchemaError(
            f"{subject(where, None)}: schema version {found} but the table(s) "
            f"{', '.join(missing)} are missing (the store was damaged or edited): restore it "
            "from a backup, or point this process at another store",
            store=where,
        )
    current = found or 0
    if current > SCHEMA_VERSION:
        raise StoreVersionError(
            f"the store {where} has schema version {current}, written by voxwire {written_by}; "
            f"this voxwire ({voxwire_version()}) knows schema versions up to {SCHEMA_VERSION}. "
            f"Upgrade voxwire to at least {written_by} (pip install -U voxwire), or point this "
            "process at another store",
            store=where,
        )
    steps: list[tuple[str, tuple[Any, ...]]] = [
        (sql.format(**types), ()) for migration in MIGRATIONS[current:upto] for sql in migration
    ]
    if steps or found is None:
        if found is None:
            steps.append(("INSERT INTO schema_version VALUES (?, ?)", (upto, voxwire_version())))
        else:
            steps.append(
                ("UPDATE schema_version SET version = ?, written_by = ?", (upto, voxwire_version()))
            )
    return steps


def with_paramstyle(sql: str, placeholder: str) -> str:
    return sql.replace("?", placeholder)
