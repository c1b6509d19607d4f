"""``session.history``: the conversation as the server holds it, in a shape to read.

Built on demand from the protocol core's :class:`~voxwire.protocol.ConversationState` (items in
server order by ``previous_item_id``, transcripts per content part, truncations), so it follows
the server and nothing else: an item is in the history once the server announced it, and an
input transcript that arrives after the response started lands in the user's item.

* :class:`HistoryMessage` — a message; its ``content`` holds text, audio (with the transcript so
  far and where it was truncated) and images. Audio bytes are not kept.
* :class:`HistoryFunctionCall` — a call, with the ``output`` of the function call output item
  that has its ``call_id`` (``None`` until one is in the conversation).
* :class:`HistoryFunctionCallOutput` — the output item itself, where the server put it.
* :class:`HistoryOther` — anything else (MCP items), as the wire item.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from voxwire.protocol import items as wire
from voxwire.protocol.conversation import ConversationState

__all__ = [
    "AudioContent",
    "HistoryContent",
    "HistoryFunctionCall",
    "HistoryFunctionCallOutput",
    "HistoryItem",
    "HistoryMessage",
    "HistoryOther",
    "ImageContent",
    "TextContent",
    "build_history",
    "history_item",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class TextContent:
    type: Literal["text"] = field(default="text", init=False)
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class AudioContent:
    """Audio, known by its transcript (``None`` until there is one, and after a truncation —
    the server removes the transcript of cut audio)."""

    type: Literal["audio"] = field(default="audio", init=False)
    transcript: str | None = None
    truncated_at_ms: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ImageContent:
    type: Literal["image"] = field(default="image", init=False)
    image_url: str
    detail: Literal["auto", "low", "high"] | None = None


HistoryContent: TypeAlias = TextContent | AudioContent | ImageContent


@dataclass(frozen=True, kw_only=True, slots=True)
class HistoryMessage:
    type: Literal["message"] = field(default="message", init=False)
    item_id: str
    role: Literal["system", "user", "assistant"]
    content: tuple[HistoryContent, ...]
    status: str | None = None

    @property
    def text(self) -> str:
        """Text parts and audio transcripts joined (what was said, as far as known)."""
        pieces = []
        for part in self.content:
            if isinstance(part, TextContent):
                pieces.append(part.text)
            elif isinstance(part, AudioContent) and part.transcript:
                pieces.append(part.transcript)
        return " ".join(pieces)

    @property
    def truncated(self) -> bool:
        """Some of its audio was cut (the user interrupted)."""
        return any(
            isinstance(p, AudioContent) and p.truncated_at_ms is not None for p in self.content
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class HistoryFunctionCall:
    type: Literal["function_call"] = field(default="function_call", init=False)
    item_id: str
    call_id: str | None
    name: str
    arguments: str
    status: str | None = None
    output: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class HistoryFunctionCallOutput:
    type: Literal["function_call_output"] = field(default="function_call_output", init=False)
    item_id: str
    call_id: str
    output: str


@dataclass(frozen=True, kw_only=True, slots=True)
class HistoryOther:
    type: Literal["other"] = field(default="other", init=False)
    item_id: str
    item: wire.Item


HistoryItem: TypeAlias = (
    HistoryMessage | HistoryFunctionCall | HistoryFunctionCallOutput | HistoryOther
)


def build_history(conversation: ConversationState) -> list[HistoryItem]:
    """Every item in server order."""
    items = conversation.items()
    outputs = {
        item.call_id: item.output for item in items if isinstance(item, wire.FunctionCallOutputItem)
    }
    return [_convert(conversation, item, outputs) for item in items if item.id is not None]


def history_item(conversation: ConversationState, item_id: str) -> HistoryItem | None:
    """One item, as :func:`build_history` would show it."""
    item = conversation.get(item_id)
    if item is None or item.id is None:
        return None
    outputs: dict[str, str] = {}
    if isinstance(item, wire.FunctionCallItem) and item.call_id is not None:
        output = conversation.call_output(item.call_id)
        if output is not None:
            outputs[output.call_id] = output.output
    return _convert(conversation, item, outputs)


def _convert(
    conversation: ConversationState, item: wire.Item, outputs: dict[str, str]
) -> HistoryItem:
    item_id = item.id
    assert item_id is not None
    if isinstance(item, wire.MessageItem):
        return HistoryMessage(
            item_id=item_id,
            role=item.role,
            content=tuple(
                _content(conversation, item_id, index, part)
                for index, part in enumerate(item.content)
            ),
            status=item.status,
        )
    if isinstance(item, wire.FunctionCallItem):
        return HistoryFunctionCall(
            item_id=item_id,
            call_id=item.call_id,
            name=item.name,
            arguments=item.arguments,
            status=item.status,
            output=outputs.get(item.call_id) if item.call_id is not None else None,
        )
    if isinstance(item, wire.FunctionCallOutputItem):
        return HistoryFunctionCallOutput(item_id=item_id, call_id=item.call_id, output=item.output)
    return HistoryOther(item_id=item_id, item=item)


def _content(
    conversation: ConversationState, item_id: str, index: int, part: wire.ContentPart
) -> HistoryContent:
    if isinstance(part, wire.InputText):
        return TextContent(text=part.text)
    if isinstance(part, wire.OutputText):
        text = conversation.transcript(item_id, index)
        return TextContent(text=text if text is not None else part.text or "")
    if isinstance(part, wire.InputImage):
        return ImageContent(image_url=part.image_url, detail=part.detail)
    truncated_at_ms = conversation.truncated_at_ms(item_id, index)
    transcript = conversation.transcript(item_id, index)
    if transcript is None and truncated_at_ms is None:
        transcript = part.transcript
    return AudioContent(transcript=transcript, truncated_at_ms=truncated_at_ms)
