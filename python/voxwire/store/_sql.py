"""What the SQL stores share: the statements of each operation and every public method written
once over a transaction primitive (the schema and its migrations: :mod:`voxwire.store._schema`;
decoding and checking rows: :mod:`voxwire.store._rows`).

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
exactly as written on both backends. Since version 3 a conversation's row also holds its item
count (checked at load, :mod:`voxwire.store._rows`) and its lease (holder, fencing token,
expiry: :mod:`voxwire.store.lease`).

Time in SQL: ``{now}`` in a statement is the database's clock in microseconds since the epoch
(:attr:`SQLStore._NOW`), so that the leases of processes on several machines agree.
"""

from __future__ import annotations

import logging
import time
import uuid
from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, Final, NamedTuple

import msgspec

from voxwire.exceptions import (
    ConfigurationError,
    ConversationExists,
    ConversationHeld,
    ConversationNotFound,
    LeaseLost,
    StoreError,
)
from voxwire.store._faults import subject
from voxwire.store._rows import (
    agent_check,
    info_from_row,
    moment,
    snapshot_from_rows,
    text_check,
)
from voxwire.store._schema import (
    MIGRATIONS,
    SCHEMA_TABLE,
    SCHEMA_VERSION,
    TABLES,
    migration_statements,
    voxwire_version,
    with_paramstyle,
)
from voxwire.store._writes import COUNT_ROWS, PUT_ITEM, Step, item_row, op_steps
from voxwire.store.base import ConversationInfo, ConversationStore
from voxwire.store.lease import (
    DEFAULT_LEASE_TTL_S,
    Lease,
    check_ttl,
    dead_here,
    default_holder,
    describe_holder,
)
from voxwire.store.ops import PutApproval, PutOutput, StoreOp
from voxwire.store.snapshot import SessionSnapshot, UsageTotals

__all__ = [  # the schema's names are re-exported for the backends
    "MIGRATIONS",
    "SCHEMA_TABLE",
    "SCHEMA_VERSION",
    "TABLES",
    "Outcome",
    "SQLStore",
    "Step",
    "StepFoundNothing",
    "migration_statements",
    "voxwire_version",
    "with_paramstyle",
]

_EPOCH: Final = moment(0)
log = logging.getLogger("voxwire.store")
_json: Final = msgspec.json.Encoder()

_INFO: Final = (
    "SELECT c.id, c.created_at, c.updated_at, c.agent, "
    "(SELECT count(*) FROM items i WHERE i.conversation_id = c.id) FROM conversations c"
)


def _microseconds(at: datetime) -> int:
    return (at - _EPOCH) // timedelta(microseconds=1)


