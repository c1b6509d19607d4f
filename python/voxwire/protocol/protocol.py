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
from typing import Any, Final, Literal

import msgspec

from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.protocol import server_events as se
from voxwire.protocol.audio_ledger import AudioLedger, SegmentKey
from voxwire.protocol.beta import (
    BETA_ONLY_TYPES,
    beta_dialect,
    decode_beta_server_event,
    decode_beta_server_mapping,
)
from voxwire.protocol.client_events import (
    CLIENT_EVENT_TYPES,
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
from voxwire.protocol.codec import decode_client_event, decode_server_event, raw_fields
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.conversation import ConversationState
from voxwire.protocol.gate import GateState, ResponseRequest, ResponseSource
from voxwire.protocol.history import plan_history
from voxwire.protocol.ids import CounterIds, IdFactory
from voxwire.protocol.interruption import plan_interruption
from voxwire.protocol.items import Item
from voxwire.protocol.objects import Response, StatusDetails
from voxwire.protocol.responses import ResponseRecord, ResponseRecords
from voxwire.protocol.restoration import (
    ConnectionLoss,
    RestorationPlan,
    items_to_resend,
    restoration_items,
)
from voxwire.protocol.server_events import ReceivedEvent
from voxwire.protocol.state import ProtocolState, internal_error
from voxwire.protocol.updates import SessionUpdateLog, UpdateOrigin, UpdateRecord

__all__ = ["RealtimeProtocol"]

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


class RealtimeProtocol(ProtocolState):
    """Client-side Realtime protocol state machine (GA events).

    ``beta``: ``"auto"`` (default) tells a beta server from a GA one by its first frames and maps
    beta names to GA events if needed (frames are read as mappings until it knows, then GA
    frames take the fast typed path; client events then go out in the beta shape,
    :func:`~voxwire.protocol.beta.beta_client_frame`); ``True`` / ``False`` fix it at once.
    ``ids`` makes the ``event_id`` of every client event and the ids of client-created items;
    the default counts deterministically (``vx_evt_1``, ``vx_item_1`` …). ``update_log``: keep
    the application's ``session.update`` changes there, to be made again on a new server session
    (:meth:`replay_session_updates`); give every connection's core the same log.
    ``max_history_items``: hold at most this many conversation items, forgetting the oldest
    (still on the server; :class:`~voxwire.protocol.ConversationState`); ``None``: all.
    """

    def __init__(
        self,
        *,
        beta: bool | Literal["auto"] = "auto",
        ids: IdFactory | None = None,
        update_log: SessionUpdateLog | None = None,
        max_history_items: int | None = None,
    ) -> None:
        if beta not in (True, False, "auto"):
            raise ValueError(
                f"RealtimeProtocol beta={beta!r} is invalid: expected True, False or 'auto'"
            )
        super().__init__(ids if ids is not None else CounterIds(), update_log, max_history_items)
        # None: not known yet (auto).
        self._beta = None if beta == "auto" else bool(beta)

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
        """The responses in progress and the most recent others (``responses.FINISHED_KEPT``),
        with status, output items, usage and interruption marks."""
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
        return tuple(request.params for request in self._gate.unanswered)

    @property
    def updates_in_flight(self) -> tuple[UpdateRecord, ...]:
        """The ``session.update`` events sent and not answered yet, oldest first."""
        return self._updates.in_flight

    def is_out_of_band(self, response_id: str) -> bool:
        """The response was created with ``conversation="none"``."""
        record = self._responses.get(response_id)
        return record is not None and record.out_of_band

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
        """Take one frame from the server. Never raises, whatever ``data`` holds.

        ``data`` is a text frame (``str``, or ``bytes`` holding UTF-8); bytes that are not UTF-8
        (a binary frame), bad JSON, a frame over a bound of :mod:`~voxwire.protocol.limits`
        and mistyped events become :class:`~voxwire.protocol.server_events.ProtocolErrorEvent`
        events that say what was wrong, and leave the state as it was. PCM16 audio with a
        trailing half sample is reported, and its whole samples kept."""
        try:
            if self._beta is None:
                events = self._receive_undecided(data)
            elif self._beta:
                events = decode_beta_server_event(data)
            else:
                events = [decode_server_event(data)]
        except Exception as exc:  # a decoder bug: the frame is reported, the session goes on
            events = [internal_error(exc, None)]
        for event in events:
            # Samples are 1 or 2 bytes wide: an even length is always whole.
            if type(event) is se.ResponseOutputAudioDelta and len(event.delta) & 1:
                event = self._whole_samples(event)
            self._receive(event)

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
        self._dialect_known(beta_dialect(raw))
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

    def updates_settled(self) -> list[UpdateRecord]:
        """The ``session.update`` events answered since the last call (acknowledged or
        rejected, or lost with the connection), in the order they were settled: how the I/O
        layer learns the fate of an update it waits for, by its ``event_id``."""
        return self._updates.settled()

    def failed_request_tags(self) -> list[str]:
        """The tags of ``response.create`` requests the server refused (an ``error`` naming the
        create) since the last call: no response will answer them."""
        tags, self._failed_tags = self._failed_tags, []
        return tags

    def connection_lost(self) -> ConnectionLoss:
        """The connection is gone: settle what was in flight and plan the next connection.

        Each response in progress ends with status ``cancelled`` (reason ``connection_lost``);
        item deletes and truncates the server never acknowledged are taken as done, as if it had
        confirmed them (so a deleted item is not recreated and a truncated part is not brought
        back); session updates in flight end as lost; frames not sent yet are dropped. The
        settling events are applied to the state here and returned, to be handed to the
        application like received ones; the plan is made from the state that results."""
        requests = self._gate.unanswered
        lost = self._gate.in_progress
        events = [self._settling(_cancelled(response_id)) for response_id in lost]
        for delete in self.unacknowledged_item_deletes:
            events.append(self._settling(_deleted(delete)))
        for truncate in self.unacknowledged_item_truncates:  # those of items still there
            events.append(self._settling(_truncated(truncate)))
        self._updates.lost()
        self._outgoing.clear()
        items, skipped = restoration_items(self._conversation, lost)
        plan = RestorationPlan(
            items=items,
            skipped=skipped,
            resend=self.unacknowledged_item_creates,
            requests=requests,
            lost_responses=lost,
        )
        return ConnectionLoss(events=tuple(events), plan=plan)

    def _settling(self, event: ReceivedEvent) -> ReceivedEvent:
        self._apply(event)
        return event

    # --- sending ----------------------------------------------------------------------------------

    def send(
        self, event: ClientEvent | Mapping[str, Any], *, source: ResponseSource = "response"
    ) -> ClientEvent | None:
        """Send any client event, typed or as a mapping, through the same path as the
        ``send_*`` methods (so the state follows and a ``response.create`` is gated, with
        ``source``). A mapping whose ``type`` no client event has is queued as given (a newer
        event this SDK does not know); a known type that does not decode raises
        :class:`~voxwire.exceptions.ConfigurationError` naming what is wrong. Returns the event
        queued (``None`` for a held ``response.create``, a cancel with nothing to cancel, or an
        unknown type)."""
        if isinstance(event, Mapping):
            kind = event.get("type")
            if not isinstance(kind, str):
                raise ConfigurationError(f"the event needs a 'type' (text), not {kind!r:.80}")
            if kind not in CLIENT_EVENT_TYPES:
                self._outgoing.append(msgspec.json.encode(dict(event)).decode())
                return None
            decoded = decode_client_event(msgspec.json.encode(dict(event)))
            if isinstance(decoded, se.ProtocolErrorEvent):
                raise ConfigurationError(decoded.message)
            event = decoded
        return _SENDERS[type(event)](self, event, source)

    def send_session_update(
        self, config: SessionConfig | Mapping[str, Any], *, origin: UpdateOrigin = "application"
    ) -> SessionUpdate:
        """Ask for session changes; legacy and camelCase mappings are normalised first.

        :attr:`session` changes when the server answers with ``session.updated``; the answer is
        reported by :meth:`updates_settled`. ``origin`` says who asks: the application's changes
        are kept in the ``update_log`` (if any) to be made again after a lost connection.
        """
        session = (
            config if isinstance(config, SessionConfig) else SessionConfig.from_mapping(config)
        )
        event = self._queue(SessionUpdate(session=session))
        assert event.event_id is not None
        log = self._update_log
        mark = log.mark() if log is not None else 0
        self._updates.sent(UpdateRecord(event.event_id, session, origin, log_mark=mark))
        if origin == "application" and log is not None:
            log.sent(event.event_id, session)
        return event

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
        self._create_sent(event)
        return event

    def send_item_retrieve(self, item_id: str) -> ConversationItemRetrieve:
        return self._queue(ConversationItemRetrieve(item_id=item_id))

    def send_item_delete(self, item_id: str) -> ConversationItemDelete:
        return self._delete_item(item_id)

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
        self,
        params: ResponseCreateParams | None = None,
        *,
        source: ResponseSource = "response",
        tags: Sequence[str] = (),
    ) -> ResponseCreate | None:
        """Ask for a response: sent now if the gate is IDLE (returned), else held (``None``).

        Held requests coalesce and go, oldest first, when the response in progress ends.
        ``source`` says why it is asked for; the response that answers it carries it
        (:attr:`ResponseRecord.source <voxwire.protocol.ResponseRecord.source>`), and the
        ``tags`` (names the caller chose) of every request it answers
        (:attr:`ResponseRecord.tags <voxwire.protocol.ResponseRecord.tags>`; a create the server
        refuses reports them in :meth:`failed_request_tags`). Out-of-band requests
        (``conversation="none"``) always go at once: GA runs them in parallel ("only one
        Response can write to the default Conversation at a time, but otherwise multiple
        Responses can be created in parallel").
        """
        if params is not None and params.conversation == "none":
            event_id = self._ids("event")
            self._out_of_band_creates.append(event_id)
            if tags:
                self._out_of_band_tags[event_id] = tuple(tags)
            return self._queue(ResponseCreate(event_id=event_id, response=params))
        self._gate.hold(ResponseRequest(params, source, tuple(tags)))
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
            silent_items=self._silent_items(),
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

    def replay_session_updates(self) -> int:
        """On a new server session: send the application's session changes again, from the
        ``update_log`` (see :class:`~voxwire.protocol.updates.SessionUpdateLog`); how many."""
        log = self._update_log
        if log is None:
            return 0
        return log.replay(
            lambda config: _event_id(self.send_session_update(config, origin="replay"))
        )

    def resend_unanswered(self, plan: RestorationPlan) -> int:
        """On a new server session, after the restoration: send again the item creates the lost
        server never acknowledged (each once, in order; an item already queued here — a tool
        output sent again by its runner — is not repeated: :func:`items_to_resend`), then ask
        again for the responses no response answered, with their parameters and sources.
        Returns how many of the lost connection's unacknowledged creates went again."""
        queued = {c.item.id for c in self._unacked_creates.values() if c.item.id is not None}
        for create in items_to_resend(plan.resend, self._conversation, queued):
            self.send_item_create(create.item, previous_item_id=create.previous_item_id)
        for request in plan.requests:
            self.send_response_create(request.params, source=request.source, tags=request.tags)
        pending = self._pending_item_ids()
        return sum(1 for create in plan.resend if create.item.id in pending)


