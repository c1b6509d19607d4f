"""The objects Live events carry: the session configuration and resource, delegations, usage,
errors (``openai.types.live``: ``SessionConfig``, ``SessionResource``, ``SessionUpdateConfig``,
``DelegationCreatedEvent.Delegation``, ``SessionUsage``, ``Error``).

Typed to the depth the SDK acts on: the session's model, instructions, audio format and voice,
and the delegation owner with its Responses backend. Deeper configuration that voxwire passes
through without reading (Responses tools and tool choice, reasoning, Decisions questions,
triggers, the WebRTC client capabilities, initial items) stays a JSON mapping, checked only for
its outer shape; unknown fields anywhere are kept (see :mod:`voxwire.live.codec`).
"""

from __future__ import annotations

from typing import Any, Literal

from msgspec import Struct

__all__ = [
    "IMMUTABLE_FIELDS",
    "UPDATABLE_FIELDS",
    "AudioConfig",
    "AudioFormat",
    "AudioOutputConfig",
    "ClientDelegation",
    "ContextWindow",
    "CustomVoice",
    "DecisionsDelegation",
    "DelegationConfig",
    "DelegationInfo",
    "DelegationTarget",
    "ForkSessionConfig",
    "LiveErrorInfo",
    "LiveSessionConfig",
    "LiveSessionResource",
    "ResponsesBackend",
    "ResponsesDelegation",
    "SessionUsage",
]

#: Who handles a delegated task: the application, the Responses backend, or Decisions.
DelegationTarget = Literal["client", "responses", "decisions"]

#: ``SessionConfig`` fields fixed by ``session.start`` ("immutable after startup": the
#: ``session.update`` schema, ``SessionUpdateConfig``, has only ``delegation`` and ``triggers``).
IMMUTABLE_FIELDS = frozenset(
    {"model", "instructions", "audio", "client", "input", "safety_identifier", "store"}
)
#: What ``session.update`` may change.
UPDATABLE_FIELDS = frozenset({"delegation", "triggers"})

# PCM16 rates a Live WebSocket accepts (``AudioPCM.rate``: 16000 or 24000).
_PCM_RATES = (16000, 24000)


class _Object(Struct, kw_only=True, frozen=True, omit_defaults=True):
    pass


class AudioFormat(_Object, frozen=True, kw_only=True):
    """``audio.format``: the encoding and rate of the WebSocket's audio, both directions."""

    type: Literal["audio/pcm", "audio/pcmu", "audio/pcma"]
    rate: int

    def __post_init__(self) -> None:
        if self.type == "audio/pcm" and self.rate not in _PCM_RATES:
            raise ValueError(f"audio/pcm rate must be 16000 or 24000, got {self.rate}")


class CustomVoice(_Object, frozen=True, kw_only=True):
    """A custom voice by its id."""

    id: str


class AudioOutputConfig(_Object, frozen=True, kw_only=True):
    """``audio.output``: the voice (a built-in name or a custom voice); default ``marin``."""

    voice: str | CustomVoice | None = None


class AudioConfig(_Object, frozen=True, kw_only=True):
    """``audio``: format (primary WebSockets only) and voice, both fixed at startup."""

    format: AudioFormat | None = None
    output: AudioOutputConfig | None = None


class ResponsesBackend(_Object, frozen=True, kw_only=True):
    """``delegation.responses``: the Responses model GPT-Live hands tasks to."""

    model: str | None = None  # required at session.start, omitted in an update to keep it
    instructions: str | None = None
    max_output_tokens: int | None = None
    parallel_tool_calls: bool | None = None
    reasoning: dict[str, Any] | None = None
    service_tier: str | None = None
    text: dict[str, Any] | None = None
    tool_choice: str | dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None


class _Delegation(_Object, tag_field="type", frozen=True, kw_only=True):
    acknowledgement_delay_ms: int | None = None


class ClientDelegation(_Delegation, tag="client", frozen=True, kw_only=True):
    """Tasks are handed to the application (``session.delegation.created``, answered with
    ``session.commentary.append`` / ``session.thinking.append``)."""


class ResponsesDelegation(_Delegation, tag="responses", frozen=True, kw_only=True):
    """Tasks go to a Responses model the session manages; its stream arrives as
    ``response.event`` and tool results go back with ``response.item.create`` +
    ``response.create``."""

    responses: ResponsesBackend | None = None


class DecisionsDelegation(_Delegation, tag="decisions", frozen=True, kw_only=True):
    """Tasks go to the Decisions API (passed through, not acted on by voxwire)."""

    decisions: dict[str, Any] | None = None


DelegationConfig = ClientDelegation | ResponsesDelegation | DecisionsDelegation


class LiveSessionConfig(_Object, frozen=True, kw_only=True):
    """``session.start``'s ``session``: the model is required, the rest optional."""

    model: str
    instructions: str | None = None
    audio: AudioConfig | None = None
    delegation: DelegationConfig | None = None
    input: list[dict[str, Any]] | None = None
    client: dict[str, Any] | None = None
    safety_identifier: str | None = None
    store: bool | None = None
    triggers: list[dict[str, Any]] | None = None

    @property
    def delegation_target(self) -> DelegationTarget:
        """Who gets delegated tasks: omitted or null delegation selects the application."""
        return "client" if self.delegation is None else self.delegation_type(self.delegation)

    @staticmethod
    def delegation_type(delegation: DelegationConfig) -> DelegationTarget:
        if isinstance(delegation, ResponsesDelegation):
            return "responses"
        if isinstance(delegation, DecisionsDelegation):
            return "decisions"
        return "client"


class LiveSessionResource(LiveSessionConfig, frozen=True, kw_only=True):
    """The session as the server reports it (``session.started``, ``session.updated``,
    ``session.closed``): the configuration plus its id, expiry and status."""

    id: str
    expires_at: int
    status: str  # always "active" in the reference, also in session.closed's snapshot


class ForkSessionConfig(_Object, frozen=True, kw_only=True):
    """A fork's ``session.start`` ``session`` (``openai.types.live.ForkSessionConfig``): overrides
    of the stored session's settings; empty inherits them all (the model, voice, instructions
    and the prior conversation always come from the stored session). ``delegation`` may only
    update a Responses backend (its owner cannot change); ``client`` is for WebRTC forks only."""

    audio: AudioConfig | None = None
    client: dict[str, Any] | None = None
    delegation: dict[str, Any] | None = None
    store: bool | None = None


class DelegationInfo(_Object, frozen=True, kw_only=True):
    """``session.delegation.created``'s ``delegation``."""

    id: str
    target: DelegationTarget
    type: Literal["delegation"]
    response_id: str | None = None


class SessionUsage(_Object, frozen=True, kw_only=True):
    """Billed session time (``seconds``) and, when reported, active and paused seconds."""

    seconds: float
    active_seconds: int | None = None
    paused_seconds: int | None = None


class ContextWindow(_Object, frozen=True, kw_only=True):
    """How full the model's context is (0..1)."""

    usage_ratio: float


class LiveErrorInfo(_Object, frozen=True, kw_only=True):
    """An ``error`` event's ``error``; ``client_event_id`` names the client event it answers."""

    code: str
    message: str
    type: str
    client_event_id: str | None = None
    param: str | None = None
