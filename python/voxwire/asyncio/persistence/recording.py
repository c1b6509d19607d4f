"""The session's persistence part: its conversation recorded as the server confirms it.

:class:`Persistence` is one of the session's parts (``on_server_event``). Every server event goes
to the sans-I/O :class:`~voxwire.store.ConversationRecorder`; the store operations it returns
are written by a :class:`StoreWriter` — in order, one transaction per batch, in a task of its
own, so the receive loop never waits for a disk or a database. What only the session knows
reaches the recorder too: the active agent (from the agent switcher), approvals and tool
outputs (from the tool runner, as its :class:`~voxwire.asyncio.agents.tools.ToolObserver`). A tool
output is written *before* it is sent (the runner awaits :meth:`Persistence.output_ready`), so
a process that dies after sending it leaves it in the store, and a resumed session delivers it
without running the tool again.

Without a store the recorder runs all the same: ``session.snapshot()`` returns the conversation as
a :class:`~voxwire.store.SessionSnapshot` either way. A write that fails becomes an ``error``
event (``source="store"``); the session goes on.

Items re-created on a new server session (the replay of a resumed conversation, or the
restoration after a reconnection) come back as ``conversation.item.added`` for ids already
recorded: those echoes are not recorded again, so the stored item keeps the form the server
first gave it (audio parts with their transcripts, not the text a replay has to send).
Resumption itself is in :mod:`voxwire.asyncio.persistence.resumption`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Protocol

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent
from voxwire.exceptions import ConversationExists, InvalidState
from voxwire.protocol import server_events as se
from voxwire.protocol.items import FunctionCallItem
from voxwire.store import (
    AudioPolicy,
    ConversationRecorder,
    ConversationStore,
    HeldConversation,
    SessionSnapshot,
    StoreOp,
)

__all__ = ["Persistence", "SessionPersistence", "StoreWriter"]

log = logging.getLogger("voxwire.session")

_ITEM_EVENTS = (se.ConversationItemAdded, se.ConversationItemCreated)

#: Function calls remembered for an approval that may come (the most recent ones).
_CALLS_KEPT = 64


class StoreWriter:
    """Writes the operations of one conversation in the order they were submitted, in a task of
    its own (started when there is something to write; owned here, awaited by :meth:`aclose`).
    Batches queued while a write runs go together in the next transaction."""

    def __init__(
        self,
        store: ConversationStore,
        conversation_id: str,
        failed: Callable[[BaseException], None],
        held: HeldConversation | None = None,
    ) -> None:
        self._store = store
        self._held = held
        self._conversation_id = conversation_id
        self._failed = failed
        self._queued: list[tuple[Sequence[StoreOp], asyncio.Future[None] | None]] = []
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def submit(self, ops: Sequence[StoreOp], *, wait: bool = False) -> asyncio.Future[None] | None:
        """Queue ``ops``; with ``wait``, a future done once they are written (or failed: the
        failure is reported, not raised)."""
        if self._closed:
            log.debug("store write after close dropped: %s", ops)
            return None
        future = asyncio.get_running_loop().create_future() if wait else None
        self._queued.append((ops, future))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._drain(), name="voxwire-client-store-writer")
        return future

    async def _drain(self) -> None:
        while self._queued:
            batch, self._queued = self._queued, []
            ops = [op for ops, _ in batch for op in ops]
            try:
                lease = self._held.lease if self._held is not None else None
                await self._store.apply(self._conversation_id, ops, lease=lease)
            except Exception as exc:
                log.error("writing to the conversation store failed", exc_info=exc)
                self._failed(exc)
            finally:
                for _, future in batch:
                    if future is not None and not future.done():
                        future.set_result(None)

    async def aclose(self, timeout_s: float) -> None:
        """Write what is queued (for at most ``timeout_s``), then stop. Idempotent."""
        self._closed = True
        task = self._task
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout_s)
        except asyncio.TimeoutError:
            self._failed(TimeoutError(f"the store did not finish writing within {timeout_s:g} s"))
            task.cancel()
            await asyncio.wait([task])


class PersistenceOptions(Protocol):
    """What persistence reads of the session's options (:class:`~voxwire.asyncio.options.
    SessionOptions`)."""

    @property
    def store(self) -> ConversationStore | None: ...

    @property
    def conversation_id(self) -> str | None: ...

    @property
    def store_audio(self) -> AudioPolicy | None: ...

    @property
    def close_timeout_s(self) -> float: ...

    @property
    def lease_ttl_s(self) -> float: ...

    @property
    def max_history_items(self) -> int | None: ...


class Persistence:
    """The recorder and the store of one session (see the module docstring)."""

    def __init__(
        self, options: PersistenceOptions, emit: Callable[[ev.SessionEvent], None]
    ) -> None:
        self.store = options.store
        self._conversation_id = options.conversation_id
        self._audio = options.store_audio
        self._close_timeout_s = options.close_timeout_s
        self._lease_ttl_s = options.lease_ttl_s
        self._max_items = options.max_history_items
        self._held: HeldConversation | None = None
        self._emit = emit
        self.recorder: ConversationRecorder | None = None
        self._writer: StoreWriter | None = None
        self._replaying: set[str] = set()  # ids of a resumed conversation not echoed yet
        self._echoes: set[str] = set()
        self._calls: dict[str, FunctionCallItem] = {}
        self.listeners: list[Callable[[se.ReceivedEvent], None]] = []
        """Also given every event (the replay of a resumed conversation waits on them)."""

    @property
    def conversation_id(self) -> str | None:
        return self.recorder.conversation_id if self.recorder is not None else self._conversation_id

    def snapshot(self) -> SessionSnapshot:
        """``RealtimeSession.snapshot()``."""
        if self.recorder is None:
            raise InvalidState(
                "snapshot() before connect(): the conversation starts when the session connects"
            )
        return self.recorder.snapshot(datetime.now(timezone.utc))

    # --- starting ---------------------------------------------------------------------------------

    async def start_new(self, agent: RealtimeAgent | None) -> None:
        """A new conversation (before the connection opens): created in the store (an empty
        stored one is taken over), or in memory only."""
        name = agent.name if agent is not None else None
        store = self.store
        if store is None:
            conversation_id = self._conversation_id or f"conv_{uuid.uuid4().hex}"
            self._begin(
                ConversationRecorder(
                    conversation_id, datetime.now(timezone.utc), max_items=self._max_items
                )
            )
        else:
            if self._conversation_id is None:
                info = await store.create(agent=name)
            else:
                info = await store.open_conversation(self._conversation_id, agent=name)
            if info.item_count:
                raise ConversationExists(
                    f"conversation {info.conversation_id!r} already holds {info.item_count} "
                    "item(s): go on with it with RealtimeSession.resume(store, "
                    f"{info.conversation_id!r}, ...), or pick a new conversation_id"
                )
            await self.take(info.conversation_id)
            self._begin(
                ConversationRecorder(
                    info.conversation_id,
                    info.created_at,
                    audio=self._audio,
                    max_items=self._max_items,
                )
            )
        assert self.recorder is not None
        self._write(self.recorder.set_agent(name))

    async def start_resumed(self, snapshot: SessionSnapshot, *, imported: bool) -> None:
        """Go on from ``snapshot`` (``imported``: it did not come from the store, and is put
        there, over what the store holds under its id)."""
        if imported and self.store is not None:
            await self.store.import_snapshot(snapshot, replace=True)
            await self.take(snapshot.conversation_id)
        self._begin(
            ConversationRecorder.from_snapshot(
                snapshot, audio=self._audio, max_items=self._max_items
            )
        )
        self._replaying.update(item.id for item in snapshot.items)

    async def take(self, conversation_id: str) -> None:
        """Hold the conversation's lease (renewed until :meth:`aclose`): another session is
        refused while this one lives, and this one's writes stop if it is ever taken over."""
        if self.store is not None and self._held is None:
            self._held = await self.store.hold(
                conversation_id, ttl_s=self._lease_ttl_s, on_lost=self._write_failed
            )

    def _begin(self, recorder: ConversationRecorder) -> None:
        self.recorder = recorder
        if self.store is not None:
            self._writer = StoreWriter(
                self.store, recorder.conversation_id, self._write_failed, self._held
            )

    async def aclose(self) -> None:
        """Finish the writes and give the conversation's lease back (the store stays open: it
        is the application's)."""
        if self._writer is not None:
            await self._writer.aclose(self._close_timeout_s)
        if self._held is not None:
            await self._held.release()

    # --- what happens -----------------------------------------------------------------------------

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        for listener in self.listeners:
            listener(event)
        recorder = self.recorder
        if recorder is None or self._is_echo(event):
            return
        if (
            isinstance(event, se.ResponseOutputItemDone)
            and isinstance(event.item, FunctionCallItem)
            and event.item.call_id is not None
        ):
            self._calls[event.item.call_id] = event.item
            if len(self._calls) > _CALLS_KEPT:
                del self._calls[next(iter(self._calls))]
        self._write(recorder.receive(event))

    def _is_echo(self, event: se.ReceivedEvent) -> bool:
        """An item re-created on a new server session, already recorded (module docstring): one
        of the resumed conversation, or one the recorder holds."""
        if isinstance(event, _ITEM_EVENTS):
            item_id = event.item.id
            if item_id is None or self.recorder is None:
                return False
            if item_id in self._replaying or self.recorder.holds(item_id):
                self._replaying.discard(item_id)
                self._echoes.add(item_id)
                return True
            return False
        if isinstance(event, se.ConversationItemDone) and event.item.id in self._echoes:
            self._echoes.discard(event.item.id)
            return True
        return False

    def agent_started(self, name: str) -> None:
        """The agent ``name`` became active (at start, by a handoff or ``update_agent``)."""
        if self.recorder is not None:
            self._write(self.recorder.set_agent(name))

    def approval_pending(self, call_id: str, name: str, arguments: str) -> None:
        if self.recorder is None:
            return
        call = self._calls.get(call_id) or FunctionCallItem(
            name=name, arguments=arguments, call_id=call_id
        )
        self._write(self.recorder.approval_pending(call))

    def approval_resolved(self, call_id: str) -> None:
        if self.recorder is not None:
            self._write(self.recorder.approval_resolved(call_id))

    async def output_ready(self, call_id: str, output: str) -> None:
        """Recorded, and written to the store, before the output is sent."""
        if self.recorder is None:
            return
        self._calls.pop(call_id, None)
        ops = self.recorder.output_ready(call_id, output)
        written = self._writer.submit(ops, wait=True) if self._writer is not None else None
        if written is not None:
            await written

    def remember_call(self, call: FunctionCallItem) -> None:
        """A call of a resumed conversation that waits for an approval again."""
        if call.call_id is not None:
            self._calls[call.call_id] = call

    def record(self, ops: list[StoreOp]) -> None:
        """Write what the recorder returned for something the session itself recorded (a
        GPT-Live session's items: ``ConversationRecorder.record_item``)."""
        self._write(ops)

    def _write(self, ops: list[StoreOp]) -> None:
        if ops and self._writer is not None:
            self._writer.submit(ops)

    def _write_failed(self, exc: BaseException) -> None:
        self._emit(ev.failure("writing the conversation to the store", exc, "store"))


class SessionPersistence:
    """``RealtimeSession``'s persistence methods (a mixin, like ``SessionReading``)."""

    _persistence: Persistence

    def snapshot(self) -> SessionSnapshot:
        """The conversation so far as a :class:`~voxwire.store.SessionSnapshot` (versioned,
        ``to_json()`` / ``from_json()``): items in order with their ids, transcripts and
        truncations, the active agent, calls waiting for an approval, tool outputs computed
        but not yet delivered, usage totals. With or without a store; raises
        :class:`~voxwire.exceptions.InvalidState` before ``connect()``. Give it to
        ``RealtimeSession.resume`` to go on in another process (docs/persistence.md)."""
        return self._persistence.snapshot()

    @property
    def conversation_id(self) -> str | None:
        """The id of the conversation in the store (or of the snapshot): the one given, or
        the one made at ``connect()``; ``None`` before that if none was given."""
        return self._persistence.conversation_id
