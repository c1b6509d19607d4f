"""The statements that write: one store operation's steps, and the rows of items.

From schema version 3 each item, approval and output row carries a CRC-32 of its content
(:mod:`voxwire.store._rows` checks it at load), and each item a second one of its id and
position (written again whenever the position moves), so a changed byte is caught at load
rather than resumed. ``checked=False`` writes a store opened at an older version.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import msgspec

from voxwire.exceptions import ConfigurationError
from voxwire.store._rows import (
    agent_check,
    keyed_checksum,
    position_check,
    row_checksum,
    text_check,
)
from voxwire.store.ops import (
    DeleteItem,
    DropApproval,
    DropOutput,
    MoveItems,
    PutApproval,
    PutItem,
    PutOutput,
    SetAgent,
    SetUsage,
    StoreOp,
)
from voxwire.store.snapshot import StoredItem

__all__ = ["COUNT_ROWS", "PUT_ITEM", "Step", "item_row", "op_steps"]

_json: Final = msgspec.json.Encoder()

_ITEM_COLUMNS: Final = (
    "conversation_id, item_id, position, type, role, call_id, origin, response_id, wire, "
    "transcripts, truncated_ms, audio"
)
_ITEM_UPDATE: Final = (
    "ON CONFLICT (conversation_id, item_id) DO UPDATE SET position = excluded.position, "
    "type = excluded.type, role = excluded.role, call_id = excluded.call_id, "
    "origin = excluded.origin, response_id = excluded.response_id, wire = excluded.wire, "
    "transcripts = excluded.transcripts, truncated_ms = excluded.truncated_ms, "
    "audio = excluded.audio"
)
_PUT_ITEM_UNCHECKED: Final = (
    f"INSERT INTO items ({_ITEM_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    + _ITEM_UPDATE
)
PUT_ITEM: Final = (
    f"INSERT INTO items ({_ITEM_COLUMNS}, checksum, position_check) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    + _ITEM_UPDATE
    + ", checksum = excluded.checksum, position_check = excluded.position_check"
)


def _put_keyed(table: str, column: str, checked: bool) -> str:
    extra = (", checksum", ", ?", ", checksum = excluded.checksum") if checked else ("", "", "")
    return (
        f"INSERT INTO {table} (conversation_id, call_id, {column}, created_at{extra[0]}) "
        f"VALUES (?, ?, ?, ?{extra[1]}) ON CONFLICT (conversation_id, call_id) "
        f"DO UPDATE SET {column} = excluded.{column}{extra[2]}"
    )


class Step(NamedTuple):
    """One statement of a transaction. ``many``: ``params`` is a list of parameter tuples.
    ``required``: the transaction is rolled back (:class:`StepFoundNothing`) if it touches no
    row."""

    sql: str
    params: Any = ()
    many: bool = False
    required: bool = False


def item_row(conversation_id: str, item: StoredItem, checked: bool = True) -> tuple[Any, ...]:
    if isinstance(item.position, bool) or not isinstance(item.position, int):
        raise TypeError(f"item {item.id!r} has position {item.position!r}, not an integer")
    if not -(2**63) <= item.position < 2**63:
        raise OverflowError(f"item {item.id!r} has position {item.position}, beyond 64 bits")
    wire = _json.encode(item.wire).decode()
    transcripts = _json.encode(item.transcripts).decode()
    truncated = _json.encode(item.truncated_ms).decode()
    audio = msgspec.msgpack.encode(item.audio) if item.audio else None
    row: tuple[Any, ...] = (
        conversation_id,
        item.id,
        item.position,
        item.type,
        item.role,
        item.call_id,
        item.origin,
        item.response_id,
        wire,
        transcripts,
        truncated,
        audio,
    )
    if not checked:
        return row
    content = row_checksum(
        item.id, item.origin, item.response_id, wire, transcripts, truncated, audio
    )
    return (*row, content, position_check(item.id, item.position))


def op_steps(conversation_id: str, op: StoreOp, now: int, checked: bool = True) -> list[Step]:
    """The statements of one operation; :class:`ConfigurationError` for one that cannot be
    stored (a value that is not JSON, an integer beyond 64 bits, not an operation at all)."""
    try:
        return _op_steps(conversation_id, op, now, checked)
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
        raise ConfigurationError(
            f"conversation {conversation_id!r}: {type(op).__name__} cannot be stored ({exc}): "
            "items, calls and outputs must be JSON values (str, int, float, bool, None, lists "
            "and dicts with string keys)"
        ) from None


def _op_steps(conversation_id: str, op: StoreOp, now: int, checked: bool) -> list[Step]:
    cid = conversation_id
    if isinstance(op, PutItem):
        put = Step(PUT_ITEM if checked else _PUT_ITEM_UNCHECKED, item_row(cid, op.item, checked))
        return [*_count(cid, "items", "item_id", op.item.id, +1, checked), put]
    if isinstance(op, DeleteItem):
        sql = "DELETE FROM items WHERE conversation_id = ? AND item_id = ?"
        return [
            *_count(cid, "items", "item_id", op.item_id, -1, checked),
            Step(sql, (cid, op.item_id)),
        ]
    if isinstance(op, MoveItems):
        return _move(cid, op, checked)
    if isinstance(op, SetAgent):
        if checked:
            sql = "UPDATE conversations SET agent = ?, agent_check = ? WHERE id = ?"
            return [Step(sql, (op.name, agent_check(cid, op.name), cid))]
        return [Step("UPDATE conversations SET agent = ? WHERE id = ?", (op.name, cid))]
    if isinstance(op, PutApproval | PutOutput):
        table, column, value = (
            ("approvals", "call", op.call)
            if isinstance(op, PutApproval)
            else ("outputs", "output", op.output)
        )
        text = _json.encode(value).decode()
        params: tuple[Any, ...] = (cid, op.call_id, text, now)
        if checked:
            params += (keyed_checksum(op.call_id, text),)
        count = _count(cid, table, "call_id", op.call_id, +1, checked)
        return [*count, Step(_put_keyed(table, column, checked), params)]
    if isinstance(op, DropApproval | DropOutput):
        table = "approvals" if isinstance(op, DropApproval) else "outputs"
        sql = f"DELETE FROM {table} WHERE conversation_id = ? AND call_id = ?"
        return [
            *_count(cid, table, "call_id", op.call_id, -1, checked),
            Step(sql, (cid, op.call_id)),
        ]
    if isinstance(op, SetUsage):
        usage = _json.encode(op.usage).decode()
        if checked:
            sql = "UPDATE conversations SET usage = ?, usage_check = ? WHERE id = ?"
            return [Step(sql, (usage, text_check(usage), cid))]
        return [Step("UPDATE conversations SET usage = ? WHERE id = ?", (usage, cid))]
    raise TypeError(f"{op!r} is not a store operation (voxwire.store.ops)")


def _count(cid: str, table: str, key: str, value: str, delta: int, checked: bool) -> list[Step]:
    """The step that keeps the conversation's row count right, run before the put (+1, only if
    the row is new) or the drop (-1, only if it exists): one primary-key lookup, whatever the
    conversation's length."""
    if not checked:
        return []
    column = "item_count" if table == "items" else "pending_count"
    exists = "NOT EXISTS" if delta > 0 else "EXISTS"
    sql = (
        f"UPDATE conversations SET {column} = {column} {'+' if delta > 0 else '-'} 1 "
        f"WHERE id = ? AND {exists} (SELECT 1 FROM {table} WHERE conversation_id = ? "
        f"AND {key} = ?)"
    )
    return [Step(sql, (cid, cid, value))]


def _move(cid: str, op: MoveItems, checked: bool) -> list[Step]:
    if not op.positions:
        return []
    if not checked:
        rows = [(position, cid, item_id) for item_id, position in op.positions.items()]
        sql = "UPDATE items SET position = ? WHERE conversation_id = ? AND item_id = ?"
        return [Step(sql, rows, many=True)]
    checked_rows = [
        (position, position_check(item_id, position), cid, item_id)
        for item_id, position in op.positions.items()
    ]
    sql = (
        "UPDATE items SET position = ?, position_check = ? WHERE conversation_id = ? "
        "AND item_id = ?"
    )
    return [Step(sql, checked_rows, many=True)]


#: The row counts a load checks, counted afresh (params: the conversation id four times): after
#: an import; every other write keeps them with one lookup per operation (:func:`_count`).
COUNT_ROWS: Final = Step(
    "UPDATE conversations SET "
    "item_count = (SELECT count(*) FROM items WHERE conversation_id = ?), "
    "pending_count = (SELECT count(*) FROM approvals WHERE conversation_id = ?) "
    "+ (SELECT count(*) FROM outputs WHERE conversation_id = ?) WHERE id = ?"
)