def _event_id(event: ClientEvent) -> str:
    assert event.event_id is not None  # every queued event gets one
    return event.event_id


def _cancelled(response_id: str) -> se.ResponseDone:
    return se.ResponseDone(
        event_id=f"voxwire_connection_lost_{response_id}",
        response=Response(
            id=response_id,
            object="realtime.response",
            status="cancelled",
            status_details=StatusDetails(type="cancelled", reason="connection_lost"),
        ),
    )


def _deleted(delete: ConversationItemDelete) -> se.ConversationItemDeleted:
    return se.ConversationItemDeleted(
        event_id=f"voxwire_connection_lost_{delete.event_id}", item_id=delete.item_id
    )


def _truncated(truncate: ConversationItemTruncate) -> se.ConversationItemTruncated:
    return se.ConversationItemTruncated(
        event_id=f"voxwire_connection_lost_{truncate.event_id}",
        item_id=truncate.item_id,
        content_index=truncate.content_index,
        audio_end_ms=truncate.audio_end_ms,
    )


_Sender = Callable[[RealtimeProtocol, Any, ResponseSource], ClientEvent | None]

#: Client event type -> how :meth:`RealtimeProtocol.send` sends it.
_SENDERS: Final[dict[type, _Sender]] = {
    SessionUpdate: lambda p, e, _: p.send_session_update(e.session),
    InputAudioBufferAppend: lambda p, e, _: p.send_input_audio(e.audio),
    InputAudioBufferCommit: lambda p, e, _: p.send_input_audio_commit(),
    InputAudioBufferClear: lambda p, e, _: p.send_input_audio_clear(),
    OutputAudioBufferClear: lambda p, e, _: p.send_output_audio_clear(),
    ConversationItemCreate: lambda p, e, _: p.send_item_create(
        e.item, previous_item_id=e.previous_item_id
    ),
    ConversationItemRetrieve: lambda p, e, _: p.send_item_retrieve(e.item_id),
    ConversationItemDelete: lambda p, e, _: p.send_item_delete(e.item_id),
    ConversationItemTruncate: lambda p, e, _: p.send_item_truncate(
        e.item_id, e.content_index, e.audio_end_ms
    ),
    ResponseCreate: lambda p, e, source: p.send_response_create(e.response, source=source),
    ResponseCancel: lambda p, e, _: p.send_response_cancel(e.response_id),
}
