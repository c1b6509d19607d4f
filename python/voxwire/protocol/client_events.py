"""The 11 GA client events (``openai.types.realtime.RealtimeClientEvent``).

Every client event may carry an ``event_id``; the server echoes it in ``error.event_id`` when the
event fails, which is how :class:`~voxwire.protocol.protocol.RealtimeProtocol` ties an error to
the request that caused it. The protocol core always sets one.

``input_audio_buffer.append`` holds ``bytes``; the encoder writes them as base64.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

import msgspec
from msgspec import UNSET, Struct, UnsetType

from voxwire.protocol._nulls import drop_absent_nulls, unset_absent_nulls
from voxwire.protocol.config import (
    AudioFormat,
    MaxOutputTokens,
    Prompt,
    Reasoning,
    SessionConfig,
    Tool,
    ToolChoice,
    VoiceId,
    check_max_output_tokens,
    check_output_modalities,
    invalid,
)
from voxwire.protocol.items import Item, ItemReference, check_item_for_create

__all__ = [
    "CLIENT_EVENT_TYPES",
    "ClientEvent",
    "ConversationItemCreate",
    "ConversationItemDelete",
    "ConversationItemRetrieve",
    "ConversationItemTruncate",
    "InputAudioBufferAppend",
    "InputAudioBufferClear",
    "InputAudioBufferCommit",
    "OutputAudioBufferClear",
    "ResponseAudioOutputParams",
    "ResponseAudioParams",
    "ResponseCancel",
    "ResponseCreate",
    "ResponseCreateParams",
    "SessionUpdate",
    "response_params",
]

# GA reference, ``metadata``: up to 16 pairs, keys up to 64 characters, values up to 512.
_METADATA_MAX_PAIRS = 16
_METADATA_MAX_KEY_CHARS = 64
_METADATA_MAX_VALUE_CHARS = 512


class _Params(Struct, frozen=True, kw_only=True):
    """Request parameters: UNSET fields are left off the wire. ``None`` is sent as ``null``
    where the field admits it; elsewhere it means "not given" (UNSET), as ``null`` on the wire
    does."""

    def __post_init__(self) -> None:
        unset_absent_nulls(self)
        self._check()

    def _check(self) -> None:
        """Validate the values; the parameters with rules override it."""


class ResponseAudioOutputParams(_Params, frozen=True):
    format: AudioFormat | UnsetType = UNSET
    voice: str | VoiceId | UnsetType = UNSET


class ResponseAudioParams(_Params, frozen=True):
    output: ResponseAudioOutputParams | UnsetType = UNSET


class ResponseCreateParams(_Params, frozen=True):
    """The ``response`` of ``response.create``: overrides for this one response.

    ``conversation="none"`` makes an out-of-band response whose items do not join the
    conversation; ``input`` (which may be empty) replaces the conversation as its context.
    """

    conversation: Literal["auto", "none"] | str | UnsetType = UNSET
    input: list[Item | ItemReference] | UnsetType = UNSET
    instructions: str | UnsetType = UNSET
    output_modalities: list[str] | UnsetType = UNSET
    audio: ResponseAudioParams | UnsetType = UNSET
    tools: list[Tool] | UnsetType = UNSET
    tool_choice: ToolChoice | UnsetType = UNSET
    max_output_tokens: MaxOutputTokens | UnsetType = UNSET
    metadata: dict[str, str] | UnsetType | None = UNSET
    prompt: Prompt | UnsetType | None = UNSET
    reasoning: Reasoning | UnsetType = UNSET
    parallel_tool_calls: bool | UnsetType = UNSET

    def _check(self) -> None:
        check_output_modalities(self.output_modalities, "response.output_modalities")
        check_max_output_tokens(self.max_output_tokens, "response.max_output_tokens")
        if isinstance(self.metadata, dict):
            _check_metadata(self.metadata)
        if isinstance(self.input, list):
            for item in self.input:
                if not isinstance(item, ItemReference):
                    check_item_for_create(item)


def _check_metadata(metadata: dict[str, str]) -> None:
    if len(metadata) > _METADATA_MAX_PAIRS:
        raise invalid(
            "response.metadata", f"{len(metadata)} pairs", f"at most {_METADATA_MAX_PAIRS} pairs"
        )
    for key, value in metadata.items():
        if len(key) > _METADATA_MAX_KEY_CHARS:
            raise invalid(
                "response.metadata key", key, f"at most {_METADATA_MAX_KEY_CHARS} characters"
            )
        if len(value) > _METADATA_MAX_VALUE_CHARS:
            raise invalid(
                f"response.metadata[{key!r}]",
                value[:20] + "…",
                f"at most {_METADATA_MAX_VALUE_CHARS} characters",
            )


class _ClientEvent(
    Struct, tag_field="type", kw_only=True, frozen=True, gc=False, omit_defaults=True
):
    """Base of the client events: immutable, told apart by ``type``."""

    event_id: str | None = None

    @property
    def type(self) -> str:
        """The event's ``type`` on the wire."""
        return str(self.__struct_config__.tag)


