"""The protocol core's state and how each received event changes it.

:class:`ProtocolState` holds everything the wire implies for one connection — the server's
session, the conversation, the audio ledger, the responses, the response gate, the item changes
and session updates awaiting an answer — and one handler per server event type that keeps it
(the table :data:`HANDLERS`, the way h11 keeps its transitions as data). The public face,
:class:`~voxwire.protocol.RealtimeProtocol`, adds the I/O boundary and the sending methods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import msgspec

from voxwire.protocol import server_events as se
from voxwire.protocol.audio_ledger import AudioLedger
from voxwire.protocol.beta import beta_client_frame
from voxwire.protocol.client_events import (
    ClientEvent,
    ConversationItemCreate,
    ConversationItemDelete,
    ConversationItemTruncate,
    ResponseCreate,
)
from voxwire.protocol.codec import encode_event, salvage_response, short_repr
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.conversation import ConversationState
from voxwire.protocol.gate import LostRace, ResponseGate
from voxwire.protocol.ids import IdFactory
from voxwire.protocol.items import Item, MessageItem
from voxwire.protocol.objects import Response
from voxwire.protocol.responses import ResponseRecords
from voxwire.protocol.server_events import ReceivedEvent
from voxwire.protocol.units import PCM16_24K, SampleFormat
from voxwire.protocol.updates import SessionUpdateLog, UpdateTracker

__all__ = ["HANDLERS", "INTERNAL_ERROR_PREFIX", "ProtocolState", "internal_error"]

#: How the message of a protocol error starts when applying a frame failed inside voxwire (a
#: bug to report, with the frame); any other protocol error is the peer's.
INTERNAL_ERROR_PREFIX: Final = "voxwire failed on this frame (a bug, please report it):"

_E = TypeVar("_E", bound=ClientEvent)

#: The client events a beta server reads in another shape (beta.beta_client_frame); the rest are
#: the same in both dialects.
_BETA_SHAPED = frozenset({"session.update", "response.create", "conversation.item.create"})


class ProtocolState:
    """The state of one connection, kept by the received events (see the module docstring)."""

    def __init__(
        self,
        ids: IdFactory,
        update_log: SessionUpdateLog | None,
        max_history_items: int | None = None,
    ) -> None:
        self._ids = ids
        self._received: list[ReceivedEvent] = []
        self._outgoing: list[str] = []
        # The server speaks beta (True), GA (False), or it is not known yet (None).
        self._beta: bool | None = None
        # Frames queued (GA shape) while the dialect was not known, with their types: a session
        # configures itself before the server's first frame, so on a beta server they are
        # reshaped, or sent again, once its session.created tells (see _dialect_known).
        self._undecided: list[tuple[str, str]] = []
        self._session: SessionConfig | None = None
        self._conversation = ConversationState(max_history_items)
        self._ledger = AudioLedger()
        self._responses = ResponseRecords()
        self._gate = ResponseGate()
        # Item changes awaiting the server's answer, oldest first: event_id -> the event as sent.
        # A create's item always has an id (send_item_create gives one).
        self._unacked_creates: dict[str, ConversationItemCreate] = {}
        # The same creates by item id (item id -> event ids): an acknowledgement is found by a
        # look-up, not a scan (a replay of n items was quadratic).
        self._creates_of_item: dict[str, list[str]] = {}
        self._unacked_deletes: dict[str, ConversationItemDelete] = {}
        self._unacked_truncates: dict[str, ConversationItemTruncate] = {}
        # event_ids of out-of-band response.create events awaiting their response.created,
        # and the tags of those that have some.
        self._out_of_band_creates: list[str] = []
        self._out_of_band_tags: dict[str, tuple[str, ...]] = {}
        # Tags of requests the server refused, until the I/O layer asks (failed_request_tags).
        self._failed_tags: list[str] = []
        self._updates = UpdateTracker()
        self._update_log = update_log

    def _whole_samples(self, event: se.ResponseOutputAudioDelta) -> se.ResponseOutputAudioDelta:
        """A delta must hold whole samples: the tail of a cut sample is reported and dropped,
        and the rest goes on (the ledger and the playback clock count whole samples)."""
        width = self._sample_format.bytes_per_sample
        tail = len(event.delta) % width
        if tail:
            self._received.append(
                se.ProtocolErrorEvent(
                    message=f"response.output_audio.delta of item {short_repr(event.item_id)} "
                    f"holds {len(event.delta)} bytes, not whole {width}-byte samples: the last "
                    f"{tail} byte(s) were dropped and the rest kept",
                    event_type="response.output_audio.delta",
                    event_id=event.event_id,
                )
            )
            kept = msgspec.structs.replace(event, delta=event.delta[: len(event.delta) - tail])
            kept.__dict__.update(event.__dict__)  # the frame it came from (codec.raw_fields)
            return kept
        return event

    def _receive(self, event: ReceivedEvent) -> None:
        try:
            keep = self._apply(event)
        except Exception as exc:  # a state bug: reported, the session goes on
            self._received.append(internal_error(exc, event))
            return
        if keep:
            self._received.append(event)

    def _apply(self, event: ReceivedEvent) -> bool:
        """Change the state for ``event``; ``False`` when it is not to be handed out."""
        handler = HANDLERS.get(type(event))
        return handler is None or handler(self, event)

    # --- sending helpers --------------------------------------------------------------------------

    def _queue(self, event: _E) -> _E:
        if event.event_id is None:
            event = msgspec.structs.replace(event, event_id=self._ids("event"))
        frame = encode_event(event)
        self._outgoing.append(beta_client_frame(event.type, frame) if self._beta else frame)
        if self._beta is None and event.type in _BETA_SHAPED:
            self._undecided.append((event.type, frame))
        return event

    def _dialect_known(self, beta: bool | None) -> None:
        """A telling frame decided the server's dialect (``None``: it could still be either): a
        beta server is sent again, in its own shape, the session updates that went out in the
        GA shape before it told (a beta-only server refuses those and keeps its defaults)."""
        self._beta = beta
        if beta is None:
            return
        if beta and self._undecided:
            # Updates already sent go again, in order, ahead of what is still queued (which they
            # configure); what is still queued goes out once, in the beta shape.
            kinds = dict((frame, kind) for kind, frame in self._undecided)
            queued = set(self._outgoing)
            self._outgoing[:] = [
                *(
                    beta_client_frame(kind, frame)
                    for kind, frame in self._undecided
                    if kind == "session.update" and frame not in queued
                ),
                *(beta_client_frame(kinds[f], f) if f in kinds else f for f in self._outgoing),
            ]
        self._undecided.clear()

    def _create_sent(self, event: ConversationItemCreate) -> None:
        assert event.event_id is not None  # _queue gives every event one
        assert event.item.id is not None  # send_item_create gives every item one
        self._unacked_creates[event.event_id] = event
        self._creates_of_item.setdefault(event.item.id, []).append(event.event_id)

    def _create_answered(self, item_id: str) -> None:
        for event_id in self._creates_of_item.pop(item_id, ()):
            self._unacked_creates.pop(event_id, None)

    def _release_held_create(self) -> ResponseCreate | None:
        request = self._gate.release()
        if request is None:
            return None
        event_id = self._ids("event")
        event = self._queue(ResponseCreate(event_id=event_id, response=request.params))
        self._gate.create_sent(event_id, request, waits_for=self._pending_item_ids())
        return event

    def _delete_item(self, item_id: str) -> ConversationItemDelete:
        event = self._queue(ConversationItemDelete(item_id=item_id))
        assert event.event_id is not None  # _queue gives every event one
        self._unacked_deletes[event.event_id] = event
        return event

    def _silent_items(self) -> list[tuple[str, str]]:
        """``(item_id, response_id)``: the assistant messages of the responses in progress that
        may speak (:func:`~voxwire.protocol.interruption.plan_interruption` deletes those with
        no audio yet at an interruption)."""
        silent = []
        for response_id in self._gate.in_progress:
            record = self._responses.get(response_id)
            if record is not None and record.speaks:
                silent += [
                    (item_id, response_id)
                    for item_id in record.output_item_ids
                    if _is_assistant_message(self._conversation.get(item_id))
                ]
        return silent

    def _pending_item_ids(self) -> frozenset[str]:
        return frozenset(c.item.id for c in self._unacked_creates.values() if c.item.id)

    @property
    def _sample_format(self) -> SampleFormat:
        return self._session.output_sample_format if self._session is not None else PCM16_24K

    # --- receiving (one handler per event type; False drops the event) --------------------------

    def _on_session(self, event: se.SessionCreated | se.SessionUpdated) -> bool:
        self._session = event.session
        if isinstance(event, se.SessionUpdated):
            record = self._updates.acknowledged()
            if record is not None and record.origin == "agent" and self._update_log is not None:
                self._update_log.agent_applied(record.log_mark, record.config)
        return True

    def _on_item_added(self, event: se.ConversationItemAdded | se.ConversationItemCreated) -> bool:
        announced = event.item.id in self._conversation
        self._conversation.item_added(event.item, event.previous_item_id)
        if event.item.id is not None:
            self._create_answered(event.item.id)
            if not announced:
                self._delete_if_never_heard(event.item.id, event.item)
        return True

    def _delete_if_never_heard(self, item_id: str, item: Item) -> None:
        """An assistant message of an interrupted response that may speak, announced after the
        interruption: nothing of it was heard (its deltas are dropped), so it is deleted, as the
        interruption deletes the unheard items it knows (voxwire.protocol.interruption)."""
        response_id = self._conversation.response_of(item_id)
        record = self._responses.get(response_id) if response_id is not None else None
        if (
            record is not None
            and record.interrupted
            and record.speaks
            and _is_assistant_message(item)
            and not any(s.item_id == item_id for s in self._ledger.segments())
        ):
            self._delete_item(item_id)

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
        modalities = event.response.output_modalities
        record.speaks = modalities is None or "audio" in modalities
        # GA: conversation_id is null exactly when the response was created out of band.
        if event.response.conversation_id is None and self._out_of_band_creates:
            event_id = self._out_of_band_creates.pop(0)
            record.out_of_band = True
            record.tags = self._out_of_band_tags.pop(event_id, ())
        else:
            request = self._gate.answer(response_id, unanswered_items=self._pending_item_ids())
            if request is not None:
                record.source, record.tags = request.source, request.tags
        return True

    def _on_response_done(self, event: se.ResponseDone) -> bool:
        if event.response.id is not None:
            self._finish_response(event.response.id, event.response)
        return True

    def _finish_response(self, response_id: str, response: Response) -> None:
        self._responses.done(response, response_id)
        self._ledger.response_done(response_id)
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
        failed = self._gate.error(event_id)
        if failed is not None:
            self._failed_tags.extend(failed.tags)
        error = event.error
        message = error.message + (f" (param {error.param})" if error.param else "")
        if self._updates.rejected(event_id, message) is not None and self._update_log:
            self._update_log.rejected(event_id)
        if event_id in self._out_of_band_creates:
            self._out_of_band_creates.remove(event_id)
            self._failed_tags.extend(self._out_of_band_tags.pop(event_id, ()))
        if event_id is not None:
            # An item change failed: stop waiting for it.
            create = self._unacked_creates.pop(event_id, None)
            if create is not None:
                assert create.item.id is not None  # send_item_create gives every item one
                self._conversation.create_failed(create.item.id)
                waiting = self._creates_of_item.get(create.item.id, [])
                if event_id in waiting:
                    waiting.remove(event_id)
                if not waiting:
                    self._creates_of_item.pop(create.item.id, None)
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
        winner = self._responses.get(lost.response_id)
        if winner is not None:
            winner.tags = ()  # not theirs after all: they go with the request, asked again
        self._gate.requeue(lost.request)
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


def _is_assistant_message(item: Item | None) -> bool:
    return isinstance(item, MessageItem) and item.role == "assistant"


def internal_error(exc: Exception, event: ReceivedEvent | None) -> se.ProtocolErrorEvent:
    """What a frame that broke voxwire itself becomes (no input should: the fuzz suite looks
    for these). The state may lack that one event's change; nothing else is lost."""
    kind = event.type if event is not None else None
    return se.ProtocolErrorEvent(
        message=f"{INTERNAL_ERROR_PREFIX} {type(exc).__name__}: {exc}"[:500],
        event_type=kind,
        event_id=getattr(event, "event_id", None),
    )


