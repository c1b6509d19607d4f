"""A real SQLite store (written by the recorder from GA frames) and the ways the fault tests
damage copies of it: truncation, flipped bits, SQL edits. ``probe`` opens a damaged copy the way
a resuming session would and says what came out: the original conversations exactly, or a store
error of a known kind whose message names the file and the problem — anything else (a raw
driver exception, a conversation that loads but differs) fails the test."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from tests.store.frames import added, assistant, call, output, output_added, response_done, user
from voxwire.exceptions import (
    ConversationNotFound,
    StoreCorrupt,
    StoreError,
    StoreSchemaError,
    StoreVersionError,
)
from voxwire.protocol.items import FunctionCallItem
from voxwire.store import (
    ConversationRecorder,
    ConversationStore,
    SessionSnapshot,
    SQLiteStore,
    StoreOp,
)

CONVERSATIONS = {"main": 6, "other": 2}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

#: What each kind of error must say (besides the file's path), by type.
PHRASES: dict[type[StoreError], tuple[str, ...]] = {
    StoreSchemaError: ("schema_version row", "are missing", "a table is missing or incomplete"),
    StoreCorrupt: ("is damaged", "not a SQLite database", "a row is damaged", "cut short"),
    StoreVersionError: ("Upgrade voxwire",),
    ConversationNotFound: ("no conversation",),
}


async def build(path: Path) -> dict[str, SessionSnapshot]:
    """Write the SQLite store at ``path``; the conversations as loaded from it."""
    store = await SQLiteStore.open(path)
    try:
        return await fill(store)
    finally:
        await store.close()


async def fill(store: ConversationStore) -> dict[str, SessionSnapshot]:
    """Write the conversations into ``store``; as loaded back."""
    for cid, turns in CONVERSATIONS.items():
        info = await store.create(cid)
        recorder = ConversationRecorder(cid, info.created_at)
        ops: list[StoreOp] = list(recorder.set_agent("concierge"))
        previous: str | None = None
        for turn in range(turns):
            ops += _turn(recorder, f"{cid}{turn}", previous)
            previous = f"{cid}{turn}-a"
        waiting = call(f"{cid}-w", f"{cid}-call-w", arguments='{"refund": 12}')
        ops += recorder.receive(output_added(waiting, "r-wait"))
        ops += recorder.receive(added(waiting, previous))
        ops += recorder.approval_pending(FunctionCallItem(**_fields(waiting)))
        ops += recorder.output_ready(f"{cid}-call-x", {"done": True, "n": 0})
        await store.apply(cid, ops)
    return {cid: await store.load(cid) for cid in CONVERSATIONS}


def _fields(wire: dict[str, Any]) -> dict[str, Any]:
    return {k: wire[k] for k in ("id", "name", "arguments", "call_id")}


def _turn(recorder: ConversationRecorder, tag: str, previous: str | None) -> list[StoreOp]:
    ops: list[StoreOp] = []
    said = user(f"{tag}-u", f"Question {tag}: what is the weather in Paris, please?")
    ops += recorder.receive(added(said, previous))
    asked = call(f"{tag}-c", f"{tag}-call", arguments='{"city": "Paris"}')
    ops += recorder.receive(output_added(asked, f"r-{tag}"))
    ops += recorder.receive(added(asked, said["id"]))
    ops += recorder.output_ready(f"{tag}-call", {"temperature": 21})
    ops += recorder.receive(
        added(output(f"{tag}-o", f"{tag}-call", '{"temperature": 21}'), asked["id"])
    )
    answer = assistant(f"{tag}-a", f"It is 21 degrees in Paris ({tag}).")
    ops += recorder.receive(output_added(answer, f"r2-{tag}"))
    ops += recorder.receive(added(answer, f"{tag}-o"))
    ops += recorder.receive(response_done(f"r2-{tag}", [answer], total_tokens=40, input_tokens=30))
    return ops


def copy(source: Path, target: Path) -> Path:
    shutil.copyfile(source, target)
    return target


def sql(path: Path, *statements: str) -> None:
    """Edit the file as an operator (or a bug) would, without voxwire."""
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        for statement in statements:
            connection.execute(statement)


def truncate(path: Path, size: int) -> None:
    with path.open("r+b") as file:
        file.truncate(size)


def flip(path: Path, offset: int, bit: int) -> None:
    with path.open("r+b") as file:
        file.seek(offset)
        byte = file.read(1)[0]
        file.seek(offset)
        file.write(bytes([byte ^ (1 << bit)]))


async def probe(path: Path, originals: dict[str, SessionSnapshot]) -> list[str]:
    """Open ``path`` and load every conversation; one outcome per step: ``"intact"`` or the
    error type's name. Raises AssertionError for a leak or a silently different result."""
    try:
        store = await SQLiteStore.open(path)
    except StoreError as exc:
        return [_checked(exc, path, None)]
    except Exception as exc:
        raise AssertionError(f"open() leaked {type(exc).__name__}: {exc}") from exc
    outcomes: list[str] = []
    try:
        for cid, original in originals.items():
            try:
                loaded = await store.load(cid)
            except StoreError as exc:
                outcomes.append(_checked(exc, path, cid))
                continue
            except Exception as exc:
                raise AssertionError(f"load({cid!r}) leaked {type(exc).__name__}: {exc}") from exc
            # Times are range-checked, not checksummed (docs/persistence.md): everything else
            # must be exactly what was written.
            assert _content(loaded) == _content(original), f"{cid} loaded differently"
            outcomes.append("intact")
        try:
            listed = await store.list_conversations()
        except StoreError as exc:
            outcomes.append(_checked(exc, path, None))
        else:
            # A changed bit in a conversation's id lists it under another id: loading that
            # one must fail too (its rows do not add up).
            for info in listed:
                if info.conversation_id not in originals:
                    outcomes.append(await _load_fails(store, path, info.conversation_id))
    finally:
        await store.close()
    return outcomes


async def _load_fails(store: SQLiteStore, path: Path, cid: str) -> str:
    try:
        await store.load(cid)
    except StoreError as exc:
        return _checked(exc, path, cid)
    raise AssertionError(f"conversation {cid!r}, which was never written, loads")


def _content(snapshot: SessionSnapshot) -> SessionSnapshot:
    return msgspec.structs.replace(snapshot, created_at=_EPOCH, updated_at=_EPOCH)


def _checked(exc: StoreError, path: Path, cid: str | None) -> str:
    message = str(exc)
    assert str(path) in message, message
    assert exc.store == str(path), exc.store
    for kind, phrases in PHRASES.items():
        if isinstance(exc, kind):
            assert any(phrase in message for phrase in phrases), (kind, message)
            if cid is not None and kind in (StoreCorrupt, ConversationNotFound):
                assert repr(cid) in message, message
            return kind.__name__
    raise AssertionError(f"unexpected store error {type(exc).__name__}: {message}")
