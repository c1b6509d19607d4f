"""The 46 GA server events, plus the two events the decoder makes itself.

Each class is named after its wire ``type`` and holds the fields of the GA reference
(``openai.types.realtime.RealtimeServerEvent``). Real GA traffic also carries
``obfuscation`` on delta events (padding against length side channels); it is modelled where
it appears. Unknown fields are accepted and kept, as the official types keep them: a decoded
event holds on to its frame, and :func:`~voxwire.protocol.codec.unknown_fields` /
:func:`~voxwire.protocol.codec.raw_fields` read them from it when asked (session objects also
keep theirs in :attr:`SessionConfig.extra <voxwire.protocol.config.SessionConfig.extra>`).

Audio deltas hold ``bytes``: the base64 text of the wire is decoded while parsing.

:class:`UnknownServerEvent` stands for a ``type`` this module does not know (a newer server);
:class:`ProtocolErrorEvent` for a frame that could not be understood at all. Neither is ever
raised: the receive path hands them out like any other event.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from msgspec import Struct

from voxwire.protocol.config import SessionConfig
from voxwire.protocol.items import Item
from voxwire.protocol.objects import (
    Conversation,
    ErrorInfo,
    LogProb,
    RateLimit,
    Response,
    TranscriptDurationUsage,
    TranscriptionError,
    TranscriptionLanguage,
    TranscriptTokenUsage,
)

__all__ = [
    "SERVER_EVENT_TYPES",
    "ConversationCreated",
    "ConversationItemAdded",
    "ConversationItemCreated",
    "ConversationItemDeleted",
    "ConversationItemDone",
    "ConversationItemRetrieved",
    "ConversationItemTruncated",
    "ErrorEvent",
    "InputAudioBufferCleared",
    "InputAudioBufferCommitted",
    "InputAudioBufferDtmfEventReceived",
    "InputAudioBufferSpeechStarted",
    "InputAudioBufferSpeechStopped",
    "InputAudioBufferTimeoutTriggered",
    "InputAudioTranscriptionCompleted",
    "InputAudioTranscriptionDelta",
    "InputAudioTranscriptionFailed",
    "InputAudioTranscriptionSegment",
    "McpListToolsCompleted",
    "McpListToolsFailed",
    "McpListToolsInProgress",
    "OutputAudioBufferCleared",
    "OutputAudioBufferStarted",
    "OutputAudioBufferStopped",
    "ProtocolErrorEvent",
    "RateLimitsUpdated",
    "ReceivedEvent",
    "ResponseContentPart",
    "ResponseContentPartAdded",
    "ResponseContentPartDone",
    "ResponseCreated",
    "ResponseDone",
    "ResponseFunctionCallArgumentsDelta",
    "ResponseFunctionCallArgumentsDone",
    "ResponseMcpCallArgumentsDelta",
    "ResponseMcpCallArgumentsDone",
    "ResponseMcpCallCompleted",
    "ResponseMcpCallFailed",
    "ResponseMcpCallInProgress",
    "ResponseOutputAudioDelta",
    "ResponseOutputAudioDone",
    "ResponseOutputAudioTranscriptDelta",
    "ResponseOutputAudioTranscriptDone",
    "ResponseOutputItemAdded",
    "ResponseOutputItemDone",
    "ResponseOutputTextDelta",
    "ResponseOutputTextDone",
    "ServerEvent",
    "SessionCreated",
    "SessionUpdated",
    "UnknownServerEvent",
]


class _ServerEvent(
    Struct, tag_field="type", kw_only=True, frozen=True, dict=True, omit_defaults=True
):
    """Base of the typed server events: immutable, told apart by ``type``.

    ``dict=True`` gives each event a ``__dict__`` beside its fields, where the decoder keeps the
    frame it came from; :func:`~voxwire.protocol.codec.unknown_fields` reads the fields this
    SDK does not model from it, on demand. The frame is never encoded (only fields are).
    """

    @property
    def type(self) -> str:
        """The event's ``type`` on the wire."""
        return str(self.__struct_config__.tag)


class _Event(_ServerEvent, frozen=True):
    event_id: str


# --- session and conversation ---------------------------------------------------------------------


class SessionCreated(_Event, tag="session.created", frozen=True):
    """First event of a connection: the session with the server's defaults."""

    session: SessionConfig


class SessionUpdated(_Event, tag="session.updated", frozen=True):
    """The whole session after a ``session.update`` was applied."""

    session: SessionConfig


