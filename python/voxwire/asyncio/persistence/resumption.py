"""Resuming a stored conversation in a new session (``RealtimeSession.resume``).

A resumed session connects like any other, with the agent that was active when the
conversation was last recorded, then goes on where the conversation stopped:

1. the conversation is replayed on the new server session (not on a session attached by
   ``call_id`` to the SIP call the conversation is named after — ``conversation_id ==
   call_id``: the call's server session still holds it; a worker taking the call over,
   docs/telephony.md) — the items
   :func:`~voxwire.store.replay_items` keeps (an orphaned function call is left out, with what
   is tied only to it), made sendable by the same rules as after a reconnection
   (:func:`~voxwire.protocol.restoration.restoration_items`: audio as its transcript, each item
   with its old id, chained by ``previous_item_id``; an item of a response that was still in
   progress is left out unless it was complete) — and ``connect()`` returns once the server
   acknowledged every item (an item it refuses is reported as an ``error`` event);
2. every call that waited for an approval waits again: the tool runner takes it up from the
   start, so the application gets a ``tool_approval_requested`` event again and
   ``approve_tool_call`` / ``reject_tool_call`` work;
3. every tool output that was computed but not delivered is delivered — the tool does not run
   again — and, once the calls of that response are answered, the model is asked to go on,
   as it would have been.

The pure parts (which items, which calls) are functions here; :class:`ConversationStart` runs
the steps at ``connect()``.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

import msgspec

from voxwire.agents.agent import Handoff, RealtimeAgent
from voxwire.agents.tool import format_output
from voxwire.asyncio.agents.tools import ToolRunner
from voxwire.asyncio.errors import ConnectionFailed
from voxwire.asyncio.persistence.recording import Persistence
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import server_events as se
from voxwire.protocol.conversation import ROOT
from voxwire.protocol.ids import CounterIds
from voxwire.protocol.items import FunctionCallItem, Item
from voxwire.protocol.protocol import RealtimeProtocol
from voxwire.protocol.restoration import restoration_items
from voxwire.store import (
    ConversationStore,
    SessionSnapshot,
    StoredItem,
    conversation_state,
    replay_items,
)

__all__ = [
    "ConversationStart",
    "ResumeSource",
    "ResumedCall",
    "calls_to_resume",
    "find_agent",
    "items_to_replay",
    "resume_options",
]


#: What ``RealtimeSession.resume`` resumes from: a store (with the conversation id), a
#: snapshot, or a snapshot's JSON text.
ResumeSource: TypeAlias = "ConversationStore | SessionSnapshot | str"


def resume_options(
    source: ResumeSource, conversation_id: str | None, options: dict[str, Any]
) -> tuple[SessionSnapshot | None, tuple[RealtimeAgent, ...], dict[str, Any]]:
    """Check what ``RealtimeSession.resume`` was given: the snapshot to resume from (``None``:
    load it from the store at ``connect()``), the other agents (``agents=``) and the
    session's options."""
    options = dict(options)
    agents = tuple(options.pop("agents", ()))
    for other in agents:
        if not isinstance(other, RealtimeAgent):
            raise ConfigurationError(f"agents=: {other!r} is not a RealtimeAgent")
    if options.get("ids") is None:
        # The conversation holds the ids of the sessions before: a counter starting again at 1
        # would make them again (the server refuses an item id it has).
        options["ids"] = CounterIds(prefix=f"vx{secrets.token_hex(4)}")
    if isinstance(source, ConversationStore):
        if conversation_id is None:
            raise ConfigurationError(
                "RealtimeSession.resume(store) needs the conversation_id to resume: "
                "RealtimeSession.resume(store, 'the-id', agent=...)"
            )
        if options.get("store") not in (None, source):
            raise ConfigurationError(
                "RealtimeSession.resume(store, ..., store=other): a resumed conversation is "
                "recorded in the store it came from; leave store= out"
            )
        options.update(store=source, conversation_id=conversation_id)
        return None, agents, options
    if isinstance(source, str | bytes):
        source = SessionSnapshot.from_json(source)
    if not isinstance(source, SessionSnapshot):
        raise ConfigurationError(
            f"RealtimeSession.resume({source!r}): expected a ConversationStore (with the "
            "conversation_id), a SessionSnapshot or its JSON text (session.snapshot().to_json())"
        )
    if conversation_id not in (None, source.conversation_id):
        raise ConfigurationError(
            f"RealtimeSession.resume(snapshot, {conversation_id!r}): the snapshot is of "
            f"conversation {source.conversation_id!r}; leave conversation_id out"
        )
    options["conversation_id"] = source.conversation_id
    return source, agents, options


