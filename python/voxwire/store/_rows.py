"""Rows back into a :class:`~voxwire.store.SessionSnapshot`, checked: what the SQL stores read is
decoded and validated before anything is resumed from it.

A damaged store must fail loudly rather than resume a different conversation, so a load checks,
besides every column's type and encoding:

* the conversation's item count (kept by every write) equals the items found — a deleted or an
  added row is caught even when what is left looks like a conversation;
* item ids are unique, each equal to its wire ``id``, and positions are unique (items are read
  in position order, so two items at one position would have no defined order);
* every item's wire form has a ``type``; function calls have distinct ``call_id``; an output
  whose call is in the conversation comes after it;
* a pending approval is keyed by its call's ``call_id``.

Any failure is a :class:`~voxwire.exceptions.StoreCorrupt` naming the row and the check.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Final, get_args

import msgspec

from voxwire.exceptions import StoreCorrupt
from voxwire.store._faults import subject
from voxwire.store.base import ConversationInfo
from voxwire.store.snapshot import Origin, SessionSnapshot, StoredItem, UsageTotals

__all__ = [
    "agent_check",
    "info_from_row",
    "keyed_checksum",
    "moment",
    "position_check",
    "row_checksum",
    "snapshot_from_rows",
    "text_check",
]

_transcripts: Final = msgspec.json.Decoder(dict[int, str])
_truncations: Final = msgspec.json.Decoder(dict[int, int])
_mapping: Final = msgspec.json.Decoder(dict[str, Any])
_any: Final = msgspec.json.Decoder()
_usage: Final = msgspec.json.Decoder(UsageTotals)
_audio: Final = msgspec.msgpack.Decoder(dict[int, bytes])
_ORIGINS: Final = frozenset(get_args(Origin))
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MAX_MICROSECONDS: Final = 253_402_300_799_000_000  # 9999-12-31T23:59:59Z
_DECODE_ERRORS: Final = (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError)


def row_checksum(
    item_id: str,
    origin: str,
    response_id: str | None,
    wire: str,
    transcripts: str,
    truncated: str,
    audio: bytes | None,
) -> int:
    """CRC-32 of an item row's content as stored (its position has its own,
    :func:`position_check`, because renumbering rewrites positions alone)."""
    text = "\x00".join((item_id, origin, response_id or "", wire, transcripts, truncated))
    return zlib.crc32(audio or b"", zlib.crc32(text.encode()))


def position_check(item_id: str, position: int) -> int:
    return zlib.crc32(f"{item_id}\x00{position}".encode())


def text_check(text: str | None) -> int:
    """CRC-32 of a conversation's agent or usage column (``None``: no agent)."""
    return zlib.crc32(b"\xff" if text is None else text.encode())


def agent_check(conversation_id: str, agent: str | None) -> int:
    """CRC-32 of a conversation's id and agent: a changed byte in either is caught (a changed
    id would otherwise list, and load, as another, empty conversation)."""
    return zlib.crc32(
        b"\xff" if agent is None else agent.encode(), zlib.crc32(conversation_id.encode())
    )


def keyed_checksum(call_id: str, payload: str) -> int:
    """CRC-32 of a pending approval's or output's row."""
    return zlib.crc32(f"{call_id}\x00{payload}".encode())


class _Damage(Exception):
    """One failed check (turned into :class:`StoreCorrupt` with the store's name)."""


def moment(microseconds: int) -> datetime:
    return _EPOCH + timedelta(microseconds=microseconds)


def _time(value: object, what: str) -> datetime:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Damage(f"{what} is {value!r}, not a time in microseconds")
    if not 0 <= value <= _MAX_MICROSECONDS:
        raise _Damage(f"{what} is {value}, outside years 1970..9999")
    return moment(value)


def _text(value: object, what: str, *, optional: bool = False) -> Any:
    if (value is None and optional) or (isinstance(value, str) and value):
        return value
    raise _Damage(f"{what} is {value!r}, not a {'string or NULL' if optional else 'string'}")


