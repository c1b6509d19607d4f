"""Wire events in, session events out — no I/O, no awaiting.

:class:`EventTranslator` reads each event the protocol core hands out (after the core updated
its state with it) and says which session events it means, keeping the two small state machines
the wire does not spell out: the agent's state and the user's. The session feeds it and queues
what it returns; a test can drive it with plain calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from msgspec import UNSET

import voxwire.asyncio.events as ev
from voxwire.asyncio.events.history import build_history, history_item
from voxwire.protocol import server_events as se
from voxwire.protocol.config import AudioConfig, AudioInputConfig, SessionConfig
from voxwire.protocol.protocol import RealtimeProtocol

__all__ = ["EventTranslator", "turn_detection_on", "turn_interrupts_response"]


def turn_detection_on(session: SessionConfig | None) -> bool:
    """The server detects turns (GA default: server VAD) unless ``turn_detection`` is null."""
    input_config = _input_config(session)
    return input_config is None or input_config.turn_detection is not None


def turn_interrupts_response(session: SessionConfig | None) -> bool:
    """Speech from the user cuts the response in progress (``interrupt_response``, default
    true) — the server cancels it, the client stops playback and truncates what was heard."""
    input_config = _input_config(session)
    if input_config is None or input_config.turn_detection is UNSET:
        return True
    detection = input_config.turn_detection
    return detection is not None and detection.interrupt_response is not False


def _input_config(session: SessionConfig | None) -> AudioInputConfig | None:
    if session is None or not isinstance(session.audio, AudioConfig):
        return None
    return session.audio.input if isinstance(session.audio.input, AudioInputConfig) else None


class EventTranslator:
    """Turns the protocol core's events into :mod:`voxwire.asyncio.events`.

    ``raw``: also hand out every server event as :class:`~voxwire.asyncio.events.RawServerEvent`
    (audio deltas excepted). ``audio_events``: hand out audio deltas as
    :class:`~voxwire.asyncio.events.AudioEvent` (off when an audio output takes them).
    """

    def __init__(
        self,
        protocol: RealtimeProtocol,
        *,
        raw: bool,
        audio_events: bool,
        emit: Callable[[ev.SessionEvent], None] = lambda event: None,
        playback_pending: Callable[[], bool] = lambda: False,
        wait_for_playback: Callable[[], None] = lambda: None,
        away_after_s: float | None = None,
        now: Callable[[], float] = lambda: 0.0,
    ) -> None:
        self._protocol = protocol
        self._raw = raw
        self._audio_events = audio_events
        self._emit = emit
        self._announced: set[str] = set()
        self._completed: set[str] = set()
        self.agent_state: ev.AgentState = "initializing"
        #: With an audio output attached: whether it still has audio of this session to play.
        #: While it has, the agent stays ``speaking`` after its responses are done, until
        #: :meth:`playback_drained` (``wait_for_playback`` is called to ask for that call).
        self.playback_pending = playback_pending
        self._wait_for_playback = wait_for_playback
        self.waiting_for_playback = False
        self.user_state: ev.UserState = "listening"
        #: ``away``: after this long with both the user and the agent quiet (None: never).
        self._away_after_s = away_after_s
        self._now = now
        self._quiet_since: float | None = None  # when both became quiet; None: someone is not
        self._history_held = False
        self._history_changed = False

    def hold_history(self) -> None:
        """A restoration begins (a resumed conversation replayed item by item): the history
        changes with every acknowledged item, but ``history_updated`` waits for
        :meth:`release_history` — one event per restoration, not one (each a copy of the whole
        history) per item, which made a restoration quadratic in its length."""
        self._history_held = True

    def release_history(self) -> None:
        """The restoration is over: one ``history_updated`` if the history changed meanwhile."""
        self._history_held = False
        if self._history_changed:
            self._history_changed = False
            out: list[ev.SessionEvent] = []
            self._history_updated(out)
            for event in out:
                self._emit(event)

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        """Translate ``event`` and emit what it means (a session consumer)."""
        for out in self.translate(event):
            self._emit(out)
        if self.waiting_for_playback:
            self._wait_for_playback()

    def connection_replaced(self, protocol: RealtimeProtocol) -> None:
        """A new connection's core took over (after a reconnection): the agent's state and the
        wait for playback carry on; the new server has heard nothing of the user yet."""
        self._protocol = protocol
        self._announced.clear()
        self._completed.clear()
        self.user_state = "listening"
        self._note_quiet()

    def translate(self, event: se.ReceivedEvent) -> list[ev.SessionEvent]:
        out: list[ev.SessionEvent] = []
        if self._raw and not isinstance(event, se.ResponseOutputAudioDelta):
            out.append(ev.RawServerEvent(event=event))
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event, out)
        return out

    # --- state machines ---------------------------------------------------------------------------

    def _agent(self, state: ev.AgentState, out: list[ev.SessionEvent]) -> None:
        if state != self.agent_state:
            out.append(ev.AgentStateChangedEvent(old_state=self.agent_state, new_state=state))
            self.agent_state = state
            self._note_quiet()

    def _user(self, state: ev.UserState, out: list[ev.SessionEvent]) -> None:
        if state != self.user_state:
            out.append(ev.UserStateChangedEvent(old_state=self.user_state, new_state=state))
            self.user_state = state
            self._note_quiet()

    def _note_quiet(self) -> None:
        """Start (or stop) the silence that makes the user ``away``: the user listening and the
        agent waiting for them (LiveKit's ``user_away_timeout``)."""
        quiet = self.user_state == "listening" and self.agent_state in ("listening", "idle")
        if not quiet:
            self._quiet_since = None
        elif self._quiet_since is None:
            self._quiet_since = self._now()

    def away_due_s(self) -> float | None:
        """When the user will be ``away`` if nothing happens (session clock); None: not
        counting (someone is speaking, the user is away already, or the option is off)."""
        if self._away_after_s is None or self._quiet_since is None:
            return None
        return self._quiet_since + self._away_after_s

    def check_away(self) -> list[ev.SessionEvent]:
        """``user_state_changed`` to ``away`` if the silence lasted long enough by now; the
        user's next speech (``speech_started``) ends it."""
        due = self.away_due_s()
        out: list[ev.SessionEvent] = []
        if due is not None and self._now() >= due:
            self._user("away", out)
        return out

    def _waiting_state(self) -> ev.AgentState:
        return "listening" if turn_detection_on(self._protocol.session) else "idle"

    def _history_updated(self, out: list[ev.SessionEvent]) -> None:
        if self._history_held:
            self._history_changed = True
            return
        out.append(
            ev.HistoryUpdatedEvent(history=tuple(build_history(self._protocol.conversation)))
        )

    # --- handlers (one per wire event type) -------------------------------------------------------

    def _on_session(
        self, event: se.SessionCreated | se.SessionUpdated, out: list[ev.SessionEvent]
    ) -> None:
        if self.agent_state in ("initializing", "idle", "listening"):
            self._agent(self._waiting_state(), out)

    def _on_item_added(
        self,
        event: se.ConversationItemAdded | se.ConversationItemCreated,
        out: list[ev.SessionEvent],
    ) -> None:
        item_id = event.item.id
        if item_id is None:
            return
        item = history_item(self._protocol.conversation, item_id)
        if item is None:
            return
        if item_id in self._announced:
            self._history_updated(out)
        else:
            self._announced.add(item_id)
            self._keep_to_conversation()
            out.append(ev.HistoryAddedEvent(item=item))

    def _on_history_changed(self, event: se.ReceivedEvent, out: list[ev.SessionEvent]) -> None:
        self._history_updated(out)

    def _on_item_done(self, event: se.ConversationItemDone, out: list[ev.SessionEvent]) -> None:
        self._history_updated(out)
        item_id = event.item.id
        if item_id is None or item_id in self._completed:
            return
        item = history_item(self._protocol.conversation, item_id)
        if item is not None:
            self._completed.add(item_id)
            self._keep_to_conversation()
            out.append(ev.ConversationItemAddedEvent(item=item))

    def _keep_to_conversation(self) -> None:
        """Forget the ids of items no longer in the conversation (deleted, or forgotten for
        ``max_history_items``): an event about them emits nothing (``history_item`` is
        ``None``), so only members matter. Amortised: done when the sets doubled past it."""
        conversation = self._protocol.conversation
        limit = 2 * len(conversation) + 64
        if len(self._announced) > limit or len(self._completed) > limit:
            self._announced = {i for i in self._announced if i in conversation}
            self._completed = {i for i in self._completed if i in conversation}

    def _on_item_deleted(
        self, event: se.ConversationItemDeleted, out: list[ev.SessionEvent]
    ) -> None:
        self._announced.discard(event.item_id)
        self._completed.discard(event.item_id)
        self._history_updated(out)

    def _on_dtmf(
        self, event: se.InputAudioBufferDtmfEventReceived, out: list[ev.SessionEvent]
    ) -> None:
        out.append(ev.DtmfEvent(key=event.event, received_at=event.received_at))

    def _on_speech_started(
        self, event: se.InputAudioBufferSpeechStarted, out: list[ev.SessionEvent]
    ) -> None:
        self._user("speaking", out)

    def _on_speech_stopped(
        self, event: se.InputAudioBufferSpeechStopped, out: list[ev.SessionEvent]
    ) -> None:
        self._user("listening", out)

    def _on_transcription_delta(
        self, event: se.InputAudioTranscriptionDelta, out: list[ev.SessionEvent]
    ) -> None:
        index = event.content_index or 0
        so_far = self._protocol.conversation.transcript(event.item_id, index)
        out.append(
            ev.UserInputTranscribedEvent(
                item_id=event.item_id, content_index=index, transcript=so_far or "", is_final=False
            )
        )

    def _on_transcription_done(
        self, event: se.InputAudioTranscriptionCompleted, out: list[ev.SessionEvent]
    ) -> None:
        out.append(
            ev.UserInputTranscribedEvent(
                item_id=event.item_id,
                content_index=event.content_index,
                transcript=event.transcript,
                is_final=True,
            )
        )
        self._history_updated(out)

    def _on_transcription_failed(
        self, event: se.InputAudioTranscriptionFailed, out: list[ev.SessionEvent]
    ) -> None:
        error = event.error
        out.append(
            ev.ErrorEvent(
                message=error.message or f"input transcription of {event.item_id} failed",
                source="transcription",
                code=error.code,
                param=error.param,
            )
        )

    def _on_response_created(self, event: se.ResponseCreated, out: list[ev.SessionEvent]) -> None:
        response_id = event.response.id
        if response_id is None:
            return
        out.append(ev.ResponseStartedEvent(response_id=response_id))
        record = self._protocol.responses.get(response_id)
        if (record is None or not record.out_of_band) and self.agent_state != "speaking":
            self._agent("thinking", out)

    def _on_response_done(self, event: se.ResponseDone, out: list[ev.SessionEvent]) -> None:
        response = event.response
        if response.id is not None:
            out.append(
                ev.ResponseDoneEvent(
                    response_id=response.id,
                    status=response.status,
                    status_details=response.status_details,
                    usage=response.usage,
                )
            )
        if not self._protocol.responses_in_progress and self.agent_state in (
            "thinking",
            "speaking",
        ):
            if self.agent_state == "speaking" and self.playback_pending():
                self.waiting_for_playback = True  # the listener is still hearing it
            else:
                self._agent(self._waiting_state(), out)

    def playback_drained(self) -> list[ev.SessionEvent]:
        """The audio output played its last queued sample (or was cut): the agent stops
        speaking unless a new response is under way."""
        out: list[ev.SessionEvent] = []
        if self.waiting_for_playback:
            self.waiting_for_playback = False
            if not self._protocol.responses_in_progress and self.agent_state == "speaking":
                self._agent(self._waiting_state(), out)
        return out

    def _speaking(self, response_id: str, out: list[ev.SessionEvent]) -> None:
        record = self._protocol.responses.get(response_id)
        if record is None or not record.out_of_band:
            self._agent("speaking", out)

    def _on_audio_delta(
        self, event: se.ResponseOutputAudioDelta, out: list[ev.SessionEvent]
    ) -> None:
        self._speaking(event.response_id, out)
        if self._audio_events:
            out.append(
                ev.AudioEvent(
                    item_id=event.item_id,
                    content_index=event.content_index,
                    response_id=event.response_id,
                    pcm=event.delta,
                )
            )

    def _on_audio_done(self, event: se.ResponseOutputAudioDone, out: list[ev.SessionEvent]) -> None:
        out.append(
            ev.AudioEndEvent(
                item_id=event.item_id,
                content_index=event.content_index,
                response_id=event.response_id,
            )
        )

    def _on_text_delta(
        self,
        event: se.ResponseOutputAudioTranscriptDelta | se.ResponseOutputTextDelta,
        out: list[ev.SessionEvent],
    ) -> None:
        self._speaking(event.response_id, out)
        out.append(
            ev.AssistantTranscriptDeltaEvent(
                item_id=event.item_id,
                content_index=event.content_index,
                response_id=event.response_id,
                delta=event.delta,
                modality="audio"
                if isinstance(event, se.ResponseOutputAudioTranscriptDelta)
                else "text",
            )
        )

    def _on_text_done(
        self,
        event: se.ResponseOutputAudioTranscriptDone | se.ResponseOutputTextDone,
        out: list[ev.SessionEvent],
    ) -> None:
        modality: Literal["audio", "text"]
        if isinstance(event, se.ResponseOutputAudioTranscriptDone):
            text, modality = event.transcript, "audio"
        else:
            text, modality = event.text, "text"
        out.append(
            ev.AssistantTranscriptDoneEvent(
                item_id=event.item_id,
                content_index=event.content_index,
                response_id=event.response_id,
                transcript=text,
                modality=modality,
            )
        )

    def _on_error(self, event: se.ErrorEvent, out: list[ev.SessionEvent]) -> None:
        error = event.error
        out.append(
            ev.ErrorEvent(
                message=error.message,
                source="server",
                code=error.code,
                param=error.param,
                event_id=error.event_id,
            )
        )

    def _on_protocol_error(self, event: se.ProtocolErrorEvent, out: list[ev.SessionEvent]) -> None:
        out.append(ev.ErrorEvent(message=event.message, source="protocol", event_id=event.event_id))


_Handler = Callable[[EventTranslator, Any, list[ev.SessionEvent]], None]

#: Wire event type -> handler; other types become no session event (raw excepted).
_HANDLERS: dict[type, _Handler] = {
    se.InputAudioBufferDtmfEventReceived: EventTranslator._on_dtmf,
    se.SessionCreated: EventTranslator._on_session,
    se.SessionUpdated: EventTranslator._on_session,
    se.ConversationItemAdded: EventTranslator._on_item_added,
    se.ConversationItemCreated: EventTranslator._on_item_added,
    se.ConversationItemDone: EventTranslator._on_item_done,
    se.ConversationItemTruncated: EventTranslator._on_history_changed,
    se.ConversationItemDeleted: EventTranslator._on_item_deleted,
    se.InputAudioBufferSpeechStarted: EventTranslator._on_speech_started,
    se.InputAudioBufferSpeechStopped: EventTranslator._on_speech_stopped,
    se.InputAudioTranscriptionDelta: EventTranslator._on_transcription_delta,
    se.InputAudioTranscriptionCompleted: EventTranslator._on_transcription_done,
    se.InputAudioTranscriptionFailed: EventTranslator._on_transcription_failed,
    se.ResponseCreated: EventTranslator._on_response_created,
    se.ResponseDone: EventTranslator._on_response_done,
    se.ResponseOutputAudioDelta: EventTranslator._on_audio_delta,
    se.ResponseOutputAudioDone: EventTranslator._on_audio_done,
    se.ResponseOutputAudioTranscriptDelta: EventTranslator._on_text_delta,
    se.ResponseOutputTextDelta: EventTranslator._on_text_delta,
    se.ResponseOutputAudioTranscriptDone: EventTranslator._on_text_done,
    se.ResponseOutputTextDone: EventTranslator._on_text_done,
    se.ErrorEvent: EventTranslator._on_error,
    se.ProtocolErrorEvent: EventTranslator._on_protocol_error,
}