def find_agent(
    start: RealtimeAgent | None, others: Sequence[RealtimeAgent], name: str | None
) -> RealtimeAgent | None:
    """The agent called ``name``: ``start``, one of ``others``, or an agent reachable from them
    by handoffs (``None`` for ``name=None``: the conversation had no agent, ``start`` goes)."""
    if name is None:
        return start
    queue: list[RealtimeAgent] = [a for a in (start, *others) if a is not None]
    visited: set[int] = set()
    while queue:
        agent = queue.pop(0)
        if id(agent) in visited:
            continue
        visited.add(id(agent))
        if agent.name == name:
            return agent
        for target in agent.handoffs:
            queue.append(target.target() if isinstance(target, Handoff) else target)
    known = sorted({a.name for a in (start, *others) if a is not None})
    raise ConfigurationError(
        f"the conversation's active agent was {name!r}, which is not agent= nor reachable from "
        f"it by handoffs (known: {', '.join(known) or 'none'}): pass it as agent= or in agents="
    )


def items_to_replay(snapshot: SessionSnapshot) -> tuple[tuple[Item, ...], tuple[StoredItem, ...]]:
    """The items to create on the new server session, in order, and the stored items they come
    from (orphans and what cannot be re-created left out: module docstring, step 1)."""
    kept = replay_items(snapshot).items
    unfinished = {
        item.response_id
        for item in kept
        if item.response_id is not None and item.wire.get("status") == "in_progress"
    }
    items, _skipped = restoration_items(conversation_state(kept), unfinished)
    replayed = {item.id for item in items}
    return items, tuple(item for item in kept if item.id in replayed)


@dataclass(frozen=True)
class ResumedCall:
    """A call taken up again: ``output`` to deliver, or ``None`` to run it (its approval)."""

    call: FunctionCallItem
    response_id: str
    output: str | None


def calls_to_resume(snapshot: SessionSnapshot, replayed: Iterable[StoredItem]) -> list[ResumedCall]:
    """Calls that waited for an approval, and calls whose output was not delivered — of the
    replayed function calls that have no output in the conversation."""
    replayed = tuple(replayed)
    answered = {i.call_id for i in replayed if i.type == "function_call_output"}
    resumed: list[ResumedCall] = []
    for stored in replayed:
        call_id = stored.call_id
        if stored.type != "function_call" or call_id is None or call_id in answered:
            continue
        call = msgspec.convert(stored.wire, FunctionCallItem)
        response_id = stored.response_id or f"resumed:{call_id}"
        if call_id in snapshot.outputs:
            output = snapshot.outputs[call_id]
            text = output if isinstance(output, str) else format_output(output)
            resumed.append(ResumedCall(call, response_id, text))
        elif call_id in snapshot.approvals:
            resumed.append(ResumedCall(call, response_id, None))
    return resumed


class _Acknowledgements:
    """Waits until the server acknowledged (or refused) every replayed item (each event looked
    up by its item id or its event id: linear in the conversation's length)."""

    def __init__(self) -> None:
        self._by_item: dict[str, str] = {}  # item id -> create event id
        self._by_event: dict[str, str] = {}  # create event id -> item id
        self._done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def expect(self, event_id: str, item_id: str) -> None:
        self._by_item[item_id] = event_id
        self._by_event[event_id] = item_id

    def __call__(self, event: se.ReceivedEvent) -> None:
        if isinstance(event, se.ConversationItemAdded | se.ConversationItemCreated):
            event_id = self._by_item.pop(event.item.id or "", None)
            if event_id is not None:
                del self._by_event[event_id]
        elif isinstance(event, se.ErrorEvent):
            item_id = self._by_event.pop(event.error.event_id or "", None)
            if item_id is not None:
                del self._by_item[item_id]
        if not self._by_event and not self._done.done():
            self._done.set_result(None)

    async def wait(self, timeout_s: float) -> None:
        if self._by_event:
            await asyncio.wait_for(self._done, timeout_s)


