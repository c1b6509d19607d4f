"""What metrics report: per response, per input transcription, per interruption, and the
session's totals (see :mod:`voxwire.asyncio.observability.metrics` for what is measured).
Plain frozen records, the same for a Realtime and a Live session."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from voxwire.protocol.objects import TranscriptDurationUsage, TranscriptTokenUsage, Usage

__all__ = [
    "InterruptionMetrics",
    "LatencyStats",
    "Metrics",
    "ResponseMetrics",
    "SessionMetrics",
    "TokenUsage",
    "TranscriptionMetrics",
    "TranscriptionUsage",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class TokenUsage:
    """Tokens of ``response.done``'s ``usage`` (0 where the server said nothing); they add up.
    The cached tokens are a part of the input tokens (the service counts them in both);
    ``input_cached_*_tokens`` split them by modality (``cached_tokens_details``)."""

    input_tokens: int = 0
    output_tokens: int = 0
    input_text_tokens: int = 0
    input_audio_tokens: int = 0
    input_image_tokens: int = 0
    input_cached_tokens: int = 0
    output_text_tokens: int = 0
    output_audio_tokens: int = 0
    input_cached_text_tokens: int = 0
    input_cached_audio_tokens: int = 0
    input_cached_image_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @classmethod
    def from_usage(cls, usage: Usage | None) -> TokenUsage:
        if usage is None:
            return cls()
        inp = usage.input_token_details
        out = usage.output_token_details
        cached = inp.cached_tokens_details if inp else None
        return cls(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            input_text_tokens=(inp.text_tokens or 0) if inp else 0,
            input_audio_tokens=(inp.audio_tokens or 0) if inp else 0,
            input_image_tokens=(inp.image_tokens or 0) if inp else 0,
            input_cached_tokens=(inp.cached_tokens or 0) if inp else 0,
            output_text_tokens=(out.text_tokens or 0) if out else 0,
            output_audio_tokens=(out.audio_tokens or 0) if out else 0,
            input_cached_text_tokens=(cached.text_tokens or 0) if cached else 0,
            input_cached_audio_tokens=(cached.audio_tokens or 0) if cached else 0,
            input_cached_image_tokens=(cached.image_tokens or 0) if cached else 0,
        )

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            **{
                name: getattr(self, name) + getattr(other, name)
                for name in TokenUsage.__dataclass_fields__
            }
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class TranscriptionUsage:
    """What input transcription was billed: tokens (``gpt-4o-transcribe`` style) or seconds of
    audio (``whisper-1``), from ``…input_audio_transcription.completed``; they add up."""

    input_tokens: int = 0
    output_tokens: int = 0
    audio_s: float = 0.0

    @classmethod
    def from_usage(
        cls, usage: TranscriptTokenUsage | TranscriptDurationUsage | None
    ) -> TranscriptionUsage:
        if isinstance(usage, TranscriptTokenUsage):
            return cls(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
        if isinstance(usage, TranscriptDurationUsage):
            return cls(audio_s=usage.seconds)
        return cls()

    def __add__(self, other: TranscriptionUsage) -> TranscriptionUsage:
        return TranscriptionUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            audio_s=self.audio_s + other.audio_s,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponseMetrics:
    """One response, reported once it is done — and, with an audio output attached, once its
    first sample played (or its audio was interrupted unheard).

    ``input_item_id``: the user's audio item whose end the latencies count from (``None`` when
    no user turn ended before this response: a text message, a tool output, a manual
    ``create_response``; then the ``speech_end_*`` fields are ``None`` too). ``interrupted``:
    the response was cancelled, or cut by an interruption while it ran.
    """

    type: Literal["response"] = field(default="response", init=False)
    response_id: str
    status: str | None
    out_of_band: bool = False
    input_item_id: str | None = None
    speech_end_to_first_audio_s: float | None = None
    speech_end_to_first_played_s: float | None = None
    time_to_first_audio_s: float | None = None
    first_audio_to_first_played_s: float | None = None
    duration_s: float = 0.0
    interrupted: bool = False
    underruns: int | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    output_audio_s: float = 0.0
    """The audio of the response received (its length, in the session's output format)."""
    estimated_cost_usd: float | None = None
    """``usage`` priced by the session's price table (``None``: no price for the model)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TranscriptionMetrics:
    """The user's item ``item_id`` was transcribed ``delay_s`` after the user's turn ended
    (``failed``: the transcription failed after that long), billed ``usage``."""

    type: Literal["input_transcription"] = field(default="input_transcription", init=False)
    item_id: str
    delay_s: float
    failed: bool = False
    usage: TranscriptionUsage = field(default_factory=TranscriptionUsage)


@dataclass(frozen=True, kw_only=True, slots=True)
class InterruptionMetrics:
    """One item cut by an interruption: ``played_ms`` is the truncation point sent (what the
    listener heard; ``None``: nothing was, the item was deleted), ``received_ms`` the audio
    received of it by then, ``dropped_ms`` the part of that never played.

    How true the claim is: ``clock_heard_ms`` is what the playback clock knew was heard of the
    item at the cut (exact, from its sample count; ``None`` with no clock: everything received
    was taken as heard); ``truncation_error_ms`` the claim minus that (a deleted item claims 0):
    0 to -1 ms from flooring to whole milliseconds, positive never. ``clock_bound_ms`` is how
    far the listener may be past the clock — they heard between ``clock_heard_ms`` and that much
    more: one chunk for a :class:`~voxwire.audio.RemoteOutput` acknowledged per chunk (Twilio's
    marks), one render quantum (128 frames at the page's rate) for the browser page; ``None``
    when no bound is known (a local device's clock, or samples the application counted)."""

    type: Literal["interruption"] = field(default="interruption", init=False)
    item_id: str
    content_index: int
    response_id: str | None
    played_ms: int | None
    received_ms: int
    dropped_ms: int
    clock_heard_ms: float | None = None
    truncation_error_ms: float | None = None
    clock_bound_ms: float | None = None


Metrics: TypeAlias = ResponseMetrics | TranscriptionMetrics | InterruptionMetrics
"""What a ``metrics_collected`` event carries."""


@dataclass(frozen=True, kw_only=True, slots=True)
class LatencyStats:
    """Count, sum, minimum and maximum of one latency over the session (constant size)."""

    count: int = 0
    total_s: float = 0.0
    min_s: float | None = None
    max_s: float | None = None

    @property
    def mean_s(self) -> float | None:
        return self.total_s / self.count if self.count else None

    def add(self, value_s: float | None) -> LatencyStats:
        if value_s is None:
            return self
        return LatencyStats(
            count=self.count + 1,
            total_s=self.total_s + value_s,
            min_s=value_s if self.min_s is None else min(self.min_s, value_s),
            max_s=value_s if self.max_s is None else max(self.max_s, value_s),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionMetrics:
    """Totals of the session so far (``session.metrics``). ``interruptions`` counts every time
    playback or a response was cut — by ``interrupt()`` or by the user speaking over the
    assistant — including cuts of audio still playing after its response was done."""

    responses: int = 0
    interrupted_responses: int = 0
    interruptions: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    speech_end_to_first_audio: LatencyStats = field(default_factory=LatencyStats)
    speech_end_to_first_played: LatencyStats = field(default_factory=LatencyStats)
    time_to_first_audio: LatencyStats = field(default_factory=LatencyStats)
    response_duration: LatencyStats = field(default_factory=LatencyStats)
    input_transcription_delay: LatencyStats = field(default_factory=LatencyStats)
    transcription_usage: TranscriptionUsage = field(default_factory=TranscriptionUsage)
    first_audio_to_first_played: LatencyStats = field(default_factory=LatencyStats)
    underruns: int = 0
    dropped_audio_ms: int = 0
    """Audio received but never played because an interruption cut it."""
    input_audio_s: float = 0.0
    """Audio sent to the server (``send_audio`` and the microphone; not while muted)."""
    output_audio_s: float = 0.0
    """Audio received of the responses reported."""
    estimated_cost_usd: float | None = None
    """``usage`` priced by the session's price table (``None``: no price for the model; see
    :mod:`voxwire.asyncio.observability.pricing`)."""
