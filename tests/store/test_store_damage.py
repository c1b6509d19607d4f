"""Damaged copies of a real SQLite store: truncated, bits flipped, rows deleted, duplicated or
edited, the schema row lost, a read-only file system, a full disk. Each outcome is either the
conversations exactly as written, or a StoreError of the right kind whose message names the file
(and the conversation) and says what is wrong — never a raw driver exception, never a different
conversation. The random damage is seeded; the counts are printed (pytest -s)."""

from __future__ import annotations

import collections
import os
import random
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from tests.store.conftest import Backend
from tests.store.damage import CONVERSATIONS, build, copy, fill, flip, probe, sql, truncate
from tests.store.frames import run, user
from voxwire.exceptions import (
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreReadOnly,
    StoreSchemaError,
    StoreVersionError,
)
from voxwire.store import PutItem, SessionSnapshot, SQLiteStore, StoredItem
from voxwire.store._rows import position_check, row_checksum

PAGE = 4096


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, SessionSnapshot]]:
    path = tmp_path_factory.mktemp("store") / "base.db"
    snapshots = run(build(path))
    assert not Path(f"{path}-wal").exists()  # checkpointed at close: everything is in the file
    return path, snapshots


def _tally(
    original: tuple[Path, dict[str, SessionSnapshot]], tmp_path: Path, damage: list[object]
) -> collections.Counter[str]:
    base, snapshots = original
    counts: collections.Counter[str] = collections.Counter()
    for index, how in enumerate(damage):
        target = copy(base, tmp_path / f"c{index}.db")
        if isinstance(how, int):
            truncate(target, how)
        else:
            assert isinstance(how, tuple)
            flip(target, *how)
        for outcome in run(probe(target, snapshots)):
            counts[outcome] += 1
        target.unlink()
    return counts


def test_truncated_copies_fail_clearly_or_load_intact(
    original: tuple[Path, dict[str, SessionSnapshot]], tmp_path: Path
) -> None:
    size = original[0].stat().st_size
    rng = random.Random(1901)
    # Every page boundary, inside the 100-byte header, and seeded offsets anywhere.
    offsets = sorted(
        {*range(0, size, PAGE), 1, 16, 50, 99, *(rng.randrange(size) for _ in range(40))}
    )
    counts = _tally(original, tmp_path, list(offsets))
    print(f"truncation: {len(offsets)} copies of a {size}-byte store -> {dict(counts)}")
    assert len(offsets) >= 50
    assert counts["StoreCorrupt"] >= 40  # the file ends before its pages do
    # Size 0 is an empty database (a new store); anything shorter than the header is refused.
    assert counts["ConversationNotFound"] == len(CONVERSATIONS)
    assert set(counts) <= {"intact", "StoreCorrupt", "ConversationNotFound"}


def test_flipped_bits_fail_clearly_or_load_intact(
    original: tuple[Path, dict[str, SessionSnapshot]], tmp_path: Path
) -> None:
    size = original[0].stat().st_size
    rng = random.Random(1902)
    flips = [(rng.randrange(size), rng.randrange(8)) for _ in range(1_200)]
    counts = _tally(original, tmp_path, list(flips))
    print(f"flipped bits: {len(flips)} copies -> {dict(counts)}")
    # Most bits land in free space or page slack and change nothing; the rest must be caught.
    assert counts["intact"] > 1_000
    assert counts["StoreCorrupt"] + counts["StoreSchemaError"] >= 50


# --- rows deleted, duplicated and edited ---------------------------------------------------------


def _item_ids(path: Path, cid: str) -> list[str]:
    with closing(sqlite3.connect(path)) as connection:
        rows = connection.execute(
            "SELECT item_id FROM items WHERE conversation_id = ? ORDER BY position", (cid,)
        ).fetchall()
    return [row[0] for row in rows]


def _duplicate(path: Path, item_id: str, consistent: bool) -> None:
    """Copy an item's row under a new id. ``consistent``: its wire id and both checksums made
    to match, as a bug in another writer could — only the counts can tell."""
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        connection.row_factory = sqlite3.Row
        row = dict(
            connection.execute("SELECT * FROM items WHERE item_id = ?", (item_id,)).fetchone()
        )
        row["item_id"] = new_id = f"{item_id}-copy"
        row["position"] += 1
        if consistent:
            row["wire"] = row["wire"].replace(f'"id":"{item_id}"', f'"id":"{new_id}"')
            row["checksum"] = row_checksum(
                new_id,
                row["origin"],
                row["response_id"],
                row["wire"],
                row["transcripts"],
                row["truncated_ms"],
                row["audio"],
            )
            row["position_check"] = position_check(new_id, row["position"])
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        connection.execute(f"INSERT INTO items ({columns}) VALUES ({marks})", tuple(row.values()))