class ConversationCreated(_Event, tag="conversation.created", frozen=True):
    """The conversation this session writes to."""

    conversation: Conversation


class _ItemEvent(_Event, frozen=True):
    item: Item
    previous_item_id: str | None = None


class ConversationItemAdded(_ItemEvent, tag="conversation.item.added", frozen=True):
    """An item joined the conversation after ``previous_item_id`` (``None``: at the start)."""


class ConversationItemDone(_ItemEvent, tag="conversation.item.done", frozen=True):
    """An item is complete (its content is final)."""


class ConversationItemCreated(_ItemEvent, tag="conversation.item.created", frozen=True):
    """Older name of ``conversation.item.added``, still in the GA union."""


class ConversationItemRetrieved(_Event, tag="conversation.item.retrieved", frozen=True):
    """Answer to ``conversation.item.retrieve``: the item as the server holds it, with audio."""

    item: Item


class ConversationItemDeleted(_Event, tag="conversation.item.deleted", frozen=True):
    """Answer to ``conversation.item.delete``."""

    item_id: str


class ConversationItemTruncated(_Event, tag="conversation.item.truncated", frozen=True):
    """Answer to ``conversation.item.truncate``: audio cut at ``audio_end_ms``, transcript
    removed (GA: "ensure there is no text in the context that hasn't been heard")."""

    item_id: str
    content_index: int
    audio_end_ms: int


class InputAudioTranscriptionDelta(
    _Event, tag="conversation.item.input_audio_transcription.delta", frozen=True
):
    """Part of the transcript of the user's audio."""

    item_id: str
    content_index: int | None = None
    delta: str | None = None
    logprobs: list[LogProb] | None = None
    obfuscation: str | None = None


class InputAudioTranscriptionCompleted(
    _Event, tag="conversation.item.input_audio_transcription.completed", frozen=True
):
    """The full transcript of the user's audio (asynchronous to the response)."""

    item_id: str
    content_index: int
    transcript: str
    # Required by the GA reference; optional here because beta servers left it out and the
    # transcript matters more than its bill.
    usage: TranscriptTokenUsage | TranscriptDurationUsage | None = None
    logprobs: list[LogProb] | None = None
    languages: list[TranscriptionLanguage] | None = None


class InputAudioTranscriptionFailed(
    _Event, tag="conversation.item.input_audio_transcription.failed", frozen=True
):
    """Transcription of the user's audio failed."""

    item_id: str
    content_index: int
    error: TranscriptionError


class InputAudioTranscriptionSegment(
    _Event, tag="conversation.item.input_audio_transcription.segment", frozen=True
):
    """A diarized segment of the user's audio."""

    item_id: str
    content_index: int
    id: str
    text: str
    speaker: str
    start: float
    end: float


# --- input audio buffer ---------------------------------------------------------------------------


class InputAudioBufferCommitted(_Event, tag="input_audio_buffer.committed", frozen=True):
    """The input buffer became the user item ``item_id`` after ``previous_item_id``."""

    item_id: str
    previous_item_id: str | None = None


class InputAudioBufferCleared(_Event, tag="input_audio_buffer.cleared", frozen=True):
    """Answer to ``input_audio_buffer.clear``."""


class InputAudioBufferSpeechStarted(_Event, tag="input_audio_buffer.speech_started", frozen=True):
    """Server VAD heard speech start at ``audio_start_ms`` of the input stream."""

    item_id: str
    audio_start_ms: int


class InputAudioBufferSpeechStopped(_Event, tag="input_audio_buffer.speech_stopped", frozen=True):
    """Server VAD heard speech end at ``audio_end_ms`` of the input stream."""

    item_id: str
    audio_end_ms: int


class InputAudioBufferTimeoutTriggered(
    _Event, tag="input_audio_buffer.timeout_triggered", frozen=True
):
    """Server VAD's ``idle_timeout_ms`` passed without speech."""

    item_id: str
    audio_start_ms: int
    audio_end_ms: int


class InputAudioBufferDtmfEventReceived(
    _ServerEvent, tag="input_audio_buffer.dtmf_event_received", frozen=True
):
    """A DTMF key on a SIP call (the GA reference gives this event no ``event_id``)."""

    event: str
    received_at: int
    event_id: str | None = None


# --- output audio buffer (WebRTC / SIP) -----------------------------------------------------------