def _decode(decoder: Any, value: object, what: str, item_id: object = None) -> Any:
    """``value`` decoded; ``what`` names it in the error (``{}``: the item id, formatted only
    then — loads decode thousands of columns)."""
    try:
        return decoder.decode(value)
    except _DECODE_ERRORS as exc:  # (a value that is not str/bytes is a TypeError)
        label = what.format(repr(item_id)) if item_id is not None else what
        raise _Damage(f"{label} cannot be decoded ({exc})") from None


def _mapping_of(decoder: Any, value: object, what: str, item_id: object) -> Any:
    """A keyed column: most rows hold ``{}``, which needs no decoder call."""
    return {} if value == "{}" else _decode(decoder, value, what, item_id)


def info_from_row(where: str, row: Sequence[Any]) -> ConversationInfo:
    conversation_id, created, updated, agent, count = row
    try:
        return ConversationInfo(
            conversation_id=_text(conversation_id, "the conversation id"),
            created_at=_time(created, "created_at"),
            updated_at=_time(updated, "updated_at"),
            agent=_text(agent, "the agent", optional=True),
            item_count=int(count),
        )
    except _Damage as damage:
        raise _corrupt(where, str(conversation_id), str(damage)) from None


def _item(row: Sequence[Any]) -> StoredItem:
    item_id, position, wire, transcripts, truncated, audio, response_id, origin = row[:8]
    if not isinstance(item_id, str) or not item_id:
        raise _Damage(f"an item id is {item_id!r}, not a string")
    if isinstance(position, bool) or not isinstance(position, int):
        raise _Damage(f"item {item_id!r} has position {position!r}, not an integer")
    if isinstance(audio, memoryview):
        audio = bytes(audio)
    if len(row) > 8:
        _verify_item(row[8], row[9], row[:8], audio)
    decoded = _decode(_mapping, wire, "the wire JSON of item {}", item_id)
    if decoded.get("id") != item_id:
        raise _Damage(f"item {item_id!r} holds the wire form of item {decoded.get('id')!r}")
    if not isinstance(decoded.get("type"), str):
        raise _Damage(f"the wire form of item {item_id!r} has no type")
    if origin not in _ORIGINS:
        raise _Damage(f"item {item_id!r} has origin {origin!r}, not one of {sorted(_ORIGINS)}")
    if response_id is not None and not isinstance(response_id, str):
        raise _Damage(f"item {item_id!r} has response id {response_id!r}, not a string")
    return StoredItem(
        id=item_id,
        position=position,
        wire=decoded,
        transcripts=_mapping_of(_transcripts, transcripts, "the transcripts of item {}", item_id),
        truncated_ms=_mapping_of(_truncations, truncated, "the truncations of item {}", item_id),
        audio=_decode(_audio, audio, "the audio of item {}", item_id) if audio else {},
        response_id=response_id,
        origin=origin,
    )


def _verify_item(checksum: object, check: object, row: Sequence[Any], audio: Any) -> None:
    """The row's checksums (``None``: written before schema version 3, not checked)."""
    item_id, position, wire, transcripts, truncated, _, response_id, origin = row
    if checksum is not None:
        try:
            found = row_checksum(item_id, origin, response_id, wire, transcripts, truncated, audio)
        except (TypeError, AttributeError):  # a column of another type than written
            found = None
        if found != checksum:
            raise _Damage(
                f"item {item_id!r}'s content does not match its checksum (a changed byte)"
            )
    if check is not None and position_check(item_id, position) != check:
        raise _Damage(f"item {item_id!r}'s position {position} does not match its checksum")