def _one(path: Path, snapshots: dict[str, SessionSnapshot]) -> StoreError:
    outcome = run(_first_error(Backend("sqlite", str(path)), snapshots))
    assert outcome is not None, "the damage went unnoticed"
    return outcome


async def _first_error(
    backend: Backend, snapshots: dict[str, SessionSnapshot]
) -> StoreError | None:
    """The first error of opening the store and loading each conversation (``None``: all
    loaded)."""
    try:
        store = await backend.open()
    except StoreError as exc:
        return exc
    try:
        for cid in snapshots:
            try:
                await store.load(cid)
            except StoreError as exc:
                return exc
        return None
    finally:
        await store.close()


def test_every_deleted_or_duplicated_item_row_is_caught(
    original: tuple[Path, dict[str, SessionSnapshot]], tmp_path: Path
) -> None:
    base, snapshots = original
    ids = _item_ids(base, "main")
    cases = 0
    for item_id in ids:
        for damage in ("deleted", "duplicated", "duplicated consistently"):
            target = copy(base, tmp_path / "c.db")
            if damage == "deleted":
                sql(target, f"DELETE FROM items WHERE item_id = '{item_id}'")
                expected = f"{len(ids) - 1} item rows found but the conversation's last write left"
            elif damage == "duplicated":
                _duplicate(target, item_id, consistent=False)
                expected = f"item '{item_id}-copy''s content does not match its checksum"
            else:
                _duplicate(target, item_id, consistent=True)
                expected = f"{len(ids) + 1} item rows found but the conversation's last write left"
            error = _one(target, snapshots)
            assert type(error) is StoreCorrupt, (damage, error)
            assert expected in str(error), (damage, str(error))
            assert "conversation 'main'" in str(error)
            assert "Nothing was resumed" in str(error)
            target.unlink()
            cases += 1
    print(f"row damage: {cases} copies, every one refused")
    assert cases == 3 * len(ids) == 75