class OutputAudioBufferStarted(_Event, tag="output_audio_buffer.started", frozen=True):
    """WebRTC/SIP: the server started playing ``response_id``'s audio."""

    response_id: str


class OutputAudioBufferStopped(_Event, tag="output_audio_buffer.stopped", frozen=True):
    """WebRTC/SIP: the server's output buffer drained."""

    response_id: str


class OutputAudioBufferCleared(_Event, tag="output_audio_buffer.cleared", frozen=True):
    """WebRTC/SIP: the server's output buffer was cut (barge-in, ``output_audio_buffer.clear``)."""

    response_id: str


# --- responses ------------------------------------------------------------------------------------


class ResponseCreated(_Event, tag="response.created", frozen=True):
    """A response started (``status`` is ``in_progress``)."""

    response: Response


class ResponseDone(_Event, tag="response.done", frozen=True):
    """A response ended; ``response.status`` says how and ``usage`` what it cost."""

    response: Response


class ResponseOutputItemAdded(_Event, tag="response.output_item.added", frozen=True):
    """The response produced a new item at ``output_index``."""

    response_id: str
    output_index: int
    item: Item


class ResponseOutputItemDone(_Event, tag="response.output_item.done", frozen=True):
    """An output item of the response is complete."""

    response_id: str
    output_index: int
    item: Item


class ResponseContentPart(Struct, kw_only=True, frozen=True, gc=False, omit_defaults=True):
    """A content part as streamed in ``response.content_part.*`` (``type`` ``text`` or
    ``audio`` here, unlike items, which say ``output_text`` / ``output_audio``)."""

    type: Literal["text", "audio"] | None = None
    text: str | None = None
    audio: bytes | None = None
    transcript: str | None = None


class _PartEvent(_Event, frozen=True):
    response_id: str
    item_id: str
    output_index: int
    content_index: int


class ResponseContentPartAdded(_PartEvent, tag="response.content_part.added", frozen=True):
    """A content part was added to an assistant item."""

    part: ResponseContentPart


class ResponseContentPartDone(_PartEvent, tag="response.content_part.done", frozen=True):
    """A content part is complete."""

    part: ResponseContentPart


class ResponseOutputTextDelta(_PartEvent, tag="response.output_text.delta", frozen=True):
    """More text of an ``output_text`` part."""

    delta: str
    obfuscation: str | None = None


class ResponseOutputTextDone(_PartEvent, tag="response.output_text.done", frozen=True):
    """The whole text of an ``output_text`` part."""

    text: str


class ResponseOutputAudioDelta(_PartEvent, tag="response.output_audio.delta", frozen=True):
    """More audio of an ``output_audio`` part, decoded from base64."""

    delta: bytes
    obfuscation: str | None = None


class ResponseOutputAudioDone(_PartEvent, tag="response.output_audio.done", frozen=True):
    """All audio of the part has been sent."""


class ResponseOutputAudioTranscriptDelta(
    _PartEvent, tag="response.output_audio_transcript.delta", frozen=True
):
    """More transcript of an ``output_audio`` part."""

    delta: str
    obfuscation: str | None = None


class ResponseOutputAudioTranscriptDone(
    _PartEvent, tag="response.output_audio_transcript.done", frozen=True
):
    """The whole transcript of an ``output_audio`` part."""

    transcript: str


class _CallEvent(_Event, frozen=True):
    response_id: str
    item_id: str
    output_index: int


class ResponseFunctionCallArgumentsDelta(
    _CallEvent, tag="response.function_call_arguments.delta", frozen=True
):
    """More JSON text of a function call's arguments."""

    call_id: str
    delta: str
    obfuscation: str | None = None


class ResponseFunctionCallArgumentsDone(
    _CallEvent, tag="response.function_call_arguments.done", frozen=True
):
    """A function call's complete arguments (the call can be run now)."""

    call_id: str
    name: str
    arguments: str


class ResponseMcpCallArgumentsDelta(
    _CallEvent, tag="response.mcp_call_arguments.delta", frozen=True
):
    """More JSON text of an MCP call's arguments."""

    delta: str
    obfuscation: str | None = None


class ResponseMcpCallArgumentsDone(_CallEvent, tag="response.mcp_call_arguments.done", frozen=True):
    """An MCP call's complete arguments."""

    arguments: str


class _McpCallStatus(_Event, frozen=True):
    item_id: str
    output_index: int


class ResponseMcpCallInProgress(_McpCallStatus, tag="response.mcp_call.in_progress", frozen=True):
    """The server is calling an MCP tool."""


