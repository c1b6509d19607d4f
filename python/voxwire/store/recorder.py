"""From the server's events to store operations: what a session forwards, what a store writes.

:class:`ConversationRecorder` is sans-I/O. The session hands it every server event it receives
(:meth:`~ConversationRecorder.receive`) and tells it what only the session knows — the active
agent, approvals, tool outputs computed but not yet delivered — and gets back the
:mod:`store operations <voxwire.store.ops>` to apply, in order::

    ops = recorder.receive(event)
    if ops:
        await store.apply(conversation_id, ops)

An item is written when the server confirms it (``conversation.item.added``) and again when
something about it becomes final (``*.done``, a transcript, a truncation, ``response.done``),
only if the stored row changed; deltas are never written, so a crash loses at most what was in
flight. The recorder follows the server's order exactly as
:class:`~voxwire.protocol.ConversationState` does (after ``previous_item_id``; ``None`` or
``"root"`` first; an unknown predecessor puts the item last) and gives each item a sortable
``position``: appended items get the last position plus :data:`POSITION_GAP`, inserted ones the
middle of their neighbours'; when no integer is left between two neighbours every item is
renumbered (:class:`~voxwire.store.ops.MoveItems`).

Memory: the items touched last are held as structs, older ones packed (one msgpack ``bytes``
each, :mod:`voxwire.store._table`), so :meth:`~ConversationRecorder.snapshot` is the whole
conversation without I/O at a fraction of the decoded size. ``max_items`` holds at most that
many items (the first ones in the conversation are forgotten, after their last changes are
written): the store keeps them all, :meth:`~ConversationRecorder.snapshot` has the last ones.

Audio is not recorded unless :class:`AudioPolicy` says so; then the output audio deltas of each
item are collected up to ``max_bytes_per_item`` (the beginning is kept; the rest is not
recorded) and written with the item's next write (``response.output_audio.done`` at the latest).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

import msgspec
from msgspec import Struct

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import server_events as se
from voxwire.protocol.codec import raw_fields
from voxwire.protocol.conversation import ROOT
from voxwire.protocol.items import FunctionCallItem, FunctionCallOutputItem, Item
from voxwire.store._table import ItemTable
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
from voxwire.store.snapshot import Origin, SessionSnapshot, StoredItem, UsageTotals

__all__ = ["POSITION_GAP", "AudioPolicy", "ConversationRecorder"]

#: Distance between the positions of two items appended one after the other.
POSITION_GAP: Final = 1 << 20

_Key = tuple[str, int]

#: Entries kept for items not (yet) recorded — their response, early transcripts, the calls of
#: outputs the SDK computed — the most recent ones (output of out-of-band responses never is).
_PENDING_KEPT: Final = 64


class AudioPolicy(Struct, frozen=True, kw_only=True):
    """Whether item audio is stored, and how much of it per item (bytes, all parts together).
    Off by default: audio is large, and a replay sends transcripts, not audio."""

    record: bool = False
    max_bytes_per_item: int = 4_800_000  # 100 s of 24 kHz PCM16

    def __post_init__(self) -> None:
        if self.max_bytes_per_item <= 0:
            raise ConfigurationError(
                f"AudioPolicy.max_bytes_per_item={self.max_bytes_per_item}: must be > 0 "
                "(use record=False to store no audio)"
            )


class ConversationRecorder:
    """Turns server events (and the session's own decisions) into store operations.

    Start it empty for a new conversation, or from the :class:`SessionSnapshot` a resumed
    session was built from (:meth:`from_snapshot`), so that it goes on where the store left off.
    ``max_items``: hold at most this many items (module docstring); ``None``: all.
    """

    def __init__(
        self,
        conversation_id: str,
        created_at: datetime,
        *,
        audio: AudioPolicy | None = None,
        max_items: int | None = None,
    ) -> None:
        self._conversation_id = conversation_id
        self._created_at = created_at
        self._audio_policy = audio if audio is not None else AudioPolicy()
        self._max_items = max_items
        self._order: list[str] = []
        self._items = ItemTable()  # the conversation as known now, and as last written
        self._forgotten: tuple[int, int] | None = None  # positions: first and last forgotten
        self._response_of: dict[str, str] = {}  # of output items not recorded yet
        self._early_transcripts: dict[_Key, str] = {}
        self._audio: dict[str, dict[int, bytearray]] = {}
        self._agent: str | None = None
        self._approvals: dict[str, dict[str, Any]] = {}
        self._outputs: dict[str, Any] = {}
        self._sdk_output_calls: dict[str, None] = {}
        self._usage = UsageTotals()
        self._handlers: dict[type, Callable[[Any], list[StoreOp]]] = {
            se.ConversationItemAdded: self._on_item_event,
            se.ConversationItemCreated: self._on_item_event,
            se.ConversationItemDone: self._on_item_event,
            se.ConversationItemRetrieved: self._on_item_retrieved,
            se.ConversationItemDeleted: self._on_item_deleted,
            se.ConversationItemTruncated: self._on_item_truncated,
            se.ResponseOutputItemAdded: self._on_output_item,
            se.ResponseOutputItemDone: self._on_output_item,
            se.ResponseOutputAudioTranscriptDone: self._on_transcript_done,
            se.ResponseOutputTextDone: self._on_transcript_done,
            se.ResponseContentPartDone: self._on_transcript_done,
            se.InputAudioTranscriptionCompleted: self._on_transcript_done,
            se.ResponseOutputAudioTranscriptDelta: self._on_transcript_delta,
            se.ResponseOutputTextDelta: self._on_transcript_delta,
            se.InputAudioTranscriptionDelta: self._on_transcript_delta,
            se.ResponseOutputAudioDelta: self._on_audio_delta,
            se.ResponseOutputAudioDone: self._on_audio_done,
            se.ResponseDone: self._on_response_done,
        }

    @classmethod
    def from_snapshot(
        cls,
        snapshot: SessionSnapshot,
        *,
        audio: AudioPolicy | None = None,
        max_items: int | None = None,
    ) -> ConversationRecorder:
        """A recorder that goes on from ``snapshot`` (a resumed conversation)."""
        recorder = cls(
            snapshot.conversation_id, snapshot.created_at, audio=audio, max_items=max_items
        )
        for item in snapshot.items:
            recorder._order.append(item.id)
            recorder._items.set(item)
            recorder._items.written(item)
            recorder._items.pack_old()  # all written: nothing to write
        recorder._settle()  # written too: forgetting writes nothing
        recorder._agent = snapshot.agent
        recorder._approvals = dict(snapshot.approvals)
        recorder._outputs = dict(snapshot.outputs)
        recorder._sdk_output_calls = dict.fromkeys(snapshot.outputs)
        recorder._usage = snapshot.usage
        return recorder

    @property
    def conversation_id(self) -> str:
        return self._conversation_id

    def holds(self, item_id: str) -> bool:
        """Whether the item is recorded and held here (not deleted, not forgotten)."""
        return item_id in self._items

    def snapshot(self, updated_at: datetime) -> SessionSnapshot:
        """Everything recorded so far, as one snapshot (what ``session.snapshot()`` returns)."""
        return SessionSnapshot(
            conversation_id=self._conversation_id,
            created_at=self._created_at,
            updated_at=updated_at,
            agent=self._agent,
            items=self._items.in_order(self._order),
            approvals=dict(self._approvals),
            outputs=dict(self._outputs),
            usage=self._usage,
        )

    # --- what the session tells -------------------------------------------------------------------

    def receive(self, event: se.ReceivedEvent) -> list[StoreOp]:
        """The store operations one server event calls for (often none)."""
        handler = self._handlers.get(type(event))
        if handler is None:
            return []
        ops = handler(event)
        return ops + self._settle() if ops else ops

    def _settle(self) -> list[StoreOp]:
        """Pack the items touched least recently, forget the first ones past ``max_items``;
        changes of theirs not written yet are written first."""
        ops: list[StoreOp] = [PutItem(item=item) for item in self._items.pack_old()]
        while self._max_items is not None and len(self._order) > self._max_items:
            ops += self._forget_first()
        return ops

    def _forget_first(self) -> list[StoreOp]:
        item_id = self._order.pop(0)
        position = self._items.peek(item_id).position
        unwritten = self._items.pop(item_id)
        self._audio.pop(item_id, None)
        first, last = self._forgotten or (position, position)
        self._forgotten = (min(first, position), max(last, position))
        return [PutItem(item=unwritten)] if unwritten is not None else []

    def set_live_seconds(self, seconds: float) -> list[StoreOp]:
        """A GPT-Live conversation's billed time is now ``seconds`` (its usage totals)."""
        self._usage = msgspec.structs.replace(self._usage, live_seconds=seconds)
        return [SetUsage(usage=self._usage)]

    def set_agent(self, name: str | None) -> list[StoreOp]:
        """The session switched to the agent ``name`` (a handoff, ``update_agent``)."""
        if name == self._agent:
            return []
        self._agent = name
        return [SetAgent(name=name)]

    def approval_pending(self, call: FunctionCallItem) -> list[StoreOp]:
        """The function call ``call`` waits for the application's approval."""
        if call.call_id is None:
            raise ConfigurationError(
                f"function call {call.id!r} ({call.name}) has no call_id: only a call the server "
                "announced with a call_id can wait for an approval"
            )
        wire = msgspec.to_builtins(call)
        self._approvals[call.call_id] = wire
        return [PutApproval(call_id=call.call_id, call=wire)]

    def approval_resolved(self, call_id: str) -> list[StoreOp]:
        """The approval of ``call_id`` was answered (approved or rejected)."""
        if self._approvals.pop(call_id, None) is None:
            return []
        return [DropApproval(call_id=call_id)]

    def output_ready(self, call_id: str, output: Any) -> list[StoreOp]:
        """The tool of ``call_id`` returned ``output`` (any JSON value; ``""`` is an output),
        which is about to be sent. It stays stored until the server confirms the output item,
        so a resumed session delivers it without running the tool again."""
        self._outputs[call_id] = output
        _remember(self._sdk_output_calls, call_id, None)
        return [PutOutput(call_id=call_id, output=output)]

    def record_item(
        self,
        item_id: str,
        wire: dict[str, Any],
        *,
        origin: Origin,
        response_id: str | None = None,
        transcripts: dict[int, str] | None = None,
    ) -> list[StoreOp]:
        """An item that reaches the store by the session rather than by a Realtime server event
        (a GPT-Live session's transcripts, delegations and backend calls): appended when
        ``item_id`` is new, else replaced where it stands; written only if it changed."""
        if item_id not in self._items:
            self._order.append(item_id)
            ops, position = self._position_at(len(self._order) - 1)
        else:
            ops, position = [], self._items.peek(item_id).position
        stored = StoredItem(
            id=item_id,
            position=position,
            wire=wire,
            transcripts=transcripts or {},
            response_id=response_id,
            origin=origin,
        )
        return ops + self._put(stored)

    def add_audio(self, item_id: str, content_index: int, pcm: bytes) -> None:
        """Audio of an item's part that the session has and the server does not send back (the
        user's input audio); stored with the item's next write if audio recording is on."""
        if self._audio_policy.record:
            self._collect_audio(item_id, content_index, pcm)

    # --- server events ----------------------------------------------------------------------------

    def _on_item_event(
        self, event: se.ConversationItemAdded | se.ConversationItemCreated | se.ConversationItemDone
    ) -> list[StoreOp]:
        item = event.item
        if item.id is None:
            return []
        ops: list[StoreOp] = []
        if isinstance(item, FunctionCallOutputItem):
            ops += self._output_confirmed(item.call_id)
        wire = self._wire(item, _raw_item(event))
        if item.id in self._items:
            return ops + self._update(item.id, wire=wire)
        return ops + self._insert(item, wire, event.previous_item_id)

    def _on_item_retrieved(self, event: se.ConversationItemRetrieved) -> list[StoreOp]:
        item = event.item
        if item.id is None or item.id not in self._items:
            return []
        return self._update(item.id, wire=self._wire(item, _raw_item(event)))

    def _on_output_item(
        self, event: se.ResponseOutputItemAdded | se.ResponseOutputItemDone
    ) -> list[StoreOp]:
        item = event.item
        if item.id is None:
            return []
        if item.id not in self._items:
            # conversation.item.added will bring it
            _remember(self._response_of, item.id, event.response_id)
            return []
        wire = self._wire(item, _raw_item(event))
        return self._update(item.id, wire=wire, response_id=event.response_id)

    def _on_item_deleted(self, event: se.ConversationItemDeleted) -> list[StoreOp]:
        item_id = event.item_id
        self._audio.pop(item_id, None)
        if item_id not in self._items:
            return []
        self._items.pop(item_id)
        self._order.remove(item_id)
        return [DeleteItem(item_id=item_id)]

    def _on_item_truncated(self, event: se.ConversationItemTruncated) -> list[StoreOp]:
        stored = self._items.get(event.item_id)
        if stored is None:
            return []
        index = event.content_index
        transcripts = {k: v for k, v in stored.transcripts.items() if k != index}
        truncated = {**stored.truncated_ms, index: event.audio_end_ms}
        return self._put(
            msgspec.structs.replace(stored, transcripts=transcripts, truncated_ms=truncated)
        )

    def _on_transcript_done(
        self,
        event: se.ResponseOutputAudioTranscriptDone
        | se.ResponseOutputTextDone
        | se.ResponseContentPartDone
        | se.InputAudioTranscriptionCompleted,
    ) -> list[StoreOp]:
        if isinstance(
            event, se.ResponseOutputAudioTranscriptDone | se.InputAudioTranscriptionCompleted
        ):
            text: str | None = event.transcript
        elif isinstance(event, se.ResponseOutputTextDone):
            text = event.text
        else:
            text = event.part.transcript if event.part.transcript is not None else event.part.text
        if text is None:
            return []
        stored = self._items.get(event.item_id)
        if stored is None:
            _remember(self._early_transcripts, (event.item_id, event.content_index), text)
            return []
        if event.content_index in stored.truncated_ms:
            return []  # the server removed the transcript of truncated audio
        transcripts = {**stored.transcripts, event.content_index: text}
        return self._put(msgspec.structs.replace(stored, transcripts=transcripts))

    def _on_transcript_delta(
        self,
        event: se.ResponseOutputAudioTranscriptDelta
        | se.ResponseOutputTextDelta
        | se.InputAudioTranscriptionDelta,
    ) -> list[StoreOp]:
        # Kept in memory and written with the item's next write: a delta is in flight.
        stored = self._items.get(event.item_id)
        index = event.content_index or 0
        if stored is None or not event.delta or index in stored.truncated_ms:
            return []
        transcripts = {**stored.transcripts, index: stored.transcripts.get(index, "") + event.delta}
        self._items.set(msgspec.structs.replace(stored, transcripts=transcripts))
        return []

    def _on_audio_delta(self, event: se.ResponseOutputAudioDelta) -> list[StoreOp]:
        if self._audio_policy.record:
            self._collect_audio(event.item_id, event.content_index, event.delta)
        return []

    def _on_audio_done(self, event: se.ResponseOutputAudioDone) -> list[StoreOp]:
        if event.item_id not in self._items:
            return []
        return self._update(event.item_id)

    def _on_response_done(self, event: se.ResponseDone) -> list[StoreOp]:
        self._usage = self._usage.add(event.response.usage)
        ops: list[StoreOp] = [SetUsage(usage=self._usage)]
        raw = raw_fields(event)
        raw_response = raw.get("response") if raw is not None else None
        raw_output = raw_response.get("output") if isinstance(raw_response, dict) else None
        output = event.response.output
        raws: list[Any] = raw_output if isinstance(raw_output, list) else []
        if len(raws) != len(output):
            raws = [None] * len(output)
        for item, raw_item in zip(output, raws, strict=True):
            if item.id is not None and item.id in self._items:
                fallback = raw_item if isinstance(raw_item, dict) else msgspec.to_builtins(item)
                wire = self._wire(item, fallback)
                ops += self._update(item.id, wire=wire, response_id=event.response.id)
        return ops

    # --- helpers ----------------------------------------------------------------------------------

    def _output_confirmed(self, call_id: str) -> list[StoreOp]:
        """An output item of ``call_id`` is in the conversation: it was delivered, and the call
        no longer waits for an approval."""
        ops: list[StoreOp] = []
        if call_id in self._outputs:
            del self._outputs[call_id]
            ops.append(DropOutput(call_id=call_id))
        ops += self.approval_resolved(call_id)
        return ops

    def _insert(self, item: Item, wire: dict[str, Any], previous: str | None) -> list[StoreOp]:
        assert item.id is not None
        item_id = item.id
        if previous is None or previous == ROOT:
            index = 0
        elif previous in self._items:
            index = self._order.index(previous) + 1
        else:
            index = len(self._order)
        self._order.insert(index, item_id)
        ops, position = self._position_at(index)
        early = [key for key in self._early_transcripts if key[0] == item_id]
        transcripts = {key[1]: self._early_transcripts.pop(key) for key in early}
        stored = StoredItem(
            id=item_id,
            position=position,
            wire=wire,
            transcripts=transcripts,
            response_id=self._response_of.get(item_id),
            origin=self._origin(item),
        )
        self._response_of.pop(item_id, None)
        if isinstance(item, FunctionCallOutputItem):
            self._sdk_output_calls.pop(item.call_id, None)
        ops += self._put(stored, force=True)
        if index == 0 and self._forgotten is not None:
            ops += self._forget_first()  # before forgotten items: it goes with them
        return ops

    def _position_at(self, index: int) -> tuple[list[StoreOp], int]:
        """The position for the item just inserted at ``index`` of the order (and the moves
        that make room for it, if its neighbours are adjacent integers)."""
        before = self._items.peek(self._order[index - 1]).position if index > 0 else None
        after_id = self._order[index + 1] if index + 1 < len(self._order) else None
        after = self._items.peek(after_id).position if after_id is not None else None
        if index == 0 and self._forgotten is not None:
            # First of the whole conversation: before the forgotten items too (and forgotten
            # at once, like them: _insert).
            return [], self._forgotten[0] - POSITION_GAP
        if before is None and after is None:
            return [], 0
        if after is None:
            assert before is not None
            return [], before + POSITION_GAP
        if before is None:
            return [], after - POSITION_GAP
        if after - before >= 2:
            return [], (before + after) // 2
        # Renumbered after the forgotten items, which the store keeps where they are.
        base = self._forgotten[1] + POSITION_GAP if self._forgotten is not None else 0
        positions: dict[str, int] = {}
        for rank, item_id in enumerate(self._order):
            if item_id in self._items:
                positions[item_id] = base + rank * POSITION_GAP
                self._items.move(item_id, base + rank * POSITION_GAP)
        return [MoveItems(positions=positions)], base + index * POSITION_GAP

    def _origin(self, item: Item) -> Origin:
        if item.id in self._response_of:
            return "model"
        if isinstance(item, FunctionCallOutputItem) and item.call_id in self._sdk_output_calls:
            return "sdk"
        return "caller"

    def _update(
        self, item_id: str, *, wire: dict[str, Any] | None = None, response_id: str | None = None
    ) -> list[StoreOp]:
        stored = self._items.get(item_id)
        assert stored is not None
        response_id = response_id if response_id is not None else stored.response_id
        return self._put(
            msgspec.structs.replace(
                stored,
                wire=wire if wire is not None else stored.wire,
                response_id=response_id,
                origin="model" if response_id is not None else stored.origin,
            )
        )

    def _put(self, stored: StoredItem, *, force: bool = False) -> list[StoreOp]:
        """Write ``stored`` (with the audio collected for it) if it differs from the last write."""
        collected = self._audio.get(stored.id)
        if collected:
            audio = {**stored.audio, **{index: bytes(pcm) for index, pcm in collected.items()}}
            stored = msgspec.structs.replace(stored, audio=audio)
        self._items.set(stored)
        if not self._items.written(stored) and not force:
            return []
        return [PutItem(item=stored)]

    def _wire(self, item: Item, raw: dict[str, Any]) -> dict[str, Any]:
        """The raw item as stored: content part types as the typed item spells them (the codec
        repairs beta spellings), base64 audio taken out (into the audio buffers if recording)."""
        wire = dict(raw)
        parts = getattr(item, "content", None)
        raw_parts = wire.get("content")
        if isinstance(parts, list) and isinstance(raw_parts, list):
            content: list[Any] = []
            for index, (part, raw_part) in enumerate(zip(parts, raw_parts, strict=False)):
                if not isinstance(raw_part, dict):
                    content.append(raw_part)
                    continue
                clean = {k: v for k, v in raw_part.items() if k != "audio"}
                clean["type"] = part.type
                content.append(clean)
                pcm = getattr(part, "audio", None)
                if self._audio_policy.record and isinstance(pcm, bytes) and item.id is not None:
                    self._audio.get(item.id, {}).pop(index, None)
                    self._collect_audio(item.id, index, pcm)
            wire["content"] = content
        return wire

    def _collect_audio(self, item_id: str, content_index: int, pcm: bytes) -> None:
        buffers = self._audio.setdefault(item_id, {})
        room = self._audio_policy.max_bytes_per_item - sum(len(buf) for buf in buffers.values())
        if room > 0:
            buffers.setdefault(content_index, bytearray()).extend(pcm[:room])


def _raw_item(event: Any) -> dict[str, Any]:
    """The ``item`` of an event as received (unknown fields included), or as this process
    built it."""
    raw = raw_fields(event)
    item = raw.get("item") if raw is not None else None
    if isinstance(item, dict):
        return item
    built: dict[str, Any] = msgspec.to_builtins(event.item)
    return built


def _remember(table: dict[Any, Any], key: Any, value: Any) -> None:
    """``table[key] = value``, keeping the :data:`_PENDING_KEPT` most recent keys."""
    table.pop(key, None)
    table[key] = value
    if len(table) > _PENDING_KEPT:
        del table[next(iter(table))]
