"""Objects carried inside server events: the response, its usage and status, errors, limits.

Field names and optionality follow the GA reference (``openai.types.realtime``). All fields the
reference marks optional default to ``None`` here.
"""

from __future__ import annotations

from typing import Literal

from msgspec import Struct

from voxwire.protocol.config import AudioFormat, VoiceId
from voxwire.protocol.items import Item

__all__ = [
    "CachedTokenDetails",
    "Conversation",
    "ErrorInfo",
    "InputTokenDetails",
    "LogProb",
    "OutputTokenDetails",
    "RateLimit",
    "Response",
    "ResponseAudio",
    "ResponseAudioOutput",
    "ResponseStatus",
    "StatusDetails",
    "StatusError",
    "TranscriptDurationUsage",
    "TranscriptTokenUsage",
    "TranscriptionError",
    "TranscriptionLanguage",
    "Usage",
]

ResponseStatus = Literal["completed", "cancelled", "failed", "incomplete", "in_progress"]


class _Object(Struct, kw_only=True, frozen=True, gc=False, omit_defaults=True):
    """Immutable wire object; ``None`` fields are left off the wire."""


class Conversation(_Object, frozen=True):
    """``conversation.created``'s conversation (GA: ``object`` is ``realtime.conversation``)."""

    id: str | None = None
    object: str | None = None


class ErrorInfo(_Object, frozen=True):
    """The ``error`` of an ``error`` event; ``event_id`` names the client event that failed."""

    type: str
    message: str
    code: str | None = None
    param: str | None = None
    event_id: str | None = None


class TranscriptionError(_Object, frozen=True):
    """Why an input audio transcription failed."""

    type: str | None = None
    code: str | None = None
    message: str | None = None
    param: str | None = None


class RateLimit(_Object, frozen=True):
    """One limit of ``rate_limits.updated`` (``requests`` or ``tokens``)."""

    name: str | None = None
    limit: int | None = None
    remaining: int | None = None
    reset_seconds: float | None = None


class CachedTokenDetails(_Object, frozen=True):
    text_tokens: int | None = None
    audio_tokens: int | None = None
    image_tokens: int | None = None


class InputTokenDetails(_Object, frozen=True):
    text_tokens: int | None = None
    audio_tokens: int | None = None
    image_tokens: int | None = None
    cached_tokens: int | None = None
    cached_tokens_details: CachedTokenDetails | None = None


class OutputTokenDetails(_Object, frozen=True):
    text_tokens: int | None = None
    audio_tokens: int | None = None


class Usage(_Object, frozen=True):
    """Token usage of a response (``response.done``)."""

    total_tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_token_details: InputTokenDetails | None = None
    output_token_details: OutputTokenDetails | None = None


class StatusError(_Object, frozen=True):
    """The error behind a ``failed`` response."""

    type: str | None = None
    code: str | None = None
    message: str | None = None


class StatusDetails(_Object, frozen=True):
    """Why a response ended as it did (``reason`` is e.g. ``turn_detected``,
    ``client_cancelled``, ``max_output_tokens``, ``content_filter``)."""

    type: str | None = None
    reason: str | None = None
    error: StatusError | None = None

    @property
    def explanation(self) -> str | None:
        """Why, in words: the error's message (a ``failed`` response), else its code, else
        ``reason``; ``None`` if the server said nothing."""
        error = self.error
        if error is not None and (error.message or error.code):
            return error.message or error.code
        return self.reason


class ResponseAudioOutput(_Object, frozen=True):
    format: AudioFormat | None = None
    voice: str | VoiceId | None = None


class ResponseAudio(_Object, frozen=True):
    output: ResponseAudioOutput | None = None


class Response(_Object, frozen=True):
    """The GA response object of ``response.created`` / ``response.done``."""

    id: str | None = None
    object: str | None = None
    status: ResponseStatus | None = None
    status_details: StatusDetails | None = None
    output: list[Item] = []
    conversation_id: str | None = None
    output_modalities: list[str] | None = None
    max_output_tokens: int | Literal["inf"] | None = None
    audio: ResponseAudio | None = None
    usage: Usage | None = None
    metadata: dict[str, str] | None = None


class _TaggedUsage(_Object, tag_field="type", frozen=True):
    @property
    def type(self) -> str:
        return str(self.__struct_config__.tag)


class TranscriptTokenUsage(_TaggedUsage, tag="tokens", frozen=True):
    """Transcription billed by tokens."""

    input_tokens: int
    output_tokens: int
    total_tokens: int
    input_token_details: InputTokenDetails | None = None


class TranscriptDurationUsage(_TaggedUsage, tag="duration", frozen=True):
    """Transcription billed by audio duration."""

    seconds: float


class LogProb(_Object, frozen=True):
    """Log probability of one transcript token."""

    token: str
    bytes: list[int]
    logprob: float


class TranscriptionLanguage(_Object, frozen=True):
    """A language detected in the transcribed audio."""

    code: str