# --- the shared implementation ------------------------------------------------------------------


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
    """Every public method over :meth:`_transaction` (see the module docstring).

    A backend sets :attr:`_NOW` (its clock in SQL), :attr:`_where` (what messages call the
    store) and :attr:`_version` (the schema version it opened) and implements
    :meth:`_transaction` and ``close``.
    """

    _NOW: ClassVar[str]
    _where: str
    _version: int = SCHEMA_VERSION

    @abstractmethod
    async def _transaction(
        self,
        steps: Sequence[Step],
        *,
        write: bool,
        conversation_id: str | None = None,
        doing: str = "read",
    ) -> list[Outcome]:
        """Run ``steps`` in one transaction (read-only unless ``write``), in order; a failure
        of the database is raised as the :class:`StoreError` that says what it is, naming
        ``conversation_id`` and what the store was ``doing``."""

    def _sql(self, sql: str) -> str:
        return sql.replace("{now}", self._NOW)

    @property
    def _leases(self) -> bool:
        """Whether the schema has the lease and item-count columns (version 3)."""
        return self._version >= 3

    # --- conversations ----------------------------------------------------------------------------

    async def create(
        self, conversation_id: str | None = None, *, agent: str | None = None
    ) -> ConversationInfo:
        cid = (
            _check_id(conversation_id)
            if conversation_id is not None
            else f"conv_{uuid.uuid4().hex}"
        )
        now = time.time_ns() // 1000
        usage = _json.encode(UsageTotals()).decode()
        columns, values = "", ""
        params: tuple[Any, ...] = (cid, now, now, agent, usage)
        if self._leases:
            columns = ", item_count, pending_count, agent_check, usage_check"
            values = ", 0, 0, ?, ?"
            params += (agent_check(cid, agent), text_check(usage))
        steps = [
            Step(
                f"INSERT INTO conversations (id, created_at, updated_at, agent, usage{columns}) "
                f"VALUES (?, ?, ?, ?, ?{values}) ON CONFLICT (id) DO NOTHING",
                params,
                required=True,
            )
        ]
        try:
            await self._transaction(steps, write=True, conversation_id=cid, doing="create it")
        except StepFoundNothing:
            raise ConversationExists(
                f"{subject(self._where, cid)} is already stored: open it with "
                "open_conversation() or load(), or pick another id",
                store=self._where,
                conversation_id=cid,
            ) from None
        return ConversationInfo(
            conversation_id=cid,
            created_at=moment(now),
            updated_at=moment(now),
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
        [outcome] = await self._transaction(
            [Step(f"{_INFO} WHERE c.id = ?", (cid,))], write=False, conversation_id=cid
        )
        if not outcome.rows:
            raise self._not_found(cid)
        return info_from_row(self._where, outcome.rows[0])

    async def list_conversations(
        self, *, limit: int = 100, updated_before: datetime | None = None
    ) -> list[ConversationInfo]:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigurationError(f"limit={limit!r}: must be an integer of at least 1")
        if updated_before is not None and (
            not isinstance(updated_before, datetime) or updated_before.utcoffset() is None
        ):
            raise ConfigurationError(
                f"updated_before={updated_before!r}: expected an aware datetime (the "
                "updated_at of the last conversation of the previous page)"
            )
        if updated_before is None:
            step = Step(f"{_INFO} ORDER BY c.updated_at DESC, c.id LIMIT ?", (limit,))
        else:
            step = Step(
                f"{_INFO} WHERE c.updated_at < ? ORDER BY c.updated_at DESC, c.id LIMIT ?",
                (_microseconds(updated_before), limit),
            )
        [outcome] = await self._transaction([step], write=False)
        return [info_from_row(self._where, row) for row in outcome.rows]

    async def delete_conversation(
        self, conversation_id: str, *, lease: Lease | None = None
    ) -> bool:
        cid = _check_id(conversation_id)
        steps = [self._guard(cid, lease, time.time_ns() // 1000)]
        steps += [
            Step(f"DELETE FROM {table} WHERE conversation_id = ?", (cid,))
            for table in ("items", "approvals", "outputs")
        ]
        steps.append(Step("DELETE FROM conversations WHERE id = ?", (cid,)))
        try:
            await self._transaction(steps, write=True, conversation_id=cid, doing="delete it")
        except StepFoundNothing:
            refusal = await self._refusal(cid, lease)
            if isinstance(refusal, ConversationNotFound):
                return False
            raise refusal from None
        return True

    # --- reading and writing ----------------------------------------------------------------------

    async def apply(
        self, conversation_id: str, ops: Sequence[StoreOp], *, lease: Lease | None = None
    ) -> None:
        cid = _check_id(conversation_id)
        now = time.time_ns() // 1000
        steps = [self._guard(cid, lease, now)]
        for index, op in enumerate(ops):
            # Pending approvals and outputs load in the order they were put.
            steps += op_steps(cid, op, now + index, self._leases)
        try:
            await self._transaction(steps, write=True, conversation_id=cid, doing="write")
        except StepFoundNothing:
            raise await self._refusal(cid, lease) from None

    async def load(self, conversation_id: str) -> SessionSnapshot:
        cid = _check_id(conversation_id)
        count = (
            "item_count, pending_count, agent_check, usage_check"
            if self._leases
            else "NULL, NULL, NULL, NULL"
        )
        check = ", checksum, position_check" if self._leases else ""
        keyed = ", checksum" if self._leases else ""
        outcomes = await self._transaction(
            [
                Step(
                    f"SELECT created_at, updated_at, agent, usage, {count} FROM conversations "
                    "WHERE id = ?",
                    (cid,),
                ),
                Step(
                    "SELECT item_id, position, wire, transcripts, truncated_ms, audio, "
                    f"response_id, origin{check} FROM items WHERE conversation_id = ? "
                    "ORDER BY position, item_id",
                    (cid,),
                ),
                Step(
                    f"SELECT call_id, call{keyed} FROM approvals WHERE conversation_id = ? "
                    "ORDER BY created_at, call_id",
                    (cid,),
                ),
                Step(
                    f"SELECT call_id, output{keyed} FROM outputs WHERE conversation_id = ? "
                    "ORDER BY created_at, call_id",
                    (cid,),
                ),
            ],
            write=False,
            conversation_id=cid,
            doing="load it",
        )
        conversation, items, approvals, outputs = (outcome.rows for outcome in outcomes)
        if not conversation:
            raise self._not_found(cid)
        return snapshot_from_rows(self._where, cid, conversation[0], items, approvals, outputs)

    async def import_snapshot(
        self, snapshot: SessionSnapshot, *, replace: bool = False, lease: Lease | None = None
    ) -> None:
        cid = _check_id(snapshot.conversation_id)
        now = time.time_ns() // 1000
        steps = [self._import_conversation(snapshot, replace, lease)]
        steps += [
            Step(f"DELETE FROM {table} WHERE conversation_id = ?", (cid,))
            for table in (("items", "approvals", "outputs") if replace else ())
        ]
        if snapshot.items:
            self._need_leases(cid)
            rows = [item_row(cid, item) for item in snapshot.items]
            steps.append(Step(PUT_ITEM, rows, many=True))
        keyed: list[StoreOp] = [
            *(PutApproval(call_id=key, call=call) for key, call in snapshot.approvals.items()),
            *(PutOutput(call_id=key, output=output) for key, output in snapshot.outputs.items()),
        ]
        for index, op in enumerate(keyed):
            steps += op_steps(cid, op, now + index, self._leases)
        if self._leases:
            steps.append(COUNT_ROWS._replace(params=(cid,) * 4))
        try:
            await self._transaction(steps, write=True, conversation_id=cid, doing="import it")
        except StepFoundNothing:
            if replace:
                raise await self._refusal(cid, lease) from None
            raise ConversationExists(
                f"{subject(self._where, cid)} is already stored: pass replace=True to overwrite it",
                store=self._where,
                conversation_id=cid,
            ) from None

    def _import_conversation(
        self, snapshot: SessionSnapshot, replace: bool, lease: Lease | None
    ) -> Step:
        """The conversation's row of an import: inserted; with ``replace``, or updated in
        place (so its lease, and the fencing token, go on) if the lease allows it."""
        update = "NOTHING"
        params: list[Any] = [
            snapshot.conversation_id,
            _microseconds(snapshot.created_at),
            _microseconds(snapshot.updated_at),
            snapshot.agent,
            _json.encode(snapshot.usage).decode(),
        ]
        columns = values = ""
        if self._leases:
            columns, values = ", agent_check, usage_check", ", ?, ?"
            params += [agent_check(snapshot.conversation_id, snapshot.agent), text_check(params[4])]
        if replace:
            update = (
                "UPDATE SET created_at = excluded.created_at, updated_at = excluded.updated_at, "
                "agent = excluded.agent, usage = excluded.usage"
            )
            if self._leases:
                update += ", agent_check = excluded.agent_check, usage_check = excluded.usage_check"
            if self._leases and lease is None:
                update += " WHERE conversations.lease_expires <= {now}"
            elif self._leases and lease is not None:
                update += (
                    " WHERE conversations.lease_token = ? "
                    "AND conversations.lease_holder IS NOT NULL"
                )
                params.append(self._token(snapshot.conversation_id, lease))
        sql = (
            f"INSERT INTO conversations (id, created_at, updated_at, agent, usage{columns}) "
            f"VALUES (?, ?, ?, ?, ?{values}) ON CONFLICT (id) DO {update}"
        )
        return Step(self._sql(sql), tuple(params), required=True)

    # --- leases -----------------------------------------------------------------------------------

    async def acquire(
        self,
        conversation_id: str,
        *,
        ttl_s: float = DEFAULT_LEASE_TTL_S,
        holder: str | None = None,
    ) -> Lease:
        cid = _check_id(conversation_id)
        ttl = check_ttl(ttl_s)
        who = holder if holder is not None else default_holder()
        self._need_leases(cid)
        taken, (current, token, expires, now) = await self._take(cid, who, ttl, None)
        if not taken and expires > now and current is not None and dead_here(current):
            # Its process is gone (this machine, this boot): no need to wait for the lease.
            taken, (current, token, expires, now) = await self._take(
                cid, who, ttl, (current, token)
            )
            if taken:
                log.info("%s: took over the lease of %s, which is dead", cid, current)
        if not taken or current != who:
            raise self._held(cid, current, token, expires, now)
        return Lease(
            conversation_id=cid, holder=who, token=token, ttl_s=ttl, expires_at=moment(expires)
        )

    async def _take(
        self, cid: str, who: str, ttl: float, dead: tuple[str, int] | None
    ) -> tuple[bool, tuple[Any, ...]]:
        """Take the lease if it expired (or, with ``dead``: if it is still that dead holder's):
        whether it was taken, and the lease's state afterwards."""
        sql = (
            "UPDATE conversations SET lease_holder = ?, lease_token = lease_token + 1, "
            "lease_expires = {now} + ? WHERE id = ? AND "
        )
        params: tuple[Any, ...] = (who, round(ttl * 1e6), cid)
        if dead is None:
            sql += "lease_expires <= {now}"
        else:
            sql += "lease_holder = ? AND lease_token = ?"
            params += dead
        taken, state = await self._transaction(
            [Step(self._sql(sql), params), self._lease_state(cid)],
            write=True,
            conversation_id=cid,
            doing="acquire it",
        )
        if not state.rows:
            raise self._not_found(cid)
        return taken.rowcount == 1, tuple(state.rows[0])

    async def renew(self, lease: Lease) -> Lease:
        cid = _check_id(lease.conversation_id)
        self._need_leases(cid)
        extend = Step(
            self._sql(
                "UPDATE conversations SET lease_expires = {now} + ? WHERE id = ? "
                "AND lease_token = ? AND lease_holder IS NOT NULL"
            ),
            (round(lease.ttl_s * 1e6), cid, lease.token),
            required=True,
        )
        try:
            _, state = await self._transaction(
                [extend, self._lease_state(cid)], write=True, conversation_id=cid, doing="renew"
            )
        except StepFoundNothing:
            raise await self._refusal(cid, lease) from None
        return Lease(
            conversation_id=cid,
            holder=lease.holder,
            token=lease.token,
            ttl_s=lease.ttl_s,
            expires_at=moment(state.rows[0][2]),
        )

    async def release(self, lease: Lease) -> None:
        cid = _check_id(lease.conversation_id)
        self._need_leases(cid)
        step = Step(
            "UPDATE conversations SET lease_expires = 0, lease_holder = NULL "
            "WHERE id = ? AND lease_token = ?",
            (cid, lease.token),
        )
        await self._transaction([step], write=True, conversation_id=cid, doing="release it")

    def _lease_state(self, cid: str) -> Step:
        return Step(
            self._sql(
                "SELECT lease_holder, lease_token, lease_expires, {now} FROM conversations "
                "WHERE id = ?"
            ),
            (cid,),
        )

    def _guard(self, cid: str, lease: Lease | None, now: int) -> Step:
        """The first step of a write: it sets ``updated_at`` and touches no row — so the
        write is refused, and :meth:`_refusal` says why — when the conversation is not stored,
        is held by another's live lease, or ``lease`` is no longer the current one."""
        sql = "UPDATE conversations SET updated_at = ? WHERE id = ?"
        params: tuple[Any, ...] = (now, cid)
        if self._leases and lease is None:
            sql += " AND lease_expires <= {now}"
        elif self._leases and lease is not None:
            sql += " AND lease_token = ? AND lease_holder IS NOT NULL"  # (released: fenced)
            params += (self._token(cid, lease),)
        return Step(self._sql(sql), params, required=True)

    def _token(self, cid: str, lease: Lease) -> int:
        if not isinstance(lease, Lease) or lease.conversation_id != cid:
            raise ConfigurationError(
                f"lease={lease!r} is not a lease of conversation {cid!r}: pass the Lease that "
                f"acquire({cid!r}) returned"
            )
        return lease.token

    def _need_leases(self, cid: str) -> None:
        if not self._leases:
            raise StoreError(
                f"{subject(self._where, cid)}: this store was opened at schema version "
                f"{self._version}, which has no leases or checksums: open it without "
                "schema_version=",
                store=self._where,
                conversation_id=cid,
            )

    async def _refusal(self, cid: str, lease: Lease | None) -> StoreError:
        """Why a write's guard touched no row (read after the write was rolled back)."""
        [state] = await self._transaction(
            [self._lease_state(cid)], write=False, conversation_id=cid
        )
        if not state.rows:
            return self._not_found(cid)
        holder, token, expires, now = state.rows[0]
        if lease is not None and holder is None and token == lease.token:
            return LeaseLost(
                f"{subject(self._where, cid)}: the lease of {lease.holder} (token {lease.token}) "
                "was released, so it writes and renews no more: acquire the conversation again "
                "to go on writing it",
                store=self._where,
                conversation_id=cid,
            )
        if lease is not None:
            return LeaseLost(
                f"{subject(self._where, cid)}: the lease of {lease.holder} (token {lease.token}) "
                f"was taken over by {holder or 'another holder'} (token {token}) after it "
                "expired, so this write was refused: stop writing this conversation here; "
                "resume it again (which loads what the other holder wrote) to go on",
                store=self._where,
                conversation_id=cid,
            )
        return self._held(cid, holder, token, expires, now)

    def _held(
        self, cid: str, holder: str | None, token: int, expires: int, now: int
    ) -> ConversationHeld:
        left_s = max(0.0, (expires - now) / 1e6)
        return ConversationHeld(
            f"{subject(self._where, cid)} is held by "
            f"{describe_holder(holder) if holder else 'another session'} (lease token "
            f"{token}) for {left_s:.1f} s more unless renewed: another live session is using "
            "it, and two writers would interleave. Close that session first; if its process "
            "died, the lease expires by itself and the conversation can be taken then (at once "
            "on the holder's own machine)",
            store=self._where,
            conversation_id=cid,
        )

    def _not_found(self, conversation_id: str) -> ConversationNotFound:
        return ConversationNotFound(
            f"{subject(self._where, None)}: no conversation {conversation_id!r} in this store: "
            "create it first (create() / open_conversation()), or check the id "
            "(list_conversations())",
            store=self._where,
            conversation_id=conversation_id,
        )
