"""A Live session's conversation in a :class:`~voxwire.store.ConversationStore` (the stores
``RealtimeSession`` records into: SQLite, PostgreSQL), and what a resumed one starts from.

The machinery is the Realtime session's: :class:`~voxwire.asyncio.persistence.recording.
Persistence` (the conversation created or taken over in the store, its lease held while the
session lives, writes in order in a task of their own, ``snapshot()``) and its
:class:`~voxwire.store.ConversationRecorder` (positions, writes only of what changed). A Live
session has no server items, so :class:`LiveRecording` makes them, each in a form the Live or
Responses API itself uses (``StoredItem.wire``):

* what the user said, and what the listener *heard* of the assistant: a ``message`` (role
  ``user``, ``input_text``; role ``assistant``, ``output_text``), the form of Live's initial
  items. A stretch is written when the other side starts, when anything else is recorded (so
  the order holds), and at close: a process that dies loses at most the stretch in progress;
* a delegation: the ``delegation`` object of ``session.delegation.created`` as the server sent
  it (origin ``model``);
* the Responses backend's ``function_call`` items as they arrived in ``response.event``
  (origin ``model``, with the backend's response id), and the outputs the session sent back:
  ``function_call_output`` (origin ``sdk``);
* a client delegation's answer: the ``session.commentary.append`` / ``session.thinking.append``
  command as sent (origin ``sdk``).

Resuming (:func:`initial_items`): a Live session cannot be given items back, only initial
history (``session.start`` ``input``: developer, user and assistant messages). The messages go
as they are; a call with its output, and a delegation's answer, become a developer message
saying what happened. Delegations that were in progress are not resumed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent
from voxwire.asyncio.live.events import LiveHistoryItem
from voxwire.asyncio.persistence.recording import Persistence
from voxwire.exceptions import ConversationExists
from voxwire.store import DEFAULT_LEASE_TTL_S, ConversationStore, SessionSnapshot

__all__ = ["LiveRecording", "history_of", "initial_items"]

_CONTENT: Final = {"user": "input_text", "assistant": "output_text"}


@dataclass(frozen=True)
class _Options:
    """What :class:`Persistence` reads (``PersistenceOptions``)."""

    store: ConversationStore | None
    conversation_id: str | None
    store_audio: None = None  # a Live session records no audio
    close_timeout_s: float = 5.0
    lease_ttl_s: float = DEFAULT_LEASE_TTL_S
    max_history_items: None = None  # the Live session's history is not bounded


class LiveRecording:
    """The conversation of one :class:`~voxwire.asyncio.live.LiveSession`, recorded as it goes
    (with or without a store: ``snapshot()`` works either way)."""

    def __init__(
        self,
        store: ConversationStore | None,
        conversation_id: str | None,
        emit: Callable[[ev.SessionEvent], None],
    ) -> None:
        self._persistence = Persistence(_Options(store, conversation_id), emit)
        self._open: tuple[int, str, LiveHistoryItem] | None = None  # history index, item id
        self._closed = False
        self._earlier_s = 0.0  # billed time of the sessions that held the conversation before

    @property
    def conversation_id(self) -> str | None:
        return self._persistence.conversation_id

    async def start(self, agent: RealtimeAgent, resume: str | None) -> SessionSnapshot | None:
        """A new conversation, or the stored one ``resume`` (its snapshot: what to go on from)."""
        persistence = self._persistence
        if resume is None:
            try:
                await persistence.start_new(agent)
            except ConversationExists as exc:
                raise ConversationExists(
                    f"{exc}. A Live conversation goes on with LiveSession.resume(store, "
                    "conversation_id, agent)",
                    store=exc.store,
                    conversation_id=exc.conversation_id,
                ) from None
            return None
        assert persistence.store is not None
        await persistence.take(resume)
        snapshot = await persistence.store.load(resume)
        await persistence.start_resumed(snapshot, imported=False)
        persistence.agent_started(agent.name)
        self._earlier_s = snapshot.usage.live_seconds
        return snapshot

    def billed(self, seconds: float) -> None:
        """The server's ``session.usage`` says this session has billed ``seconds`` so far."""
        recorder = self._persistence.recorder
        if recorder is not None:
            self._persistence.record(recorder.set_live_seconds(self._earlier_s + seconds))

    def said(self, index: int, item: LiveHistoryItem) -> None:
        """The history's stretch ``index`` is now ``item`` (written when it ends)."""
        if self._open is not None and self._open[0] != index:
            self._write_open()
        item_id = self._open[1] if self._open is not None else _new_id()
        self._open = (index, item_id, item)

    def delegation(self, info: dict[str, Any]) -> None:
        self._item(str(info["id"]), info, "model")

    def backend_item(self, item: dict[str, Any], response_id: str | None) -> None:
        """An item of the Responses backend's output (its function calls)."""
        item_id = str(item.get("id") or item.get("call_id") or _new_id())
        self._item(item_id, {**item, "id": item_id}, "model", response_id)

    def output(self, call_id: str, output: str) -> None:
        item_id = _new_id()
        wire = {"id": item_id, "type": "function_call_output", "call_id": call_id, "output": output}
        self._item(item_id, wire, "sdk")

    def answer(self, delegation_id: str, text: str, spoken: bool) -> None:
        item_id = _new_id()
        kind = "session.commentary.append" if spoken else "session.thinking.append"
        wire = {"id": item_id, "type": kind, "content": text, "delegation_id": delegation_id}
        self._item(item_id, wire, "sdk")

    def snapshot(self) -> SessionSnapshot:
        self._write_open(keep=True)
        return self._persistence.snapshot()

    async def aclose(self) -> None:
        """Write the stretch in progress and what is queued; give the lease back. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._persistence.recorder is not None:
            self._write_open()
        await self._persistence.aclose()

    def _item(
        self,
        item_id: str,
        wire: dict[str, Any],
        origin: Literal["model", "sdk"],
        response_id: str | None = None,
    ) -> None:
        self._write_open(keep=True)
        recorder = self._persistence.recorder
        if recorder is not None:
            self._persistence.record(
                recorder.record_item(item_id, wire, origin=origin, response_id=response_id)
            )

    def _write_open(self, *, keep: bool = False) -> None:
        recorder = self._persistence.recorder
        if self._open is None or recorder is None:
            return
        _, item_id, item = self._open
        wire = {
            "id": item_id,
            "type": "message",
            "role": item.role,
            "content": [{"type": _CONTENT[item.role], "text": item.text}],
        }
        origin: Literal["model", "caller"] = "model" if item.role == "assistant" else "caller"
        self._persistence.record(recorder.record_item(item_id, wire, origin=origin))
        if not keep:
            self._open = None


def _new_id() -> str:
    return f"item_{uuid.uuid4().hex[:21]}"


def history_of(snapshot: SessionSnapshot) -> list[LiveHistoryItem]:
    """The user and assistant messages of a stored conversation, as the session's history
    (their timeline places are not stored: 0)."""
    history: list[LiveHistoryItem] = []
    for stored in snapshot.items:
        text = _message_text(stored.wire)
        if text is not None and stored.role == "user":
            history.append(LiveHistoryItem("user", text, 0, 0))
        elif text is not None and stored.role == "assistant":
            history.append(LiveHistoryItem("assistant", text, 0, 0))
    return history


def initial_items(snapshot: SessionSnapshot) -> list[dict[str, Any]]:
    """A stored conversation as a new Live session's initial history (module docstring)."""
    items: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    for stored in snapshot.items:
        wire = stored.wire
        kind = wire.get("type")
        text = _message_text(wire)
        if text is not None and stored.role in _CONTENT:
            items.append({**_message(stored.role or "user", text), "id": stored.id})
        elif kind == "function_call":
            calls[str(wire.get("call_id"))] = wire
        elif kind == "function_call_output":
            call = calls.pop(str(wire.get("call_id")), {})
            note = (
                f"Earlier in this conversation the tool {call.get('name', 'unknown')!s} was "
                f"called with {call.get('arguments', '{}')!s} and returned: {wire.get('output')}"
            )
            items.append(_message("developer", note))
        elif kind in ("session.commentary.append", "session.thinking.append"):
            note = (
                f"Earlier in this conversation a delegated task was answered: {wire.get('content')}"
            )
            items.append(_message("developer", note))
    return items


def _message(role: str, text: str) -> dict[str, Any]:
    content_type = _CONTENT.get(role, "input_text")
    return {"type": "message", "role": role, "content": [{"type": content_type, "text": text}]}


def _message_text(wire: dict[str, Any]) -> str | None:
    if wire.get("type") != "message":
        return None
    parts = wire.get("content")
    if not isinstance(parts, list):
        return None
    texts = [p.get("text") or p.get("transcript") for p in parts if isinstance(p, dict)]
    return "".join(t for t in texts if isinstance(t, str)) or None
