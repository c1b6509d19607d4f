"""What a :class:`~voxwire.asyncio.live.LiveSession` hands the application.

Where the meaning carries over from :class:`~voxwire.asyncio.RealtimeSession`, the same events
are used: :class:`~voxwire.asyncio.events.ToolStartEvent` /
:class:`~voxwire.asyncio.events.ToolEndEvent` (function tools run for a Responses delegation),
:class:`~voxwire.asyncio.events.ToolApprovalRequestedEvent`,
:class:`~voxwire.asyncio.events.ErrorEvent`, :class:`~voxwire.asyncio.events.CloseEvent`.
Live has no items or responses, so audio and transcripts have their own events, placed on the
session timeline (``start_ms``/``end_ms``: milliseconds since the session started).
:class:`~voxwire.asyncio.events.MetricsCollectedEvent` carries the same records as Realtime's
(each utterance of the model is reported as a response).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from voxwire.agents.guardrail import GuardrailResult
from voxwire.asyncio.events import (
    CloseEvent,
    DtmfEvent,
    ErrorEvent,
    MetricsCollectedEvent,
    ReconnectingEvent,
    ToolApprovalRequestedEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from voxwire.asyncio.live.decision_events import DecisionItemEvent, LiveDecisionEvent
from voxwire.asyncio.observability.records import SessionMetrics

__all__ = [
    "DelegationAnsweredEvent",
    "DelegationStartedEvent",
    "DtmfSentEvent",
    "LiveAudioEvent",
    "LiveEvent",
    "LiveGuardrailTrippedEvent",
    "LiveHistoryItem",
    "LiveMetrics",
    "LiveReconnectedEvent",
    "LiveTranscriptEvent",
    "LiveUsageEvent",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class LiveAudioEvent:
    """The model's audio (PCM16 24 kHz). Not emitted when an audio output is attached: the
    audio goes straight to it."""

    type: Literal["live_audio"] = field(default="live_audio", init=False)
    pcm: bytes
    start_ms: int | None
    end_ms: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class LiveTranscriptEvent:
    """Transcript text. ``role="user"``: as recognised; ``role="assistant"``: released when the
    listener has *heard* the audio it belongs to (with an audio output attached; at once
    otherwise), so captions never run ahead of the voice."""

    type: Literal["live_transcript"] = field(default="live_transcript", init=False)
    role: Literal["user", "assistant"]
    delta: str
    start_ms: int
    end_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class DelegationStartedEvent:
    """The model handed a task to ``target`` (``responses``: the session's Responses backend,
    whose function calls this session runs; ``client``: the application's backend)."""

    type: Literal["delegation_started"] = field(default="delegation_started", init=False)
    delegation_id: str
    target: str
    offset_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class DelegationAnsweredEvent:
    """The application's backend answered a client delegation: ``spoken`` (sent as commentary,
    which the model speaks) or silent (sent as thinking)."""

    type: Literal["delegation_answered"] = field(default="delegation_answered", init=False)
    delegation_id: str
    answer: str
    spoken: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class LiveGuardrailTrippedEvent:
    """Output guardrails tripped on what the model was saying: the audio not yet heard was
    dropped, and the model was told (``session.instructions.append``). Live has no response to
    cancel: the model hears the correction and goes on."""

    type: Literal["live_guardrail_tripped"] = field(default="live_guardrail_tripped", init=False)
    transcript: str
    guardrails: tuple[str, ...]
    results: tuple[GuardrailResult, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class LiveUsageEvent:
    """Billed session seconds so far (``session.usage.updated``)."""

    type: Literal["live_usage"] = field(default="live_usage", init=False)
    seconds: float
    context_usage_ratio: float | None
    active_seconds: float | None = None
    standby_seconds: float | None = None
    """The split of ``seconds`` the server reported (``paused_seconds``: standby)."""
    estimated_cost_usd: float | None = None
    """The session's time so far priced by its price table (``None``: no price for the model;
    docs/operations.md)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class LiveReconnectedEvent:
    """The connection was lost and the session goes on in a fork of the stored Live session
    (``/v1/live/sessions/{forked_from}/fork``): ``session_id`` is the new session's, which holds
    the conversation so far. ``abandoned_delegations``: tasks that were in progress when the
    connection was lost; the fork does not continue them (their outputs are not sent)."""

    type: Literal["live_reconnected"] = field(default="live_reconnected", init=False)
    session_id: str
    forked_from: str
    attempt: int
    abandoned_delegations: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class DtmfSentEvent:
    """A key ``send_dtmf`` sent on a SIP call's sideband reached the trunk
    (``transport.dtmf.sent``); ``event_id``: the one ``send_dtmf`` returned."""

    type: Literal["dtmf_sent"] = field(default="dtmf_sent", init=False)
    key: str
    event_id: str | None


@dataclass(frozen=True, slots=True)
class LiveHistoryItem:
    """One stretch of the conversation: what the user said, or what the listener heard of the
    assistant (never what was generated but not heard). ``truncated_at_ms``: the assistant's
    audio was cut there (session timeline) — the user spoke over it, or a guardrail tripped —
    and ``text`` ends with the last word heard (as a Realtime item is truncated where the
    listener stopped hearing it)."""

    role: Literal["user", "assistant"]
    text: str
    start_ms: int
    end_ms: int
    truncated_at_ms: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class LiveMetrics(SessionMetrics):
    """The session's figures so far: the totals a ``RealtimeSession`` reports (responses —
    here the model's utterances —, interruptions, ``first_audio_to_first_played``,
    ``underruns``, ``dropped_audio_ms``, …; see
    :class:`~voxwire.asyncio.observability.metrics.SessionMetrics`) and Live's own."""

    usage_seconds: float = 0.0
    context_usage_ratio: float | None = None
    audio_received_ms: int = 0
    """The model's audio received (its length)."""
    audio_heard_ms: int = 0
    """Of that, what the listener heard (with an audio output; without one, all of it)."""
    delegations: int = 0
    tool_calls: int = 0
    first_audio_after_speech_ms: tuple[int, ...] = ()
    """Per user turn: from the end of the user's speech (its last transcript's ``end_ms``) to
    the first audio of the answer (``start_ms``), on the session timeline."""
    spoken_over_ms: int = 0
    """Audio the listener heard after the user had started speaking over it (session
    timeline), summed over the interruptions."""


LiveEvent: TypeAlias = (
    LiveAudioEvent
    | LiveTranscriptEvent
    | DelegationStartedEvent
    | DelegationAnsweredEvent
    | LiveDecisionEvent
    | DecisionItemEvent
    | LiveGuardrailTrippedEvent
    | LiveUsageEvent
    | LiveReconnectedEvent
    | ReconnectingEvent
    | ToolStartEvent
    | ToolEndEvent
    | ToolApprovalRequestedEvent
    | DtmfEvent
    | DtmfSentEvent
    | MetricsCollectedEvent
    | ErrorEvent
    | CloseEvent
)
"""Everything ``async for event in live_session`` yields."""