class SessionUpdate(_ClientEvent, tag="session.update", frozen=True):
    """Change the session; only the fields set in ``session`` change."""

    session: SessionConfig


class InputAudioBufferAppend(_ClientEvent, tag="input_audio_buffer.append", frozen=True):
    """Add audio (in the session's input format) to the input buffer."""

    audio: bytes


class InputAudioBufferCommit(_ClientEvent, tag="input_audio_buffer.commit", frozen=True):
    """Turn the input buffer into a user item (needed when turn detection is off)."""


class InputAudioBufferClear(_ClientEvent, tag="input_audio_buffer.clear", frozen=True):
    """Drop the audio in the input buffer."""


class OutputAudioBufferClear(_ClientEvent, tag="output_audio_buffer.clear", frozen=True):
    """WebRTC/SIP: stop the audio the server is playing out."""


class ConversationItemCreate(_ClientEvent, tag="conversation.item.create", frozen=True):
    """Add ``item`` after ``previous_item_id`` (``None``: at the end; ``"root"``: at the start)."""

    item: Item
    previous_item_id: str | None = None

    def __post_init__(self) -> None:
        check_item_for_create(self.item)


class ConversationItemRetrieve(_ClientEvent, tag="conversation.item.retrieve", frozen=True):
    """Ask for the server's copy of an item (with its audio)."""

    item_id: str


class ConversationItemTruncate(_ClientEvent, tag="conversation.item.truncate", frozen=True):
    """Cut an assistant item's audio at ``audio_end_ms`` (what the user heard)."""

    item_id: str
    content_index: int
    audio_end_ms: int

    def __post_init__(self) -> None:
        if self.content_index < 0:
            raise invalid("content_index", self.content_index, "an index >= 0")
        if self.audio_end_ms < 0:
            raise invalid("audio_end_ms", self.audio_end_ms, "a duration >= 0 ms")


class ConversationItemDelete(_ClientEvent, tag="conversation.item.delete", frozen=True):
    """Remove an item from the conversation."""

    item_id: str


class ResponseCreate(_ClientEvent, tag="response.create", frozen=True):
    """Ask the model to respond, optionally with per-response overrides."""

    response: ResponseCreateParams | None = None


class ResponseCancel(_ClientEvent, tag="response.cancel", frozen=True):
    """Stop the response in progress (GA: an error if none is in progress)."""

    response_id: str | None = None


ClientEvent = (
    ConversationItemCreate
    | ConversationItemDelete
    | ConversationItemRetrieve
    | ConversationItemTruncate
    | InputAudioBufferAppend
    | InputAudioBufferClear
    | OutputAudioBufferClear
    | InputAudioBufferCommit
    | ResponseCancel
    | ResponseCreate
    | SessionUpdate
)
"""Every GA client event (the order of ``openai.types.realtime.RealtimeClientEvent``)."""

#: Wire ``type`` -> class, for the 11 GA client events.
CLIENT_EVENT_TYPES: dict[str, type[_ClientEvent]] = {
    str(cls.__struct_config__.tag): cls for cls in get_args(ClientEvent)
}


def response_params(params: Mapping[str, Any]) -> ResponseCreateParams:
    """``ResponseCreateParams`` from keyword-style values (nested objects as mappings allowed),
    the way a user of the official types passes them: ``None`` keeps its meaning where the
    field admits null (``metadata``, ``prompt``) and means "not given" elsewhere. Raises
    :class:`msgspec.ValidationError` naming the field for a wrong type."""
    return msgspec.convert(
        drop_absent_nulls(dict(params), ResponseCreateParams), ResponseCreateParams
    )
