"""One response as GA events, without I/O: :class:`ResponseBuilder`.

The order is the one of the real GA traces (``tests/fixtures/realtime``)::

    response.created
      response.output_item.added → conversation.item.added → response.content_part.added
        response.output_audio_transcript.delta / response.output_audio.delta (interleaved)
        or response.output_text.delta
      response.output_audio.done → response.output_audio_transcript.done  (or output_text.done)
      → response.content_part.done → response.output_item.done → conversation.item.done
      (function calls: output_item.added → conversation.item.added →
       function_call_arguments.delta… → .done → output_item.done → conversation.item.done)
    rate_limits.updated
    response.done (with usage)

Clients must not depend on where ``rate_limits.updated`` comes (beta logs put it right after
``response.created``; the GA log goes straight on to ``response.output_item.added``); this server
sends it once per response, just before ``response.done``.

Out-of-band responses (``conversation: "none"``) have ``conversation_id: null`` and their items
never join the conversation, so they have no ``conversation.item.*`` events.

Token counts are estimates (text: one token per four characters; audio: one token per 100 ms
of user audio and per 50 ms of assistant audio, the service's published rates).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, TypedDict

from voxwire.protocol import (
    AudioFormat,
    CachedTokenDetails,
    ConversationItemAdded,
    ConversationItemDone,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputAudio,
    InputText,
    InputTokenDetails,
    Item,
    McpApprovalRequestItem,
    McpCallItem,
    McpToolExecutionError,
    MessageItem,
    OutputAudio,
    OutputText,
    OutputTokenDetails,
    RateLimit,
    RateLimitsUpdated,
    Response,
    ResponseAudio,
    ResponseAudioOutput,
    ResponseContentPart,
    ResponseContentPartAdded,
    ResponseContentPartDone,
    ResponseCreated,
    ResponseDone,
    ResponseFunctionCallArgumentsDelta,
    ResponseFunctionCallArgumentsDone,
    ResponseMcpCallArgumentsDelta,
    ResponseMcpCallArgumentsDone,
    ResponseMcpCallCompleted,
    ResponseMcpCallFailed,
    ResponseMcpCallInProgress,
    ResponseOutputAudioDelta,
    ResponseOutputAudioDone,
    ResponseOutputAudioTranscriptDelta,
    ResponseOutputAudioTranscriptDone,
    ResponseOutputItemAdded,
    ResponseOutputItemDone,
    ResponseOutputTextDelta,
    ResponseOutputTextDone,
    ServerEvent,
    StatusDetails,
    StatusError,
    Usage,
    VoiceId,
)
from voxwire.server.core.conversation import ServerConversation
from voxwire.server.core.ids import ServerIds

__all__ = ["ResponseBuilder", "ResponseSpec"]

_CHARS_PER_TOKEN: Final = 4
_USER_AUDIO_MS_PER_TOKEN: Final = 100
_ASSISTANT_AUDIO_MS_PER_TOKEN: Final = 50
_TOKEN_LIMIT: Final = 40_000


class _PartFields(TypedDict):
    event_id: str
    response_id: str
    item_id: str
    output_index: int
    content_index: int


class _CallFields(TypedDict):
    response_id: str
    item_id: str
    output_index: int
    call_id: str


EndStatus = Literal["completed", "cancelled", "incomplete", "failed"]


@dataclass(frozen=True)
class ResponseSpec:
    """A response's effective parameters (session defaults overridden by ``response.create``)."""

    response_id: str
    conversation_id: str | None  # None: out of band
    output_modalities: list[str]
    voice: str | VoiceId
    output_format: AudioFormat
    max_output_tokens: int | Literal["inf"]
    metadata: dict[str, str] | None
    context: list[Item] = field(default_factory=list)
    context_audio_ms: int = 0
    cached: list[Item] = field(default_factory=list)
    """The leading items of ``context`` the previous response's input began with too."""
    cached_audio_ms: int = 0

    @property
    def audio(self) -> bool:
        return self.output_modalities == ["audio"]


