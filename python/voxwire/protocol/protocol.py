"""``RealtimeProtocol``: the client side of a Realtime conversation, without I/O.

In the style of python-websockets' sans-I/O core::

    protocol = RealtimeProtocol()
    protocol.send_session_update({"instructions": "Be brief.", "voice": "marin"})
    for frame in protocol.data_to_send():
        ...  # the I/O layer sends each text frame
    protocol.receive_text(frame_from_server)
    for event in protocol.events_received():
        ...  # typed events, in server order

``receive_text`` never raises: a bad frame becomes a
:class:`~voxwire.protocol.server_events.ProtocolErrorEvent` and leaves the state as it was.
The ``send_*`` methods raise only for caller misuse (a bad value, or an operation the state
does not allow), before anything is queued.

The state is the server's, as acknowledged by the server: the session as of the last
``session.created`` / ``session.updated``, items as announced, responses as started and ended.
Client requests are remembered as pending until the server answers them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import msgspec

from voxwire.exceptions import InvalidState
from voxwire.protocol import server_events as se
from voxwire.protocol.audio_ledger import AudioLedger, SegmentKey
from voxwire.protocol.beta import (
    BETA_ONLY_TYPES,
    beta_dialect,
    decode_beta_server_event,
    decode_beta_server_mapping,
)
from voxwire.protocol.client_events import (
    ClientEvent,
    ConversationItemCreate,
    ConversationItemDelete,
    ConversationItemRetrieve,
    ConversationItemTruncate,
    InputAudioBufferAppend,
    InputAudioBufferClear,
    InputAudioBufferCommit,
    OutputAudioBufferClear,
    ResponseCancel,
    ResponseCreate,
    ResponseCreateParams,
    SessionUpdate,
)
from voxwire.protocol.codec import (
    decode_server_event,
    encode_event,
    raw_fields,
    salvage_response,
)
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.conversation import ConversationState
from voxwire.protocol.gate import NOTHING, GateState, LostRace, ResponseGate
from voxwire.protocol.history import plan_history
from voxwire.protocol.ids import CounterIds, IdFactory
from voxwire.protocol.interruption import plan_interruption
from voxwire.protocol.items import Item
from voxwire.protocol.objects import Response
from voxwire.protocol.responses import ResponseRecord, ResponseRecords
from voxwire.protocol.server_events import ReceivedEvent
from voxwire.protocol.units import PCM16_24K, SampleFormat

__all__ = ["RealtimeProtocol"]

_E = TypeVar("_E", bound=ClientEvent)

# Frames that can show which protocol a server speaks (see beta.beta_dialect); a beta-only
# event name arrives as an UnknownServerEvent on the GA path.
_TELLING_EVENTS = (
    se.SessionCreated,
    se.SessionUpdated,
    se.ResponseCreated,
    se.ResponseDone,
    se.UnknownServerEvent,
)
_TELLING_TYPES = frozenset(
    {"session.created", "session.updated", "response.created", "response.done", *BETA_ONLY_TYPES}
)


class RealtimeProtocol:
    """Client-side Realtime protocol state machine (GA events).

    ``beta``: ``"auto"`` (default) tells a beta server from a GA one by its first frames and maps
    beta names to GA events if needed (frames are read as mappings until it knows, then GA
    frames take the fast typed path); ``True`` / ``False`` fix the choice from the start.
    ``ids`` makes the ``event_id`` of every client event and the ids of client-created items;
    the default counts deterministically (``vx_evt_1``, ``vx_item_1`` …).
    """

    def __init__(
        self, *, beta: bool | Literal["auto"] = "auto", ids: IdFactory | None = None
    ) -> None:
        if beta not in (True, False, "auto"):
            raise ValueError(
                f"RealtimeProtocol beta={beta!r} is invalid: expected True, False or 'auto'"
            )
        # None: not known yet (auto).
        self._beta: bool | None = None if beta == "auto" else bool(beta)
        self._ids: IdFactory = ids if ids is not None else CounterIds()
        self._received: list[ReceivedEvent] = []
        self._outgoing: list[str] = []
        self._session: SessionConfig | None = None
        self._conversation = ConversationState()
        self._ledger = AudioLedger()
        self._responses = ResponseRecords()
        self._gate = ResponseGate()
        # Item changes awaiting the server's answer, oldest first: event_id -> the event as sent.
        # A create's item always has an id (send_item_create gives one).
        self._unacked_creates: dict[str, ConversationItemCreate] = {}
        self._unacked_deletes: dict[str, ConversationItemDelete] = {}
        self._unacked_truncates: dict[str, ConversationItemTruncate] = {}
        # event_ids of out-of-band response.create events awaiting their response.created.
        self._out_of_band_creates: list[str] = []

    # --- state ------------------------------------------------------------------------------------

    @property
    def beta(self) -> bool | None:
        """``True``: the server speaks beta names, mapped to GA events; ``False``: GA;
        ``None``: not known yet (``beta="auto"`` before the first telling frame)."""
        return self._beta

    @property
    def session(self) -> SessionConfig | None:
        """The session as the server last acknowledged it (``None`` before ``session.created``)."""
        return self._session

    @property
    def conversation(self) -> ConversationState:
        """Items in server order, transcripts and truncations."""
        return self._conversation

    @property
    def audio(self) -> AudioLedger:
        """Output audio received, per (item_id, content_index)."""
        return self._ledger

    @property
    def responses(self) -> ResponseRecords:
        """Every response seen, with status, output items, usage and interruption marks."""
        return self._responses

    @property
    def gate_state(self) -> GateState:
        """IDLE, REQUESTED or ACTIVE (see :mod:`voxwire.protocol.gate`)."""
        return self._gate.state

    @property
    def can_create_response(self) -> bool:
        """A ``response.create`` sent now would not collide with a response in progress."""
        return self._gate.state is GateState.IDLE

    @property
    def held_response_creates(self) -> int:
        """Requests waiting for the current response to end."""
        return len(self._gate.held)

    @property
    def unanswered_response_requests(self) -> tuple[ResponseCreateParams | None, ...]:
        """The conversation's ``response.create`` requests no response has answered yet — the
        one in flight, then the held ones — with their parameters (``None``: defaults). What a
        new connection must ask for again after this one was lost."""
        return self._gate.unanswered

    @property
    def unacknowledged_item_creates(self) -> tuple[ConversationItemCreate, ...]:
        """The ``conversation.item.create`` events sent (or queued) that the server has not
        answered yet, oldest first, as sent: the item with its id, and ``previous_item_id``.
        What a new connection must send again after this one was lost.

        A create stops being unacknowledged when the server announces its item
        (``conversation.item.added``, or the older ``.created``, with the item's id), deletes it
        (``conversation.item.deleted``), or rejects it (an ``error`` naming the create's
        ``event_id``). Matching is by item id, never by arrival order: every create carries an
        id (the client's own, or one made here), which the server keeps, while the server also
        announces items of its own (committed audio, response output) that an order-based match
        would mistake for acknowledgements."""
        return tuple(self._unacked_creates.values())

    @property
    def unacknowledged_item_deletes(self) -> tuple[ConversationItemDelete, ...]:
        """The ``conversation.item.delete`` events sent (or queued) that the server has not
        answered yet, oldest first, as sent. What the application asked to remove and the
        conversation state still holds: after a lost connection, such an item must not be
        recreated on the new one.

        A delete stops being unacknowledged when the server confirms the deletion
        (``conversation.item.deleted`` with its item id: every delete of that item is answered
        then) or rejects it (an ``error`` naming the delete's ``event_id``). An announcement of
        the item (``conversation.item.added``) does not answer it: the server may announce an
        item before it reads the delete that follows."""
        return tuple(self._unacked_deletes.values())

    @property
    def unacknowledged_item_truncates(self) -> tuple[ConversationItemTruncate, ...]:
        """The ``conversation.item.truncate`` events sent (or queued) that the server has not
        answered yet, oldest first, as sent (``audio_end_ms`` as clamped).

        A truncate stops being unacknowledged when the server confirms it
        (``conversation.item.truncated`` for its item and content part: the oldest such
        truncate — the server answers in order), deletes its item (``conversation.item.deleted``)
        or rejects it (an ``error`` naming the truncate's ``event_id``)."""
        return tuple(self._unacked_truncates.values())

    @property
    def responses_in_progress(self) -> tuple[str, ...]:
        """Ids of the conversation's responses started and not yet done, oldest first
        (out-of-band responses are not listed: they do not hold the gate)."""
        return self._gate.in_progress

    @property
    def active_response(self) -> ResponseRecord | None:
        """The newest response in progress."""
        in_progress = self._gate.in_progress
        return self._responses.get(in_progress[-1]) if in_progress else None

    def audio_received_samples(self, item_id: str, content_index: int = 0) -> int:
        """Samples of output audio received for one content part of one item."""
        segment = self._ledger.get((item_id, content_index))
        return segment.received_samples if segment is not None else 0

    # --- I/O boundary -----------------------------------------------------------------------------

    def receive_text(self, data: str | bytes) -> None:
        """Take one text frame from the server. Never raises."""
        if self._beta is None:
            events = self._receive_undecided(data)
        elif self._beta:
            events = decode_beta_server_event(data)
        else:
            events = [decode_server_event(data)]
        for event in events:
            handler = _HANDLERS.get(type(event))
            if handler is None or handler(self, event):
                self._received.append(event)

    def _receive_undecided(self, data: str | bytes) -> list[ReceivedEvent]:
        # The fast GA path first: frames that cannot tell the protocols apart (audio deltas of a
        # session joined late, say) cost what they cost in GA mode.
        event = decode_server_event(data)
        telling = isinstance(event, _TELLING_EVENTS) or (
            isinstance(event, se.ProtocolErrorEvent) and event.event_type in _TELLING_TYPES
        )
        raw = raw_fields(event) if telling else None
        if raw is None:
            return [event]
        self._beta = beta_dialect(raw)
        return decode_beta_server_mapping(raw) if self._beta else [event]

    def events_received(self) -> list[ReceivedEvent]:
        """The events received since the last call, in order (deltas of interrupted responses
        and of deleted items are left out)."""
        events, self._received = self._received, []
        return events

    def data_to_send(self) -> list[str]:
        """The text frames to send since the last call, in order."""
        frames, self._outgoing = self._outgoing, []
        return frames

    # --- sending ----------------------------------------------------------------------------------

    def send_session_update(self, config: SessionConfig | Mapping[str, Any]) -> SessionUpdate:
        """Ask for session changes; legacy and camelCase mappings are normalised first.

        :attr:`session` changes when the server answers with ``session.updated``.
        """
        session = (
            config if isinstance(config, SessionConfig) else SessionConfig.from_mapping(config)
        )
        return self._queue(SessionUpdate(session=session))

    def send_input_audio(self, audio: bytes | bytearray | memoryview) -> InputAudioBufferAppend:
        """Append audio, in the session's input format, to the server's input buffer."""
        return self._queue(InputAudioBufferAppend(audio=bytes(audio)))

    def send_input_audio_commit(self) -> InputAudioBufferCommit:
        return self._queue(InputAudioBufferCommit())

    def send_input_audio_clear(self) -> InputAudioBufferClear:
        return self._queue(InputAudioBufferClear())

    def send_output_audio_clear(self) -> OutputAudioBufferClear:
        """WebRTC/SIP only: make the server stop playing out audio."""
        return self._queue(OutputAudioBufferClear())

    def send_item_create(
        self, item: Item, *, previous_item_id: str | None = None
    ) -> ConversationItemCreate:
        """Add an item; it gets a client-made id if it has none, so it can be referred to (for
        example as the ``previous_item_id`` of the next item) before the server announces it."""
        if item.id is None:
            item = msgspec.structs.replace(item, id=self._ids("item"))
        event = self._queue(ConversationItemCreate(item=item, previous_item_id=previous_item_id))
        self._conversation.create_sent(item)
        assert event.event_id is not None  # _queue gives every event one
        self._unacked_creates[event.event_id] = event
        return event

    def send_item_retrieve(self, item_id: str) -> ConversationItemRetrieve:
        return self._queue(ConversationItemRetrieve(item_id=item_id))

    def send_item_delete(self, item_id: str) -> ConversationItemDelete:
        event = self._queue(ConversationItemDelete(item_id=item_id))
        assert event.event_id is not None
        self._unacked_deletes[event.event_id] = event
        return event

    def send_item_truncate(
        self, item_id: str, content_index: int, audio_end_ms: int
    ) -> ConversationItemTruncate:
        """Cut an item's audio; ``audio_end_ms`` is clamped to the audio received for it."""
        segment = self._ledger.get((item_id, content_index))
        if segment is not None:
            audio_end_ms = min(audio_end_ms, segment.received_ms)
        event = self._queue(
            ConversationItemTruncate(
                item_id=item_id, content_index=content_index, audio_end_ms=audio_end_ms
            )
        )
        assert event.event_id is not None
        self._unacked_truncates[event.event_id] = event
        return event

    def send_response_create(
        self, params: ResponseCreateParams | None = None
    ) -> ResponseCreate | None:
        """Ask for a response: sent now if the gate is IDLE (returned), else held (``None``).

        Held requests coalesce and go, oldest first, when the response in progress ends.
        Out-of-band requests (``conversation="none"``) always go at once: GA runs them in
        parallel ("only one Response can write to the default Conversation at a time, but
        otherwise multiple Responses can be created in parallel").
        """
        if params is not None and params.conversation == "none":
            event_id = self._ids("event")
            self._out_of_band_creates.append(event_id)
            return self._queue(ResponseCreate(event_id=event_id, response=params))
        self._gate.hold(params)
        return self._release_held_create()

    def send_response_cancel(self, response_id: str | None = None) -> ResponseCancel | None:
        """Cancel a response in progress — ``response_id``, or else the newest one in the
        conversation — once. ``None`` if there is nothing to cancel (GA answers a cancel without
        an active response with an error)."""
        record = self.active_response if response_id is None else self._responses.get(response_id)
        if record is None or not record.in_progress or record.cancel_sent:
            return None
        record.cancel_sent = True
        return self._queue(ResponseCancel(response_id=record.id))

    def interrupt(
        self, played_samples: Mapping[SegmentKey, int], *, cancel_response: bool = True
    ) -> list[ClientEvent]:
        """The user interrupted: cancel, truncate what was heard, delete what was not.

        ``played_samples`` maps ``(item_id, content_index)`` to the exact samples played, from
        the playback clock. Pass ``cancel_response=False`` when the server cancels by itself
        (server VAD with ``interrupt_response: true``). Deltas of the interrupted responses that
        arrive later are dropped. Returns the events queued (see
        :mod:`voxwire.protocol.interruption` for the rules).
        """
        plan = plan_interruption(
            self._ledger.segments(),
            played_samples,
            in_progress=self._gate.in_progress,
            in_conversation=self._conversation.__contains__,
        )
        events: list[ClientEvent] = []
        if cancel_response:
            cancel = self.send_response_cancel()
            if cancel is not None:
                events.append(cancel)
        for response_id in (*self._gate.in_progress, *plan.response_ids):
            self._responses.record(response_id).interrupted = True
        for item_id, content_index, audio_end_ms in plan.truncations:
            events.append(self.send_item_truncate(item_id, content_index, audio_end_ms))
        events.extend(self.send_item_delete(item_id) for item_id in plan.deletions)
        return events

    def update_history(self, desired: Sequence[Item]) -> list[ClientEvent]:
        """Queue the deletes and creates that turn the conversation into ``desired``.

        Raises :class:`~voxwire.exceptions.HistoryError` if ``desired`` cannot be reached, and
        :class:`~voxwire.exceptions.InvalidState` while earlier item changes are unanswered
        (the plan would be made against a conversation about to change).
        """
        unanswered = len(self._unacked_creates) + len(self._unacked_deletes)
        if unanswered:
            raise InvalidState(
                f"{unanswered} item create/delete request(s) are unanswered; "
                "call update_history again after conversation.item.added / .deleted arrive"
            )
        events: list[ClientEvent] = []
        for event in plan_history(self._conversation.items(), desired, lambda: self._ids("item")):
            if isinstance(event, ConversationItemDelete):
                events.append(self.send_item_delete(event.item_id))
            else:
                events.append(
                    self.send_item_create(event.item, previous_item_id=event.previous_item_id)
                )
        return events

    # --- internals: sending -----------------------------------------------------------------------

    def _queue(self, event: _E) -> _E:
        if event.event_id is None:
            event = msgspec.structs.replace(event, event_id=self._ids("event"))
        self._outgoing.append(encode_event(event))
        return event

    def _create_answered(self, item_id: str) -> None:
        for event_id in [eid for eid, c in self._unacked_creates.items() if c.item.id == item_id]:
            del self._unacked_creates[event_id]

    def _release_held_create(self) -> ResponseCreate | None:
        params = self._gate.release()
        if params is NOTHING:
            return None
        event_id = self._ids("event")
        event = self._queue(ResponseCreate(event_id=event_id, response=params))
        self._gate.create_sent(event_id, params, waits_for=self._pending_item_ids())
        return event

    def _pending_item_ids(self) -> frozenset[str]:
        return frozenset(c.item.id for c in self._unacked_creates.values() if c.item.id)

    @property
    def _sample_format(self) -> SampleFormat:
        return self._session.output_sample_format if self._session is not None else PCM16_24K

    # --- internals: receiving (one handler per event type; False drops the event) -----------------

    def _on_session(self, event: se.SessionCreated | se.SessionUpdated) -> bool:
        self._session = event.session
        return True

    def _on_item_added(self, event: se.ConversationItemAdded | se.ConversationItemCreated) -> bool:
        self._conversation.item_added(event.item, event.previous_item_id)
        if event.item.id is not None:
            self._create_answered(event.item.id)
        return True

    def _on_item_done(self, event: se.ConversationItemDone) -> bool:
        self._conversation.item_done(event.item, event.previous_item_id)
        return True

    def _on_item_deleted(self, event: se.ConversationItemDeleted) -> bool:
        self._conversation.item_deleted(event.item_id)
        self._ledger.forget_item(event.item_id)
        item_id = event.item_id
        self._create_answered(item_id)
        for table in (self._unacked_deletes, self._unacked_truncates):
            for event_id in [eid for eid, e in table.items() if e.item_id == item_id]:
                del table[event_id]
        return True

    def _on_item_truncated(self, event: se.ConversationItemTruncated) -> bool:
        self._conversation.item_truncated(event.item_id, event.content_index, event.audio_end_ms)
        self._ledger.truncated((event.item_id, event.content_index), event.audio_end_ms)
        for event_id, truncate in self._unacked_truncates.items():
            if (truncate.item_id, truncate.content_index) == (event.item_id, event.content_index):
                del self._unacked_truncates[event_id]  # the oldest: the server answers in order
                break
        return True

    def _on_response_created(self, event: se.ResponseCreated) -> bool:
        response_id = event.response.id
        if response_id is None:
            return True
        record = self._responses.created(response_id)
        # GA: conversation_id is null exactly when the response was created out of band.
        if event.response.conversation_id is None and self._out_of_band_creates:
            self._out_of_band_creates.pop(0)
            record.out_of_band = True
        else:
            self._gate.response_created(response_id, unanswered_items=self._pending_item_ids())
        return True

    def _on_response_done(self, event: se.ResponseDone) -> bool:
        if event.response.id is not None:
            self._finish_response(event.response.id, event.response)
        return True

    def _finish_response(self, response_id: str, response: Response) -> None:
        self._responses.done(response, response_id)
        self._gate.response_done(response_id)
        self._release_held_create()

    def _on_output_item(
        self, event: se.ResponseOutputItemAdded | se.ResponseOutputItemDone
    ) -> bool:
        self._conversation.output_item(event.item, event.response_id)
        self._responses.output_item(event.response_id, event.item.id)
        return True

    def _dropped(self, response_id: str, item_id: str) -> bool:
        """Deltas of an interrupted response or a deleted item are not handed out."""
        return self._responses.is_interrupted(response_id) or self._conversation.is_deleted(item_id)

    def _on_audio_delta(self, event: se.ResponseOutputAudioDelta) -> bool:
        if self._dropped(event.response_id, event.item_id):
            return False
        self._ledger.received(
            (event.item_id, event.content_index),
            event.response_id,
            len(event.delta),
            self._sample_format,
        )
        return True

    def _on_audio_done(self, event: se.ResponseOutputAudioDone) -> bool:
        self._ledger.audio_done((event.item_id, event.content_index))
        return True

    def _on_text_delta(
        self, event: se.ResponseOutputAudioTranscriptDelta | se.ResponseOutputTextDelta
    ) -> bool:
        if self._dropped(event.response_id, event.item_id):
            return False
        self._conversation.transcript_delta(event.item_id, event.content_index, event.delta)
        return True

    def _on_transcript_done(self, event: se.ResponseOutputAudioTranscriptDone) -> bool:
        if not self._responses.is_interrupted(event.response_id):
            self._conversation.transcript_done(event.item_id, event.content_index, event.transcript)
        return True

    def _on_text_done(self, event: se.ResponseOutputTextDone) -> bool:
        if not self._responses.is_interrupted(event.response_id):
            self._conversation.transcript_done(event.item_id, event.content_index, event.text)
        return True

    def _on_part_done(self, event: se.ResponseContentPartDone) -> bool:
        part = event.part
        text = part.transcript if part.transcript is not None else part.text
        if text is not None and not self._responses.is_interrupted(event.response_id):
            self._conversation.transcript_done(event.item_id, event.content_index, text)
        return True

    def _on_input_transcript_delta(self, event: se.InputAudioTranscriptionDelta) -> bool:
        if event.delta:
            self._conversation.transcript_delta(
                event.item_id, event.content_index or 0, event.delta
            )
        return True

    def _on_input_transcript_done(self, event: se.InputAudioTranscriptionCompleted) -> bool:
        self._conversation.transcript_done(event.item_id, event.content_index, event.transcript)
        return True

    def _on_arguments_delta(
        self, event: se.ResponseFunctionCallArgumentsDelta | se.ResponseMcpCallArgumentsDelta
    ) -> bool:
        return not self._dropped(event.response_id, event.item_id)

    def _on_error(self, event: se.ErrorEvent) -> bool:
        event_id = event.error.event_id
        if event.error.code == "conversation_already_has_active_response":
            lost = self._gate.lost_race(event_id)
            if lost is not None:
                self._race_lost(lost)
                return False  # handled here: the application has nothing to do about it
        self._gate.error(event_id)
        if event_id in self._out_of_band_creates:
            self._out_of_band_creates.remove(event_id)
        if event_id is not None:
            # An item change failed: stop waiting for it.
            create = self._unacked_creates.pop(event_id, None)
            if create is not None:
                assert create.item.id is not None  # send_item_create gives every item one
                self._conversation.create_failed(create.item.id)
            self._unacked_deletes.pop(event_id, None)
            self._unacked_truncates.pop(event_id, None)
        self._release_held_create()
        return True

    def _race_lost(self, lost: LostRace) -> None:
        """Server VAD started a response just before the server read our ``response.create``,
        which it then rejected; the response it started was taken as the answer. Ask again once
        it is done — unless the create asked for nothing special and the winner saw every item
        the create was for: then it is the answer."""
        if lost.params is None and lost.winner_saw_items:
            return
        self._gate.requeue(lost.params)
        self._release_held_create()

    def _on_protocol_error(self, event: se.ProtocolErrorEvent) -> bool:
        """Leave the state alone — except that a ``response.done`` too broken to read still ends
        its response, or the gate would wait for it forever."""
        if event.event_type == "response.done" and event.raw is not None:
            raw_response = event.raw.get("response")
            # Keep what can be read of it (status, usage, intact output items).
            response = salvage_response(raw_response) if isinstance(raw_response, dict) else None
            if response is not None and response.id is not None:
                self._finish_response(response.id, response)
        return True


_Handler = Callable[[RealtimeProtocol, Any], bool]

#: Server event type -> handler. Types not listed change no state and are handed out as they are.
_HANDLERS: dict[type, _Handler] = {
    se.SessionCreated: RealtimeProtocol._on_session,
    se.SessionUpdated: RealtimeProtocol._on_session,
    se.ConversationItemAdded: RealtimeProtocol._on_item_added,
    se.ConversationItemCreated: RealtimeProtocol._on_item_added,
    se.ConversationItemDone: RealtimeProtocol._on_item_done,
    se.ConversationItemDeleted: RealtimeProtocol._on_item_deleted,
    se.ConversationItemTruncated: RealtimeProtocol._on_item_truncated,
    se.ResponseCreated: RealtimeProtocol._on_response_created,
    se.ResponseDone: RealtimeProtocol._on_response_done,
    se.ResponseOutputItemAdded: RealtimeProtocol._on_output_item,
    se.ResponseOutputItemDone: RealtimeProtocol._on_output_item,
    se.ResponseOutputAudioDelta: RealtimeProtocol._on_audio_delta,
    se.ResponseOutputAudioDone: RealtimeProtocol._on_audio_done,
    se.ResponseOutputAudioTranscriptDelta: RealtimeProtocol._on_text_delta,
    se.ResponseOutputTextDelta: RealtimeProtocol._on_text_delta,
    se.ResponseOutputAudioTranscriptDone: RealtimeProtocol._on_transcript_done,
    se.ResponseOutputTextDone: RealtimeProtocol._on_text_done,
    se.ResponseContentPartDone: RealtimeProtocol._on_part_done,
    se.InputAudioTranscriptionDelta: RealtimeProtocol._on_input_transcript_delta,
    se.InputAudioTranscriptionCompleted: RealtimeProtocol._on_input_transcript_done,
    se.ResponseFunctionCallArgumentsDelta: RealtimeProtocol._on_arguments_delta,
    se.ResponseMcpCallArgumentsDelta: RealtimeProtocol._on_arguments_delta,
    se.ErrorEvent: RealtimeProtocol._on_error,
    se.ProtocolErrorEvent: RealtimeProtocol._on_protocol_error,
}