def _check_items(items: Sequence[StoredItem], count: object) -> None:
    if count is not None and count != len(items):
        raise _Damage(
            f"{len(items)} item rows found but the conversation's last write left {count}: "
            "rows were deleted or added outside voxwire, or the file lost pages"
        )
    seen: set[str] = set()
    calls: dict[str, int] = {}
    previous: StoredItem | None = None
    for index, item in enumerate(items):
        if item.id in seen:
            raise _Damage(f"item {item.id!r} is stored twice")
        seen.add(item.id)
        if previous is not None and previous.position == item.position:
            raise _Damage(
                f"items {previous.id!r} and {item.id!r} share position {item.position}, so "
                "their order is unknown"
            )
        previous = item
        call_id = item.wire.get("call_id")
        if item.wire.get("type") == "function_call" and call_id is not None:
            if not isinstance(call_id, str):
                raise _Damage(f"function call {item.id!r} has call_id {call_id!r}")
            if call_id in calls:
                raise _Damage(f"two function calls have call_id {call_id!r}")
            calls[call_id] = index
    for index, item in enumerate(items):
        if item.wire.get("type") != "function_call_output":
            continue
        call_id = item.wire.get("call_id")
        if not isinstance(call_id, str):
            raise _Damage(f"function call output {item.id!r} has call_id {call_id!r}")
        if calls.get(call_id, -1) > index:
            raise _Damage(f"output {item.id!r} comes before its call {call_id!r}")


def snapshot_from_rows(
    where: str,
    conversation_id: str,
    conversation: Sequence[Any],
    items: Sequence[Sequence[Any]],
    approvals: Sequence[Sequence[Any]],
    outputs: Sequence[Sequence[Any]],
) -> SessionSnapshot:
    """The checked snapshot of one conversation's rows (module docstring)."""
    try:
        created, updated, agent, usage, count, waiting, *checks = conversation
        _verify_conversation(conversation_id, agent, usage, checks)
        stored = tuple(_item(row) for row in items)
        _check_items(stored, count)
        if waiting is not None and waiting != len(approvals) + len(outputs):
            raise _Damage(
                f"{len(approvals)} pending approval(s) and {len(outputs)} pending output(s) "
                f"found but the conversation's last write left {waiting} in all: rows were "
                "deleted or added outside voxwire, or the file lost pages"
            )
        pending: dict[str, dict[str, Any]] = {}
        for call_id, call, *checksum in approvals:
            _verify_keyed("pending approval", call_id, call, checksum)
            wire = _decode(_mapping, call, f"the pending approval of call {call_id!r}")
            if wire.get("call_id") != call_id:
                raise _Damage(f"the pending approval of {call_id!r} is of {wire.get('call_id')!r}")
            pending[call_id] = wire
        return SessionSnapshot(
            conversation_id=conversation_id,
            created_at=_time(created, "created_at"),
            updated_at=_time(updated, "updated_at"),
            agent=_text(agent, "the agent", optional=True),
            items=stored,
            approvals=pending,
            outputs={
                _text(call_id, "a pending output's call id"): _decode(
                    _any, output, f"the pending output of call {call_id!r}"
                )
                for call_id, output, *checksum in outputs
                if _verify_keyed("pending output", call_id, output, checksum)
            },
            usage=_decode(_usage, usage, "the usage totals"),
        )
    except _Damage as damage:
        raise _corrupt(where, conversation_id, str(damage)) from None


def _verify_conversation(
    conversation_id: str, agent: object, usage: object, checks: list[Any]
) -> None:
    agent_sum, usage_sum = checks
    if agent_sum is not None and (
        not isinstance(agent, str | None) or agent_check(conversation_id, agent) != agent_sum
    ):
        raise _Damage(
            f"the conversation's id or its agent {agent!r} does not match its checksum "
            "(a changed byte)"
        )
    if usage_sum is not None and (not isinstance(usage, str) or text_check(usage) != usage_sum):
        raise _Damage("the usage totals do not match their checksum (a changed byte)")


def _verify_keyed(what: str, call_id: object, payload: object, checksum: list[Any]) -> bool:
    if checksum and checksum[0] is not None:
        if not isinstance(call_id, str) or not isinstance(payload, str):
            raise _Damage(f"the {what} row of call {call_id!r} has a column of the wrong type")
        if keyed_checksum(call_id, payload) != checksum[0]:
            raise _Damage(f"the {what} of call {call_id!r} does not match its checksum")
    return True


def _corrupt(where: str, conversation_id: str, problem: str) -> StoreCorrupt:
    return StoreCorrupt(
        f"{subject(where, conversation_id)}: the stored conversation is damaged: {problem}. "
        "Nothing was resumed from it: restore the store from a backup, or delete this "
        "conversation (delete_conversation) and start it again",
        store=where,
        conversation_id=conversation_id,
    )