class ResponseMcpCallCompleted(_McpCallStatus, tag="response.mcp_call.completed", frozen=True):
    """An MCP tool call succeeded."""


class ResponseMcpCallFailed(_McpCallStatus, tag="response.mcp_call.failed", frozen=True):
    """An MCP tool call failed."""


# --- MCP tool listing -----------------------------------------------------------------------------


class McpListToolsInProgress(_Event, tag="mcp_list_tools.in_progress", frozen=True):
    """The server is listing an MCP server's tools."""

    item_id: str


class McpListToolsCompleted(_Event, tag="mcp_list_tools.completed", frozen=True):
    """The MCP tool list is in item ``item_id``."""

    item_id: str


class McpListToolsFailed(_Event, tag="mcp_list_tools.failed", frozen=True):
    """Listing the MCP server's tools failed."""

    item_id: str


# --- errors and limits ----------------------------------------------------------------------------


class ErrorEvent(_Event, tag="error", frozen=True):
    """The server reports an error; the session stays open (GA: errors are not fatal)."""

    error: ErrorInfo


class RateLimitsUpdated(_Event, tag="rate_limits.updated", frozen=True):
    """Limits after the start of a response."""

    rate_limits: list[RateLimit]


# --- made by the decoder --------------------------------------------------------------------------


class UnknownServerEvent(Struct, kw_only=True, frozen=True):
    """An event whose ``type`` this SDK does not know; ``raw`` is the whole decoded mapping."""

    type: str
    raw: dict[str, Any]
    event_id: str | None = None


class ProtocolErrorEvent(Struct, kw_only=True, frozen=True):
    """A frame that breaks the protocol (bad JSON, missing or mistyped fields).

    ``message`` says what was wrong and where; ``event_type`` and ``raw`` hold what could be
    read (``raw`` is ``None`` when the frame was not a JSON object). The protocol state is left
    as it was before the frame.
    """

    message: str
    event_type: str | None = None
    event_id: str | None = None
    raw: dict[str, Any] | None = None

    @property
    def type(self) -> str:
        """Not a wire type: marks the events the decoder made from bad input."""
        return "voxwire.protocol_error"


ServerEvent = (
    ConversationCreated
    | ConversationItemCreated
    | ConversationItemDeleted
    | InputAudioTranscriptionCompleted
    | InputAudioTranscriptionDelta
    | InputAudioTranscriptionFailed
    | ConversationItemRetrieved
    | ConversationItemTruncated
    | ErrorEvent
    | InputAudioBufferCleared
    | InputAudioBufferCommitted
    | InputAudioBufferDtmfEventReceived
    | InputAudioBufferSpeechStarted
    | InputAudioBufferSpeechStopped
    | RateLimitsUpdated
    | ResponseOutputAudioDelta
    | ResponseOutputAudioDone
    | ResponseOutputAudioTranscriptDelta
    | ResponseOutputAudioTranscriptDone
    | ResponseContentPartAdded
    | ResponseContentPartDone
    | ResponseCreated
    | ResponseDone
    | ResponseFunctionCallArgumentsDelta
    | ResponseFunctionCallArgumentsDone
    | ResponseOutputItemAdded
    | ResponseOutputItemDone
    | ResponseOutputTextDelta
    | ResponseOutputTextDone
    | SessionCreated
    | SessionUpdated
    | OutputAudioBufferStarted
    | OutputAudioBufferStopped
    | OutputAudioBufferCleared
    | ConversationItemAdded
    | ConversationItemDone
    | InputAudioBufferTimeoutTriggered
    | InputAudioTranscriptionSegment
    | McpListToolsInProgress
    | McpListToolsCompleted
    | McpListToolsFailed
    | ResponseMcpCallArgumentsDelta
    | ResponseMcpCallArgumentsDone
    | ResponseMcpCallInProgress
    | ResponseMcpCallCompleted
    | ResponseMcpCallFailed
)
"""Every typed GA server event (the order of ``openai.types.realtime.RealtimeServerEvent``)."""

#: Wire ``type`` -> class, for the 46 GA server events.
SERVER_EVENT_TYPES: dict[str, type[_ServerEvent]] = {
    str(cls.__struct_config__.tag): cls for cls in get_args(ServerEvent)
}

ReceivedEvent = ServerEvent | UnknownServerEvent | ProtocolErrorEvent
"""What the receive path hands out: a typed event, an unknown one, or a protocol error."""
