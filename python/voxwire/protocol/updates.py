"""``session.update`` events from sent to settled: the rules first, then the bookkeeping.

``session.updated`` carries no ``event_id``; the server answers updates in the order it reads
them. An ``error`` names the ``event_id`` of the update it rejects. So:

==================  ==========================================  ===================
state               trigger                                     next state
==================  ==========================================  ===================
SENT                ``session.updated`` (oldest still SENT)     ACKNOWLEDGED
SENT                ``error`` naming its event_id               REJECTED
SENT                the connection is lost                      LOST
==================  ==========================================  ===================

:class:`UpdateTracker` is the one place that matches answers to updates; the protocol core
feeds it and hands the settled records out (``RealtimeProtocol.updates_settled()``), so the I/O
layer waits for an update by its ``event_id`` and never matches answers itself.

:class:`SessionUpdateLog` keeps the application's changes to be made again on a new server
session after a lost connection (fed by the protocol core when one is given to it).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from voxwire.protocol.config import SessionConfig

__all__ = ["SessionUpdateLog", "UpdateOrigin", "UpdateRecord", "UpdateState", "UpdateTracker"]

UpdateOrigin = Literal["application", "agent", "session", "replay"]
"""Who sent an update: the application (``update_session``, a raw ``session.update``); the
session switching its agent (``update_agent``, a handoff); the session configuring a new server
session (the first update, and the one a resumption starts with); or a replay of the
application's changes on a new server session."""


class UpdateState(enum.Enum):
    SENT = "sent"
    ACKNOWLEDGED = "acknowledged"
    REJECTED = "rejected"
    LOST = "lost"


@dataclass
class UpdateRecord:
    """One ``session.update`` as sent, and how it ended."""

    event_id: str
    config: SessionConfig
    origin: UpdateOrigin
    state: UpdateState = UpdateState.SENT
    error_message: str | None = None
    """The server's message when it was rejected (``param`` appended when it named one)."""
    log_mark: int = 0
    """Where it falls among the application's logged updates (see :class:`SessionUpdateLog`)."""


class UpdateTracker:
    """The updates of one connection not answered yet, oldest first, and those settled since
    the last :meth:`settled` call."""

    def __init__(self) -> None:
        self._in_flight: dict[str, UpdateRecord] = {}
        self._settled: list[UpdateRecord] = []

    @property
    def in_flight(self) -> tuple[UpdateRecord, ...]:
        return tuple(self._in_flight.values())

    def sent(self, record: UpdateRecord) -> None:
        self._in_flight[record.event_id] = record

    def acknowledged(self) -> UpdateRecord | None:
        """A ``session.updated`` arrived: it answers the oldest update in flight (``None`` for
        one nobody here is waiting for, such as the answer to a raw event of another client)."""
        if not self._in_flight:
            return None
        event_id = next(iter(self._in_flight))
        return self._settle(event_id, UpdateState.ACKNOWLEDGED)

    def rejected(self, event_id: str | None, message: str) -> UpdateRecord | None:
        """An ``error`` named ``event_id``: the update it names failed (``None`` if it names no
        update in flight)."""
        if event_id is None or event_id not in self._in_flight:
            return None
        record = self._settle(event_id, UpdateState.REJECTED)
        record.error_message = message
        return record

    def lost(self) -> list[UpdateRecord]:
        """The connection is gone: every update in flight ends unanswered."""
        return [self._settle(event_id, UpdateState.LOST) for event_id in list(self._in_flight)]

    def settled(self) -> list[UpdateRecord]:
        """The updates settled since the last call, in the order they were settled."""
        records, self._settled = self._settled, []
        return records

    def _settle(self, event_id: str, state: UpdateState) -> UpdateRecord:
        record = self._in_flight.pop(event_id)
        record.state = state
        self._settled.append(record)
        return record


@dataclass
class _LoggedUpdate:
    number: int  # counts every update logged, from 0: its place among the agent changes
    event_id: str  # of its latest sending (a replay sends it under a new event_id)
    config: SessionConfig


class SessionUpdateLog:
    """The application's ``session.update`` changes, kept to be made again on a new server
    session (the session's ``update_session()`` and raw session updates; not the agents'
    updates, which the session knows how to make itself).

    ``session.update`` is a patch the server merges into the session, so the new server ends up
    as the lost one was when it gets the same patches in the same order. The agent's
    configuration goes first on a new server (the resumption's own update), so the replay
    (:meth:`replay`) is: the updates sent before the last agent change, then — only if there
    were any — the current agent's update again (it had overridden them on the lost server),
    then the updates sent after it.

    * An update the server rejected (an ``error`` naming its ``event_id``: :meth:`rejected`)
      changed nothing and is dropped: it is not replayed.
    * An update not answered when the connection was lost is replayed (the lost server may have
      applied it; applying a patch again is harmless, and the order is kept).
    * Memory: every accepted update is kept, one :class:`~voxwire.protocol.SessionConfig` per
      call, for the session's life. They are small (a few hundred bytes, more with long
      instructions or many tools) and an application sends few. They are not merged: the
      server's merge rules for nested objects (``audio``, turn detection changing type) are the
      server's, not the protocol's, and a merge that differed would configure the new server
      differently.
    """

    def __init__(self) -> None:
        self._updates: list[_LoggedUpdate] = []
        self._count = 0
        self._agent_mark = 0  # updates numbered below it were sent before the last agent change
        self._agent_config: SessionConfig | None = None

    def __len__(self) -> int:
        return len(self._updates)

    def sent(self, event_id: str, config: SessionConfig) -> None:
        """The application sent ``config`` as the ``session.update`` ``event_id``."""
        self._updates.append(_LoggedUpdate(self._count, event_id, config))
        self._count += 1

    def rejected(self, event_id: str | None) -> None:
        """The server rejected the update ``event_id`` (other event ids are ignored)."""
        self._updates = [u for u in self._updates if u.event_id != event_id]

    def mark(self) -> int:
        """Where an agent change being sent now falls among the updates (pass it to
        :meth:`agent_applied` once the server accepted the change)."""
        return self._count

    def agent_applied(self, mark: int, config: SessionConfig) -> None:
        """The server accepted the agent change sent as ``config`` at ``mark``: updates sent
        before it were overridden by it where they overlap."""
        self._agent_mark = mark
        self._agent_config = config

    def replay(self, send: Callable[[SessionConfig], str]) -> int:
        """Send the updates again, in the order described above (``send`` queues one and
        returns its event_id); how many of the application's updates went."""
        before = [u for u in self._updates if u.number < self._agent_mark]
        after = [u for u in self._updates if u.number >= self._agent_mark]
        for update in before:
            update.event_id = send(update.config)
        if before:
            assert self._agent_config is not None  # a mark above 0 comes with its agent
            send(self._agent_config)
        for update in after:
            update.event_id = send(update.config)
        return len(before) + len(after)