EDITS = {
    # what was done: (SQL, expected type, what the message must say)
    "lost schema row": (
        "DELETE FROM schema_version",
        StoreSchemaError,
        "the schema_version row that says which version they are is missing",
    ),
    "dropped items table": ("DROP TABLE items", StoreSchemaError, "the table(s) items are missing"),
    # Found by the session-side fuzz (tests/fuzz): the TypeError of max(upto, '9x') left open().
    "schema version that is text": (
        "UPDATE schema_version SET version = '9x'",
        StoreSchemaError,
        "the schema_version row holds '9x', not a version number",
    ),
    "schema newer than this voxwire": (
        "UPDATE schema_version SET version = 99, written_by = '9.9'",
        StoreVersionError,
        "has schema version 99, written by voxwire 9.9",
    ),
    "a pending approval deleted": (
        "DELETE FROM approvals WHERE conversation_id = 'main'",
        StoreCorrupt,
        "0 pending approval(s) and 1 pending output(s) found but the conversation's last write "
        "left 2",
    ),
    "a pending output deleted": (
        "DELETE FROM outputs WHERE conversation_id = 'other'",
        StoreCorrupt,
        "1 pending approval(s) and 0 pending output(s) found",
    ),
    "an item moved to the other conversation": (
        "UPDATE items SET conversation_id = 'other' WHERE item_id = 'main0-u'",
        StoreCorrupt,
        "24 item rows found but the conversation's last write left 25",
    ),
    "two positions made equal": (
        "UPDATE items SET position = (SELECT position FROM items WHERE item_id = 'main0-u') "
        "WHERE item_id = 'main0-c'",
        StoreCorrupt,
        "item 'main0-c''s position 0 does not match its checksum",
    ),
    "wire forms swapped": (
        "UPDATE items SET wire = (SELECT wire FROM items WHERE item_id = 'main1-u'), "
        "checksum = NULL WHERE item_id = 'main0-u'",
        StoreCorrupt,
        "item 'main0-u' holds the wire form of item 'main1-u'",
    ),
    "what the assistant said edited": (
        "UPDATE items SET wire = replace(wire, '21 degrees', '12 degrees') "
        "WHERE item_id = 'main2-a'",
        StoreCorrupt,
        "item 'main2-a''s content does not match its checksum",
    ),
    "a pending output edited": (
        "UPDATE outputs SET output = '{\"done\":false}' WHERE conversation_id = 'main'",
        StoreCorrupt,
        "the pending output of call 'main-call-x' does not match its checksum",
    ),
    "the agent edited": (
        "UPDATE conversations SET agent = 'billing' WHERE id = 'main'",
        StoreCorrupt,
        "the conversation's id or its agent 'billing' does not match its checksum",
    ),
    "the item count edited": (
        "UPDATE conversations SET item_count = 3 WHERE id = 'other'",
        StoreCorrupt,
        "9 item rows found but the conversation's last write left 3",
    ),
    "wire JSON cut": (
        "UPDATE items SET wire = substr(wire, 1, 20), checksum = NULL WHERE item_id = 'main3-c'",
        StoreCorrupt,
        "the wire JSON of item 'main3-c' cannot be decoded",
    ),
    "a position made text": (
        "UPDATE items SET position = 'x' WHERE item_id = 'other0-u'",
        StoreCorrupt,
        "item 'other0-u' has position 'x', not an integer",
    ),
    "a time out of range": (
        "UPDATE conversations SET created_at = 9223372036854775807 WHERE id = 'other'",
        StoreCorrupt,
        "created_at is 9223372036854775807, outside years 1970..9999",
    ),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_edited_rows_and_schema_fail_with_what_is_wrong(backend: Backend, case: str) -> None:
    statement, kind, words = EDITS[case]
    if backend.name == "postgres" and case in (
        "a position made text",
        "schema version that is text",
    ):
        pytest.skip("PostgreSQL's bigint column refuses text: this damage cannot happen there")

    async def body() -> StoreError | None:
        store = await backend.open()
        snapshots = await fill(store)
        await store.close()
        backend.execute(statement)
        return await _first_error(backend, snapshots)

    error = run(body())
    assert type(error) is kind, error
    assert words in str(error), str(error)
    assert error.store is not None
    assert f"the store {error.store}" in str(error)
    if backend.name == "postgres":
        assert f"schema {backend.schema}" in error.store


def test_a_read_only_postgresql_is_reported_as_read_only(backend: Backend) -> None:
    if backend.name != "postgres":
        pytest.skip("the SQLite case is the read-only file system above")
    # What a hot standby (or a read-only role default) does to every transaction.
    readonly = Backend(
        "postgres",
        f"{backend.target} options='-c default_transaction_read_only=on'",
        backend.schema,
    )
    with pytest.raises(StoreReadOnly) as caught:
        run(readonly.open())
    message = str(caught.value)
    assert "cannot open it: the database refuses writes" in message
    assert "connect to the primary, not a standby" in message
    assert f"schema {backend.schema}" in message


@pytest.mark.parametrize("seed", range(6))
def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    target = tmp_path / "store.db"
    target.write_bytes(
        b"voxwire conversations\n" * 300 if seed == 0 else rng.randbytes(rng.randrange(100, 20_000))
    )
    with pytest.raises(StoreCorrupt) as caught:
        run(SQLiteStore.open(target))
    assert f"the store {target}: cannot open it: the file is not a SQLite database" in str(
        caught.value
    )
    assert "restore it from a backup" in str(caught.value)


# --- read-only and full file systems (a small tmpfs, mounted by root) ----------------------------


@contextmanager
def tmpfs(size: str) -> Iterator[Path]:
    where = Path(tempfile.mkdtemp(prefix="voxwire-tmpfs-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        where.rmdir()
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip() or 'not root'})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        where.rmdir()


def test_a_read_only_file_system_is_reported_as_read_only(
    original: tuple[Path, dict[str, SessionSnapshot]],
) -> None:
    with tmpfs("1m") as where:
        target = shutil.copyfile(original[0], where / "store.db")
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        with pytest.raises(StoreReadOnly) as caught:
            run(SQLiteStore.open(target))
        message = str(caught.value)
        assert f"the store {target}: cannot open it: it is read-only" in message
        assert "write permission on the file and its directory" in message


def test_a_full_disk_is_reported_as_full_and_loses_nothing_written(tmp_path: Path) -> None:
    async def body(where: Path) -> None:
        store = await SQLiteStore.open(where / "store.db")
        await store.create("c")
        filler = where / "filler"
        written: list[str] = []
        failure: StoreError | None = None
        for n in range(10_000):
            item = StoredItem(id=f"i{n}", position=n, wire=user(f"i{n}", "x" * 3000))
            try:
                await store.apply("c", [PutItem(item=item)])
            except StoreError as exc:
                failure = exc
                break
            written.append(item.id)
            if n == 2:  # leave the store little room: the next writes hit the wall
                free = os.statvfs(where)
                filler.write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 40_000))
        assert type(failure) is StoreFull, failure
        message = str(failure)
        assert (
            f"the store {where / 'store.db'}, conversation 'c': cannot write: the disk is full"
            in message
        )
        assert "nothing of this write was stored" in message
        assert "cannot rollback" not in message
        loaded = await store.load("c")
        assert [item.id for item in loaded.items] == written  # every confirmed write, no more
        filler.unlink()  # space again: the same store goes on
        extra = StoredItem(id="after", position=10**6, wire=user("after", "y"))
        await store.apply("c", [PutItem(item=extra)])
        assert (await store.load("c")).items[-1].id == "after"
        await store.close()

    with tmpfs("512k") as where:
        run(body(where))
