"""The events a session hands to the application (``async for event in session``).

Each is a frozen dataclass with a ``type`` string, so both ``match event: case AudioEvent(...)``
and ``if event.type == "audio"`` work, and a union of them narrows by ``type`` under mypy.

They are made from the wire events by :class:`voxwire.asyncio.translate.EventTranslator`; the
wire events themselves are available too, opt-in, as :class:`RawServerEvent`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from voxwire.asyncio.history import HistoryItem
from voxwire.protocol.objects import StatusDetails, Usage
from voxwire.protocol.server_events import ReceivedEvent

__all__ = [
    "AgentState",
    "AgentStateChangedEvent",
    "AssistantTranscriptDeltaEvent",
    "AssistantTranscriptDoneEvent",
    "AudioEndEvent",
    "AudioEvent",
    "AudioInterruptedEvent",
    "CloseEvent",
    "CloseReason",
    "ErrorEvent",
    "ErrorSource",
    "HistoryAddedEvent",
    "HistoryUpdatedEvent",
    "RawServerEvent",
    "ResponseDoneEvent",
    "ResponseStartedEvent",
    "SessionEvent",
    "UserInputTranscribedEvent",
    "UserState",
    "UserStateChangedEvent",
]

AgentState = Literal["initializing", "idle", "listening", "thinking", "speaking"]
"""``initializing`` until the server's ``session.created``; then ``listening`` (turn detection
on: the server waits for the user) or ``idle`` (turn detection off: nothing happens until the
application asks); ``thinking`` from ``response.created`` to its first text or audio;
``speaking`` until the last response in progress is done."""

UserState = Literal["listening", "speaking"]
"""``speaking`` between the server's ``speech_started`` and ``speech_stopped``."""

ErrorSource = Literal["server", "protocol", "session", "transcription", "audio_output"]
"""``server``: an ``error`` event from the server; ``protocol``: a frame the protocol core
could not read; ``session``: the session failed handling an event (a bug, reported, not
fatal); ``transcription``: input transcription failed; ``audio_output``: audio could not be
queued for playback."""

CloseReason = Literal["client_closed", "server_closed", "connection_lost", "error"]
"""``client_closed``: :meth:`RealtimeSession.close`; ``server_closed``: the server closed the
connection normally; ``connection_lost``: it ended without a normal close; ``error``: the
session failed (``error`` says how)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AudioEvent:
    """A chunk of the assistant's audio, in the session's output format (PCM16 24 kHz
    little-endian unless configured otherwise). Not emitted when an audio output is attached:
    the audio goes straight to it."""

    type: Literal["audio"] = field(default="audio", init=False)
    item_id: str
    content_index: int
    response_id: str
    pcm: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class AudioEndEvent:
    """No more audio will come for this content part (``response.output_audio.done``)."""

    type: Literal["audio_end"] = field(default="audio_end", init=False)
    item_id: str
    content_index: int
    response_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class AudioInterruptedEvent:
    """Playback of this content part must stop: the session interrupted it (``interrupt()``, or
    the user started speaking with server VAD). ``played_ms``: what was heard, when known
    (``None``: the item was deleted as unheard, or nothing tracked playback)."""

    type: Literal["audio_interrupted"] = field(default="audio_interrupted", init=False)
    item_id: str
    content_index: int
    played_ms: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class AssistantTranscriptDeltaEvent:
    """More of what the assistant says: audio transcript or text (``modality``)."""

    type: Literal["assistant_transcript_delta"] = field(
        default="assistant_transcript_delta", init=False
    )
    item_id: str
    content_index: int
    response_id: str
    delta: str
    modality: Literal["audio", "text"]


@dataclass(frozen=True, kw_only=True, slots=True)
class AssistantTranscriptDoneEvent:
    """The whole transcript (or text) of one content part of the assistant."""

    type: Literal["assistant_transcript_done"] = field(
        default="assistant_transcript_done", init=False
    )
    item_id: str
    content_index: int
    response_id: str
    transcript: str
    modality: Literal["audio", "text"]


@dataclass(frozen=True, kw_only=True, slots=True)
class UserInputTranscribedEvent:
    """What the user said (input transcription on): ``transcript`` so far, ``is_final`` once
    the transcription completed."""

    type: Literal["user_input_transcribed"] = field(default="user_input_transcribed", init=False)
    item_id: str
    content_index: int
    transcript: str
    is_final: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class HistoryAddedEvent:
    """An item joined the conversation (``session.history`` has it, in server order)."""

    type: Literal["history_added"] = field(default="history_added", init=False)
    item: HistoryItem


@dataclass(frozen=True, kw_only=True, slots=True)
class HistoryUpdatedEvent:
    """Items changed (completed, transcribed, truncated, deleted); ``history`` is the whole
    history after the change."""

    type: Literal["history_updated"] = field(default="history_updated", init=False)
    history: tuple[HistoryItem, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponseStartedEvent:
    """The model started a response (``response.created``)."""

    type: Literal["response_started"] = field(default="response_started", init=False)
    response_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponseDoneEvent:
    """A response ended: ``status`` completed / cancelled / incomplete / failed, with details
    and token usage."""

    type: Literal["response_done"] = field(default="response_done", init=False)
    response_id: str
    status: str | None
    status_details: StatusDetails | None = None
    usage: Usage | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentStateChangedEvent:
    type: Literal["agent_state_changed"] = field(default="agent_state_changed", init=False)
    old_state: AgentState
    new_state: AgentState


@dataclass(frozen=True, kw_only=True, slots=True)
class UserStateChangedEvent:
    type: Literal["user_state_changed"] = field(default="user_state_changed", init=False)
    old_state: UserState
    new_state: UserState


@dataclass(frozen=True, kw_only=True, slots=True)
class ErrorEvent:
    """Something went wrong and the session goes on when ``recoverable``. ``code``/``param``/
    ``event_id`` come from a server error (``event_id`` names the client event that failed);
    ``exception`` is set when the session itself caught one."""

    type: Literal["error"] = field(default="error", init=False)
    message: str
    source: ErrorSource
    recoverable: bool = True
    code: str | None = None
    param: str | None = None
    event_id: str | None = None
    exception: BaseException | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class CloseEvent:
    """The session is over; always the last event. ``error`` is ``None`` for a normal close;
    ``code`` is the websocket close code when there was one."""

    type: Literal["close"] = field(default="close", init=False)
    reason: CloseReason
    error: BaseException | None = None
    code: int | None = None
    detail: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class RawServerEvent:
    """A server event as the protocol core decoded it (opt-in: ``raw_server_events=True``;
    audio deltas are not repeated here — they are :class:`AudioEvent`)."""

    type: Literal["raw_server_event"] = field(default="raw_server_event", init=False)
    event: ReceivedEvent


SessionEvent: TypeAlias = (
    AudioEvent
    | AudioEndEvent
    | AudioInterruptedEvent
    | AssistantTranscriptDeltaEvent
    | AssistantTranscriptDoneEvent
    | UserInputTranscribedEvent
    | HistoryAddedEvent
    | HistoryUpdatedEvent
    | ResponseStartedEvent
    | ResponseDoneEvent
    | AgentStateChangedEvent
    | UserStateChangedEvent
    | ErrorEvent
    | CloseEvent
    | RawServerEvent
)
"""Every event a session hands out."""