_Handler = Callable[[ProtocolState, Any], bool]

#: Server event type -> handler. Types not listed change no state and are handed out as they are.
HANDLERS: dict[type, _Handler] = {
    se.SessionCreated: ProtocolState._on_session,
    se.SessionUpdated: ProtocolState._on_session,
    se.ConversationItemAdded: ProtocolState._on_item_added,
    se.ConversationItemCreated: ProtocolState._on_item_added,
    se.ConversationItemDone: ProtocolState._on_item_done,
    se.ConversationItemDeleted: ProtocolState._on_item_deleted,
    se.ConversationItemTruncated: ProtocolState._on_item_truncated,
    se.ResponseCreated: ProtocolState._on_response_created,
    se.ResponseDone: ProtocolState._on_response_done,
    se.ResponseOutputItemAdded: ProtocolState._on_output_item,
    se.ResponseOutputItemDone: ProtocolState._on_output_item,
    se.ResponseOutputAudioDelta: ProtocolState._on_audio_delta,
    se.ResponseOutputAudioDone: ProtocolState._on_audio_done,
    se.ResponseOutputAudioTranscriptDelta: ProtocolState._on_text_delta,
    se.ResponseOutputTextDelta: ProtocolState._on_text_delta,
    se.ResponseOutputAudioTranscriptDone: ProtocolState._on_transcript_done,
    se.ResponseOutputTextDone: ProtocolState._on_text_done,
    se.ResponseContentPartDone: ProtocolState._on_part_done,
    se.InputAudioTranscriptionDelta: ProtocolState._on_input_transcript_delta,
    se.InputAudioTranscriptionCompleted: ProtocolState._on_input_transcript_done,
    se.ResponseFunctionCallArgumentsDelta: ProtocolState._on_arguments_delta,
    se.ResponseMcpCallArgumentsDelta: ProtocolState._on_arguments_delta,
    se.ErrorEvent: ProtocolState._on_error,
    se.ProtocolErrorEvent: ProtocolState._on_protocol_error,
}