class HistoryHold(Protocol):
    """Holds the session's ``history_updated`` events during the replay (the translator,
    asyncio/events/translate.py): one event for the whole replay."""

    def hold_history(self) -> None: ...

    def release_history(self) -> None: ...


class StartOptions(Protocol):
    """What the start reads of the session's options (:class:`~voxwire.asyncio.options.
    SessionOptions`)."""

    @property
    def open_timeout_s(self) -> float: ...

    @property
    def call_id(self) -> str | None: ...

    @property
    def conversation_id(self) -> str | None: ...


class ConversationStart:
    """How a session's conversation begins at ``connect()``: new (created in the store, if
    there is one), or resumed (:meth:`resume_from`; module docstring)."""

    def __init__(self, persistence: Persistence, options: StartOptions, history: HistoryHold):
        self._persistence = persistence
        # Attached by call_id to the SIP call the conversation is named after: the call's
        # server session already holds the conversation (a worker taking the call over).
        self._server_keeps = options.call_id is not None and (
            options.call_id == options.conversation_id
        )
        self._history = history
        self._timeout_s = options.open_timeout_s
        self._resuming = False
        self._snapshot: SessionSnapshot | None = None
        self._agents: Sequence[RealtimeAgent] = ()
        self._replayed: tuple[StoredItem, ...] = ()

    def resume_from(
        self, snapshot: SessionSnapshot | None, agents: Sequence[RealtimeAgent]
    ) -> None:
        """Resume ``snapshot`` (``None``: the session's conversation in its store); the active
        agent is looked up among the session's agent, ``agents`` and their handoffs."""
        self._resuming = True
        self._snapshot = snapshot
        self._agents = tuple(agents)

    async def before_open(self, agent: RealtimeAgent | None) -> RealtimeAgent | None:
        """Before the connection opens: the conversation created, or loaded and taken up by the
        recorder; the agent to start with."""
        persistence = self._persistence
        if not self._resuming:
            await persistence.start_new(agent)
            return agent
        imported = self._snapshot is not None
        if self._snapshot is None:
            store, conversation_id = persistence.store, persistence.conversation_id
            assert store is not None
            assert conversation_id is not None
            await persistence.take(conversation_id)  # first: nobody writes between load and replay
            self._snapshot = await store.load(conversation_id)
        started = find_agent(agent, self._agents, self._snapshot.agent)
        await persistence.start_resumed(self._snapshot, imported=imported)
        return started

    async def after_open(
        self,
        protocol: RealtimeProtocol,
        flush: Callable[[], Awaitable[None]],
        tools: ToolRunner,
    ) -> None:
        """After the first ``session.update``: replay, then take the calls up again."""
        if self._snapshot is None:
            return
        if self._server_keeps:
            self._replayed = items_to_replay(self._snapshot)[1]
        else:
            self._history.hold_history()
            try:
                await self._replay(protocol, flush)
            finally:
                self._history.release_history()
        for resumed in calls_to_resume(self._snapshot, self._replayed):
            self._persistence.remember_call(resumed.call)
            tools.resume_call(resumed.call, resumed.response_id, resumed.output)
        self._snapshot = None  # delivered to the new server; the recorder goes on from here

    async def _replay(
        self, protocol: RealtimeProtocol, flush: Callable[[], Awaitable[None]]
    ) -> None:
        assert self._snapshot is not None
        items, self._replayed = items_to_replay(self._snapshot)
        acks = _Acknowledgements()
        listeners = self._persistence.listeners
        listeners.append(acks)
        try:
            previous = ROOT
            for item in items:
                create = protocol.send_item_create(item, previous_item_id=previous)
                assert create.event_id is not None
                assert item.id is not None
                acks.expect(create.event_id, item.id)
                previous = item.id
            await flush()
            await acks.wait(self._timeout_s)
        except asyncio.TimeoutError:
            raise ConnectionFailed(
                "the server did not acknowledge the replayed conversation within "
                f"{self._timeout_s:g} s"
            ) from None
        finally:
            listeners.remove(acks)