class ResponseBuilder:
    """Makes the events of one response and keeps the conversation in step with them."""

    def __init__(
        self, spec: ResponseSpec, ids: ServerIds, conversation: ServerConversation
    ) -> None:
        self.spec = spec
        self._ids = ids
        self._conversation = conversation if spec.conversation_id is not None else None
        self._output: list[Item] = []
        self._output_text_chars = 0
        self._output_audio_ms = 0
        # The open output item: id, index, text/transcript so far, previous id.
        self._item_id: str | None = None
        self._previous_id: str | None = None
        self._text = ""
        self.finished = False

    @property
    def response_id(self) -> str:
        return self.spec.response_id

    @property
    def output_tokens(self) -> int:
        return -(-self._output_text_chars // _CHARS_PER_TOKEN) + (
            self._output_audio_ms // _ASSISTANT_AUDIO_MS_PER_TOKEN
        )

    # --- response ---------------------------------------------------------------------------------

    def created(self) -> list[ServerEvent]:
        return [ResponseCreated(event_id=self._ids.event(), response=self._response("in_progress"))]

    def done(
        self,
        status: EndStatus = "completed",
        reason: str | None = None,
        error: StatusError | None = None,
    ) -> list[ServerEvent]:
        """Close any open item, then ``rate_limits.updated`` and ``response.done``."""
        events: list[ServerEvent] = []
        if self._item_id is not None:
            events += self.end_message(complete=False)
        self.finished = True
        details = None
        if status != "completed":
            details = StatusDetails(type=status, reason=reason, error=error)
        used = self._input_tokens() + self.output_tokens
        events.append(
            RateLimitsUpdated(
                event_id=self._ids.event(),
                rate_limits=[
                    RateLimit(name="requests", limit=20_000, remaining=19_999, reset_seconds=0.003),
                    RateLimit(
                        name="tokens",
                        limit=_TOKEN_LIMIT,
                        remaining=max(0, _TOKEN_LIMIT - used),
                        reset_seconds=round(used * 60 / _TOKEN_LIMIT, 3),
                    ),
                ],
            )
        )
        response = self._response(status, details=details, usage=self._usage())
        events.append(ResponseDone(event_id=self._ids.event(), response=response))
        return events

    # --- messages ---------------------------------------------------------------------------------

    def begin_message(self) -> list[ServerEvent]:
        item_id = self._ids.item()
        self._item_id, self._text = item_id, ""
        item = MessageItem(id=item_id, role="assistant", status="in_progress", content=[])
        events = self._open_item(item)
        part = (
            ResponseContentPart(type="audio", transcript="")
            if self.spec.audio
            else ResponseContentPart(type="text", text="")
        )
        events.append(ResponseContentPartAdded(**self._part_fields(), part=part))
        return events

    def text_delta(self, delta: str) -> ServerEvent:
        self._text += delta
        self._output_text_chars += len(delta)
        if self.spec.audio:
            return ResponseOutputAudioTranscriptDelta(**self._part_fields(), delta=delta)
        return ResponseOutputTextDelta(**self._part_fields(), delta=delta)

    def audio_delta(self, audio: bytes) -> ServerEvent:
        """``audio`` is in the response's output format (PCM16 24 kHz or G.711 8 kHz)."""
        assert self._item_id is not None
        fmt = self.spec.output_format.sample_format
        self._output_audio_ms += len(audio) * 1000 // (fmt.sample_rate_hz * fmt.bytes_per_sample)
        if self._conversation is not None and self._item_id in self._conversation:
            self._conversation.append_audio(self._item_id, 0, audio, fmt)
        return ResponseOutputAudioDelta(**self._part_fields(), delta=audio)

    def end_message(self, *, complete: bool = True) -> list[ServerEvent]:
        text = self._text
        events: list[ServerEvent] = []
        if self.spec.audio:
            events.append(ResponseOutputAudioDone(**self._part_fields()))
            events.append(ResponseOutputAudioTranscriptDone(**self._part_fields(), transcript=text))
            part = ResponseContentPart(type="audio", transcript=text)
            content: list[OutputAudio | OutputText] = [OutputAudio(transcript=text)]
        else:
            events.append(ResponseOutputTextDone(**self._part_fields(), text=text))
            part = ResponseContentPart(type="text", text=text)
            content = [OutputText(text=text)]
        events.append(ResponseContentPartDone(**self._part_fields(), part=part))
        item = MessageItem(
            id=self._item_id,
            role="assistant",
            status="completed" if complete else "incomplete",
            content=list(content),
        )
        events += self._finish_item(item)
        return events

    # --- function calls ---------------------------------------------------------------------------

    def function_call(
        self, name: str, arguments: str, *, chunk_chars: int = 16
    ) -> list[ServerEvent]:
        """All events of one function call (its arguments streamed in ``chunk_chars`` pieces)."""
        item_id, call_id = self._ids.item(), self._ids.call()
        self._item_id = item_id
        output_index = len(self._output)
        item = FunctionCallItem(
            id=item_id, status="in_progress", name=name, call_id=call_id, arguments=""
        )
        events = self._open_item(item)
        call_fields: _CallFields = {
            "response_id": self.response_id,
            "item_id": item_id,
            "output_index": output_index,
            "call_id": call_id,
        }
        for start in range(0, len(arguments), chunk_chars):
            events.append(
                ResponseFunctionCallArgumentsDelta(
                    event_id=self._ids.event(),
                    delta=arguments[start : start + chunk_chars],
                    **call_fields,
                )
            )
        events.append(
            ResponseFunctionCallArgumentsDone(
                event_id=self._ids.event(), name=name, arguments=arguments, **call_fields
            )
        )
        self._output_text_chars += len(arguments)
        done_item = FunctionCallItem(
            id=item_id, status="completed", name=name, call_id=call_id, arguments=arguments
        )
        events += self._finish_item(done_item)
        return events

    def mcp_approval_request(
        self, server_label: str, name: str, arguments: str
    ) -> list[ServerEvent]:
        """An ``mcp_approval_request`` item: the server asks the client before calling."""
        item_id = self._ids.item()
        self._item_id = item_id
        item = McpApprovalRequestItem(
            id=item_id, server_label=server_label, name=name, arguments=arguments
        )
        self._output_text_chars += len(arguments)
        return self._open_item(item) + self._finish_item(item)

    def mcp_call(
        self,
        server_label: str,
        name: str,
        arguments: str,
        *,
        output: str | None,
        error: str | None,
        approval_request_id: str | None = None,
    ) -> list[ServerEvent]:
        """All events of one MCP call the server makes: the item, its arguments streamed, its
        progress, and its output (or, with ``error``, a ``tool_execution_error``)."""
        item_id = self._ids.item()
        self._item_id = item_id
        fields = {"response_id": self.response_id, "item_id": item_id}
        output_index = len(self._output)
        item = McpCallItem(
            id=item_id,
            server_label=server_label,
            name=name,
            arguments="",
            approval_request_id=approval_request_id,
        )
        events = self._open_item(item)
        events.append(
            ResponseMcpCallArgumentsDelta(
                event_id=self._ids.event(), delta=arguments, output_index=output_index, **fields
            )
        )
        events.append(
            ResponseMcpCallArgumentsDone(
                event_id=self._ids.event(),
                arguments=arguments,
                output_index=output_index,
                **fields,
            )
        )
        ends = ResponseMcpCallFailed if error is not None else ResponseMcpCallCompleted
        for kind in (ResponseMcpCallInProgress, ends):
            events.append(
                kind(event_id=self._ids.event(), item_id=item_id, output_index=output_index)
            )
        self._output_text_chars += len(arguments) + len(output or "")
        done = McpCallItem(
            id=item_id,
            server_label=server_label,
            name=name,
            arguments=arguments,
            approval_request_id=approval_request_id,
            output=output if error is None else None,
            error=McpToolExecutionError(message=error) if error is not None else None,
        )
        return events + self._finish_item(done)

    # --- helpers ----------------------------------------------------------------------------------

    def _open_item(self, item: Item) -> list[ServerEvent]:
        """``response.output_item.added`` and, in the conversation, ``conversation.item.added``
        (the counterpart of :meth:`_finish_item`)."""
        events: list[ServerEvent] = [
            ResponseOutputItemAdded(
                event_id=self._ids.event(),
                response_id=self.response_id,
                output_index=len(self._output),
                item=item,
            )
        ]
        if self._conversation is not None:
            self._previous_id = self._conversation.insert(item, None)
            events.append(
                ConversationItemAdded(
                    event_id=self._ids.event(), previous_item_id=self._previous_id, item=item
                )
            )
        return events

    def _finish_item(self, item: Item) -> list[ServerEvent]:
        events: list[ServerEvent] = [
            ResponseOutputItemDone(
                event_id=self._ids.event(),
                response_id=self.response_id,
                output_index=len(self._output),
                item=item,
            )
        ]
        self._output.append(item)
        conversation = self._conversation
        if conversation is not None and item.id in conversation:
            conversation.replace(item)
            events.append(
                ConversationItemDone(
                    event_id=self._ids.event(), previous_item_id=self._previous_id, item=item
                )
            )
        self._item_id = None
        return events

    def _part_fields(self) -> _PartFields:
        assert self._item_id is not None
        return {
            "event_id": self._ids.event(),
            "response_id": self.response_id,
            "item_id": self._item_id,
            "output_index": len(self._output),
            "content_index": 0,
        }

    def _response(
        self,
        status: EndStatus | Literal["in_progress"],
        *,
        details: StatusDetails | None = None,
        usage: Usage | None = None,
    ) -> Response:
        spec = self.spec
        return Response(
            id=spec.response_id,
            object="realtime.response",
            status=status,
            status_details=details,
            output=list(self._output),
            conversation_id=spec.conversation_id,
            output_modalities=list(spec.output_modalities),
            max_output_tokens=spec.max_output_tokens,
            audio=ResponseAudio(
                output=ResponseAudioOutput(format=spec.output_format, voice=spec.voice)
            ),
            usage=usage,
            metadata=spec.metadata,
        )

    def _input_tokens(self) -> int:
        return self._input_text_tokens() + self.spec.context_audio_ms // _USER_AUDIO_MS_PER_TOKEN

    def _input_text_tokens(self, items: list[Item] | None = None) -> int:
        chars = 0
        for item in self.spec.context if items is None else items:
            if isinstance(item, MessageItem):
                for part in item.content:
                    if isinstance(part, InputText):
                        chars += len(part.text)
                    elif isinstance(part, OutputText | OutputAudio | InputAudio):
                        chars += len(part_transcript(part))
            elif isinstance(item, FunctionCallItem):
                chars += len(item.name) + len(item.arguments)
            elif isinstance(item, FunctionCallOutputItem):
                chars += len(item.output)
        return -(-chars // _CHARS_PER_TOKEN)

    def _usage(self) -> Usage:
        text_in = self._input_text_tokens()
        audio_in = self.spec.context_audio_ms // _USER_AUDIO_MS_PER_TOKEN
        audio_out = self._output_audio_ms // _ASSISTANT_AUDIO_MS_PER_TOKEN
        text_out = self.output_tokens - audio_out
        # Cached tokens are a part of the input tokens (the service counts them in both).
        cached_text = self._input_text_tokens(self.spec.cached)
        cached_audio = self.spec.cached_audio_ms // _USER_AUDIO_MS_PER_TOKEN
        return Usage(
            total_tokens=text_in + audio_in + text_out + audio_out,
            input_tokens=text_in + audio_in,
            output_tokens=text_out + audio_out,
            input_token_details=InputTokenDetails(
                text_tokens=text_in,
                audio_tokens=audio_in,
                image_tokens=0,
                cached_tokens=cached_text + cached_audio,
                cached_tokens_details=CachedTokenDetails(
                    text_tokens=cached_text, audio_tokens=cached_audio, image_tokens=0
                ),
            ),
            output_token_details=OutputTokenDetails(text_tokens=text_out, audio_tokens=audio_out),
        )


def part_transcript(part: OutputAudio | InputAudio | OutputText) -> str:
    if isinstance(part, OutputText):
        return part.text or ""
    return part.transcript or ""
