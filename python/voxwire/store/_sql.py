"""What the SQL stores share: the schema and its migrations, the statements of each operation,
the decoding of rows, and every public method written once over a transaction primitive.

A backend provides :meth:`SQLStore._transaction` (run steps in one transaction, in order, and
return each step's row count and rows) and :meth:`SQLStore.close`. Statements are written with
``?`` placeholders; a backend that uses another paramstyle rewrites them once
(:func:`with_paramstyle`).

Schema (docs/persistence.md draws it): ``conversations`` (id, times in microseconds since the
UNIX epoch, agent,
usage JSON), ``items`` (one row per item: position, type, role, call id, origin, response id,
wire JSON, transcripts JSON, truncations JSON, audio as msgpack), ``approvals`` and
``outputs`` (call id -> JSON), and ``schema_version`` (one row: version, the voxwire that wrote
it). JSON is stored as text, not as a JSON column type, so that the wire form reads back
exactly as written on both backends.
"""

from __future__ import annotations

import importlib.metadata
import time
import uuid
from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Final, NamedTuple

import msgspec

from voxwire.exceptions import (
    ConfigurationError,
    ConversationExists,
    ConversationNotFound,
    StoreVersionError,
)
from voxwire.store.base import ConversationInfo, ConversationStore
from voxwire.store.ops import (
    DeleteItem,
    DropApproval,
    DropOutput,
    MoveItems,
    PutApproval,
    PutItem,
    PutOutput,
    SetAgent,
    StoreOp,
)
from voxwire.store.snapshot import SessionSnapshot, StoredItem, UsageTotals

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
)

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
    found: int | None, written_by: str | None, where: str, types: dict[str, str], upto: int
) -> list[tuple[str, tuple[Any, ...]]]:
    """The statements that bring a store at version ``found`` (``None``: a new store) to
    version ``upto``; :class:`StoreVersionError` for a store newer than this release."""
    current = found or 0
    if current > SCHEMA_VERSION:
        raise StoreVersionError(
            f"the store {where} has schema version {current}, written by voxwire {written_by}; "
            f"this voxwire ({voxwire_version()}) knows schema versions up to {SCHEMA_VERSION}. "
            f"Upgrade voxwire to at least {written_by} (pip install -U voxwire), or point this "
            "process at another store"
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


# --- rows ---------------------------------------------------------------------------------------

_json: Final = msgspec.json.Encoder()
_transcripts: Final = msgspec.json.Decoder(dict[int, str])
_truncations: Final = msgspec.json.Decoder(dict[int, int])
_mapping: Final = msgspec.json.Decoder(dict[str, Any])
_any: Final = msgspec.json.Decoder()
_usage: Final = msgspec.json.Decoder(UsageTotals)
_audio: Final = msgspec.msgpack.Decoder(dict[int, bytes])

_ITEM_COLUMNS: Final = (
    "conversation_id, item_id, position, type, role, call_id, origin, response_id, wire, "
    "transcripts, truncated_ms, audio"
)
PUT_ITEM: Final = (
    f"INSERT INTO items ({_ITEM_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (conversation_id, item_id) DO UPDATE SET position = excluded.position, "
    "type = excluded.type, role = excluded.role, call_id = excluded.call_id, "
    "origin = excluded.origin, response_id = excluded.response_id, wire = excluded.wire, "
    "transcripts = excluded.transcripts, truncated_ms = excluded.truncated_ms, "
    "audio = excluded.audio"
)
_PUT_KEYED: Final = (
    "INSERT INTO {table} (conversation_id, call_id, {column}, created_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (conversation_id, call_id) DO UPDATE SET {column} = excluded.{column}"
)
PUT_APPROVAL: Final = _PUT_KEYED.format(table="approvals", column="call")
PUT_OUTPUT: Final = _PUT_KEYED.format(table="outputs", column="output")
_INFO: Final = (
    "SELECT c.id, c.created_at, c.updated_at, c.agent, "
    "(SELECT count(*) FROM items i WHERE i.conversation_id = c.id) FROM conversations c"
)


def item_row(conversation_id: str, item: StoredItem) -> tuple[Any, ...]:
    return (
        conversation_id,
        item.id,
        item.position,
        item.type,
        item.role,
        item.call_id,
        item.origin,
        item.response_id,
        _json.encode(item.wire).decode(),
        _json.encode(item.transcripts).decode(),
        _json.encode(item.truncated_ms).decode(),
        msgspec.msgpack.encode(item.audio) if item.audio else None,
    )


def _stored_item(row: Sequence[Any]) -> StoredItem:
    item_id, position, wire, transcripts, truncated, audio, response_id, origin = row
    return StoredItem(
        id=item_id,
        position=position,
        wire=_mapping.decode(wire),
        transcripts=_transcripts.decode(transcripts),
        truncated_ms=_truncations.decode(truncated),
        audio=_audio.decode(audio) if audio is not None else {},
        response_id=response_id,
        origin=origin,
    )


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _moment(microseconds: int) -> datetime:
    return _EPOCH + timedelta(microseconds=microseconds)


def _microseconds(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _info(row: Sequence[Any]) -> ConversationInfo:
    conversation_id, created, updated, agent, count = row
    return ConversationInfo(
        conversation_id=conversation_id,
        created_at=_moment(created),
        updated_at=_moment(updated),
        agent=agent,
        item_count=int(count),
    )


def op_steps(conversation_id: str, op: StoreOp, now: int) -> list[Step]:
    """The statements of one operation."""
    cid = conversation_id
    if isinstance(op, PutItem):
        return [Step(PUT_ITEM, item_row(cid, op.item))]
    if isinstance(op, DeleteItem):
        return [
            Step("DELETE FROM items WHERE conversation_id = ? AND item_id = ?", (cid, op.item_id))
        ]
    if isinstance(op, MoveItems):
        rows = [(position, cid, item_id) for item_id, position in op.positions.items()]
        sql = "UPDATE items SET position = ? WHERE conversation_id = ? AND item_id = ?"
        return [Step(sql, rows, many=True)] if rows else []
    if isinstance(op, SetAgent):
        return [Step("UPDATE conversations SET agent = ? WHERE id = ?", (op.name, cid))]
    if isinstance(op, PutApproval):
        return [Step(PUT_APPROVAL, (cid, op.call_id, _json.encode(op.call).decode(), now))]
    if isinstance(op, PutOutput):
        return [Step(PUT_OUTPUT, (cid, op.call_id, _json.encode(op.output).decode(), now))]
    if isinstance(op, DropApproval | DropOutput):
        table = "approvals" if isinstance(op, DropApproval) else "outputs"
        sql = f"DELETE FROM {table} WHERE conversation_id = ? AND call_id = ?"
        return [Step(sql, (cid, op.call_id))]
    usage = _json.encode(op.usage).decode()
    return [Step("UPDATE conversations SET usage = ? WHERE id = ?", (usage, cid))]


# --- the shared implementation ------------------------------------------------------------------


class Step(NamedTuple):
    """One statement of a transaction. ``many``: ``params`` is a list of parameter tuples.
    ``required``: the transaction is rolled back (:class:`StepFoundNothing`) if it touches no
    row."""

    sql: str
    params: Any = ()
    many: bool = False
    required: bool = False


class Outcome(NamedTuple):
    rowcount: int
    rows: list[tuple[Any, ...]]


class StepFoundNothing(Exception):
    """A required step touched no row; the transaction was rolled back."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def _check_id(conversation_id: object) -> str:
    if not isinstance(conversation_id, str) or not conversation_id or len(conversation_id) > 256:
        raise ConfigurationError(
            f"conversation_id={conversation_id!r}: expected a non-empty string of at most 256 "
            "characters"
        )
    return conversation_id


class SQLStore(ConversationStore):
    """Every public method over :meth:`_transaction` (see the module docstring)."""

    @abstractmethod
    async def _transaction(self, steps: Sequence[Step], *, write: bool) -> list[Outcome]:
        """Run ``steps`` in one transaction (read-only unless ``write``), in order."""

    async def create(
        self, conversation_id: str | None = None, *, agent: str | None = None
    ) -> ConversationInfo:
        cid = (
            _check_id(conversation_id)
            if conversation_id is not None
            else f"conv_{uuid.uuid4().hex}"
        )
        now = time.time_ns() // 1000
        steps = [
            Step(
                "INSERT INTO conversations (id, created_at, updated_at, agent, usage) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (cid, now, now, agent, _json.encode(UsageTotals()).decode()),
                required=True,
            )
        ]
        try:
            await self._transaction(steps, write=True)
        except StepFoundNothing:
            raise ConversationExists(
                f"conversation {cid!r} is already stored: open it with open_conversation() or "
                "load(), or pick another id"
            ) from None
        return ConversationInfo(
            conversation_id=cid,
            created_at=_moment(now),
            updated_at=_moment(now),
            agent=agent,
            item_count=0,
        )

    async def open_conversation(
        self, conversation_id: str, *, agent: str | None = None
    ) -> ConversationInfo:
        try:
            return await self.create(conversation_id, agent=agent)
        except ConversationExists:
            return await self.info(conversation_id)

    async def info(self, conversation_id: str) -> ConversationInfo:
        cid = _check_id(conversation_id)
        [outcome] = await self._transaction([Step(f"{_INFO} WHERE c.id = ?", (cid,))], write=False)
        if not outcome.rows:
            raise _not_found(cid)
        return _info(outcome.rows[0])

    async def list_conversations(
        self, *, limit: int = 100, updated_before: datetime | None = None
    ) -> list[ConversationInfo]:
        if limit < 1:
            raise ConfigurationError(f"limit={limit}: must be at least 1")
        if updated_before is None:
            step = Step(f"{_INFO} ORDER BY c.updated_at DESC, c.id LIMIT ?", (limit,))
        else:
            step = Step(
                f"{_INFO} WHERE c.updated_at < ? ORDER BY c.updated_at DESC, c.id LIMIT ?",
                (_microseconds(updated_before), limit),
            )
        [outcome] = await self._transaction([step], write=False)
        return [_info(row) for row in outcome.rows]

    async def delete_conversation(self, conversation_id: str) -> bool:
        cid = _check_id(conversation_id)
        steps = [
            Step(f"DELETE FROM {table} WHERE conversation_id = ?", (cid,))
            for table in ("items", "approvals", "outputs")
        ]
        steps.append(Step("DELETE FROM conversations WHERE id = ?", (cid,)))
        outcomes = await self._transaction(steps, write=True)
        return outcomes[-1].rowcount > 0

    async def apply(self, conversation_id: str, ops: Sequence[StoreOp]) -> None:
        cid = _check_id(conversation_id)
        now = time.time_ns() // 1000
        steps = [
            Step("UPDATE conversations SET updated_at = ? WHERE id = ?", (now, cid), required=True)
        ]
        for index, op in enumerate(ops):
            # Pending approvals and outputs load in the order they were put.
            steps += op_steps(cid, op, now + index)
        try:
            await self._transaction(steps, write=True)
        except StepFoundNothing:
            raise _not_found(cid) from None

    async def load(self, conversation_id: str) -> SessionSnapshot:
        cid = _check_id(conversation_id)
        outcomes = await self._transaction(
            [
                Step(
                    "SELECT created_at, updated_at, agent, usage FROM conversations WHERE id = ?",
                    (cid,),
                ),
                Step(
                    "SELECT item_id, position, wire, transcripts, truncated_ms, audio, "
                    "response_id, origin FROM items WHERE conversation_id = ? "
                    "ORDER BY position, item_id",
                    (cid,),
                ),
                Step(
                    "SELECT call_id, call FROM approvals WHERE conversation_id = ? "
                    "ORDER BY created_at, call_id",
                    (cid,),
                ),
                Step(
                    "SELECT call_id, output FROM outputs WHERE conversation_id = ? "
                    "ORDER BY created_at, call_id",
                    (cid,),
                ),
            ],
            write=False,
        )
        conversation, items, approvals, outputs = (outcome.rows for outcome in outcomes)
        if not conversation:
            raise _not_found(cid)
        created, updated, agent, usage = conversation[0]
        return SessionSnapshot(
            conversation_id=cid,
            created_at=_moment(created),
            updated_at=_moment(updated),
            agent=agent,
            items=tuple(_stored_item(row) for row in items),
            approvals={call_id: _mapping.decode(call) for call_id, call in approvals},
            outputs={call_id: _any.decode(output) for call_id, output in outputs},
            usage=_usage.decode(usage),
        )

    async def import_snapshot(self, snapshot: SessionSnapshot, *, replace: bool = False) -> None:
        cid = _check_id(snapshot.conversation_id)
        now = time.time_ns() // 1000
        steps: list[Step] = []
        if replace:
            steps += [
                Step(f"DELETE FROM {table} WHERE conversation_id = ?", (cid,))
                for table in ("items", "approvals", "outputs")
            ]
            steps.append(Step("DELETE FROM conversations WHERE id = ?", (cid,)))
        steps.append(
            Step(
                "INSERT INTO conversations (id, created_at, updated_at, agent, usage) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (
                    cid,
                    _microseconds(snapshot.created_at),
                    _microseconds(snapshot.updated_at),
                    snapshot.agent,
                    _json.encode(snapshot.usage).decode(),
                ),
                required=True,
            )
        )
        if snapshot.items:
            rows = [item_row(cid, item) for item in snapshot.items]
            steps.append(Step(PUT_ITEM, rows, many=True))
        keyed: list[StoreOp] = [
            *(PutApproval(call_id=key, call=call) for key, call in snapshot.approvals.items()),
            *(PutOutput(call_id=key, output=output) for key, output in snapshot.outputs.items()),
        ]
        for index, op in enumerate(keyed):
            steps += op_steps(cid, op, now + index)
        try:
            await self._transaction(steps, write=True)
        except StepFoundNothing:
            raise ConversationExists(
                f"conversation {cid!r} is already stored: pass replace=True to overwrite it"
            ) from None


def _not_found(conversation_id: str) -> ConversationNotFound:
    return ConversationNotFound(
        f"no conversation {conversation_id!r} in this store: create it first "
        "(create() / open_conversation()), or check the id (list_conversations())"
    )
