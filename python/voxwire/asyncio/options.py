"""``SessionOptions``: a :class:`~voxwire.asyncio.RealtimeSession`'s constructor arguments,
checked once and frozen.

Everything here is validated at construction (bad configuration is the caller's mistake: it is
said at once, with what to do) and nothing is opened, read from the environment or started.
The session's parts read their settings from this one object; the arguments are documented on
:class:`~voxwire.asyncio.RealtimeSession`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from voxwire.agents.agent import RealtimeAgent, agent_session_config
from voxwire.agents.guardrail import DEFAULT_DEBOUNCE_CHARS, default_feedback
from voxwire.agents.input_guardrail import DEFAULT_REFUSAL
from voxwire.agents.tool_guardrail import ToolErrorFormatter
from voxwire.asyncio.agents.input_guardrails import Refusal
from voxwire.asyncio.agents.mcp_local import McpConnection
from voxwire.asyncio.agents.tools import DEFAULT_REJECTION_MESSAGE
from voxwire.asyncio.audio.microphone import AudioSource, check_source
from voxwire.asyncio.audio.playback import AudioOutputTarget, attached_output
from voxwire.asyncio.audio.recovery import without_server_interruption
from voxwire.asyncio.connection.calls import CallControl
from voxwire.asyncio.connection.endpoint import ApiKeySource, build_url
from voxwire.asyncio.connection.reconnect import ReconnectPolicy
from voxwire.asyncio.connection.renewal import RenewalPolicy
from voxwire.asyncio.connection.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Connector,
    ConnectRequest,
    connect_websocket,
)
from voxwire.asyncio.observability.pricing import DurationPrices, ModelPrices, TokenPrices
from voxwire.asyncio.observability.tracing import SessionTracer, TracingSetting, tracing_setting
from voxwire.audio import AudioOutput, EchoCancelledInput, FalseInterruptionFilter
from voxwire.audio.bargein import BargeInDetector
from voxwire.exceptions import ConfigurationError
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.conversation import ConversationState
from voxwire.protocol.ids import CounterIds, IdFactory
from voxwire.store import DEFAULT_LEASE_TTL_S, AudioPolicy, ConversationStore

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["SessionOptions"]


@dataclass(frozen=True, kw_only=True)
class SessionOptions:
    """The arguments of :class:`~voxwire.asyncio.RealtimeSession`, validated (see there)."""

    agent: RealtimeAgent | None = None
    url: str | None = None
    model: str | None = None
    call_id: str | None = None
    api_key: ApiKeySource | None = None
    headers: Mapping[str, str] | None = None
    fallback_urls: Sequence[str] = ()
    config: SessionConfig | Mapping[str, Any] | None = None
    wait_for_session_updated: bool = False
    audio_output: AudioOutputTarget | None = None
    raw_server_events: bool = False
    max_queued_events: int = 1024
    open_timeout_s: float = 10.0
    close_timeout_s: float = 5.0
    ping_interval_s: float | None = 20.0
    ping_timeout_s: float | None = 20.0
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES
    connector: Connector | None = None
    ids: IdFactory | None = None
    tracing_disabled: bool = False
    workflow_name: str | None = None
    group_id: str | None = None
    metadata: Mapping[str, Any] | None = None
    tracer_provider: TracerProvider | None = None
    clock: Callable[[], float] | None = None
    tool_output_attempts: int = 3
    tool_rejection_message: str = DEFAULT_REJECTION_MESSAGE
    guardrail_debounce_chars: int | None = DEFAULT_DEBOUNCE_CHARS
    guardrail_feedback: str | Callable[[Sequence[str]], str] = default_feedback
    reconnect: ReconnectPolicy | None = None
    audio_input: AudioSource | None = None
    local_barge_in: bool | BargeInDetector = False
    false_interruption: FalseInterruptionFilter | None = None
    echo_cancellation: bool = False
    input_frame_ms: int = 20
    renewal: RenewalPolicy | None = None
    store: ConversationStore | None = None
    conversation_id: str | None = None
    store_audio: AudioPolicy | None = None
    lease_ttl_s: float = DEFAULT_LEASE_TTL_S
    max_history_items: int | None = None
    context: Any = None
    tool_error_formatter: ToolErrorFormatter | None = None
    input_guardrail_refusal: Refusal = DEFAULT_REFUSAL
    mcp_follow_up: bool = True
    call_control: CallControl | None = None
    prices: Mapping[str, ModelPrices] | None = None
    user_away_timeout_s: float | None = None
    mcp_connections: Sequence[McpConnection] = ()

    # Derived, checked values (set in __post_init__).
    primary_url: str = field(init=False)
    urls: tuple[str, ...] = field(init=False)
    """The primary URL, then the fallbacks: the order connections are tried in."""
    base_config: SessionConfig = field(init=False)
    """The session configuration every agent's is made from (tracing left out)."""
    tracing: TracingSetting = field(init=False)
    """``session.tracing``, sent once per server session in its first ``session.update``."""

    def __post_init__(self) -> None:
        if self.agent is not None and not isinstance(self.agent, RealtimeAgent):
            raise ConfigurationError(f"agent={self.agent!r} is invalid: expected a RealtimeAgent")
        self._check_endpoint()
        self._check_output_and_timeouts()
        self._check_input()
        ConversationState(self.max_history_items)  # raises for a bound it cannot keep
        if not isinstance(self.reconnect, ReconnectPolicy | None):
            raise ConfigurationError(
                f"reconnect={self.reconnect!r} is invalid: expected a ReconnectPolicy or None"
            )
        if not isinstance(self.renewal, RenewalPolicy | None):
            raise ConfigurationError(
                f"renewal={self.renewal!r} is invalid: expected a RenewalPolicy or None"
            )
        self._check_store()
        away = self.user_away_timeout_s
        if away is not None and (
            isinstance(away, bool) or not isinstance(away, int | float) or not away > 0
        ):
            raise ConfigurationError(
                f"user_away_timeout_s={away!r} is invalid: expected seconds > 0, or None (never)"
            )
        for model, prices in (self.prices or {}).items():
            if not isinstance(model, str) or not isinstance(prices, TokenPrices | DurationPrices):
                raise ConfigurationError(
                    f"prices[{model!r}]={prices!r} is invalid: expected a model name mapped to "
                    "TokenPrices or DurationPrices (voxwire.asyncio.observability.pricing)"
                )
        if not all(isinstance(c, McpConnection) for c in self.mcp_connections):
            raise ConfigurationError(
                f"mcp_connections={self.mcp_connections!r} is invalid: expected McpConnection "
                "objects (voxwire.asyncio.McpConnection)"
            )
        feedback = self.guardrail_feedback
        if not (isinstance(feedback, str) or callable(feedback)):
            raise ConfigurationError(
                "guardrail_feedback is invalid: expected text or a function of the tripped "
                "guardrails' names"
            )
        self._check_agent_features()
        self._check_call_control()
        # Validated now; tracing is kept out of the base configuration later updates are made
        # from (asyncio/observability/tracing.py: it is sent once, in the first session.update).
        base = agent_session_config(self.config, None)
        tracing = tracing_setting(
            base.tracing,
            tracing_disabled=self.tracing_disabled,
            workflow_name=self.workflow_name,
            group_id=self.group_id,
            metadata=self.metadata,
        )
        if self.false_interruption is not None:  # the session decides the cut, not the server
            base = without_server_interruption(base)
        self._set("base_config", msgspec.structs.replace(base, tracing=msgspec.UNSET))
        self._set("tracing", tracing)

    def _check_call_control(self) -> None:
        control = self.call_control
        if control is None:
            return
        if not (
            callable(getattr(control, "refer", None)) and callable(getattr(control, "hangup", None))
        ):
            raise ConfigurationError(
                f"call_control={control!r} is invalid: expected an object with refer(call_id, "
                "target_uri) and hangup(call_id), such as voxwire.telephony.SipCalls()"
            )
        if self.call_id is None:
            raise ConfigurationError(
                "call_control needs call_id: the session controls the call it is attached to "
                "(RealtimeSession(call_id=..., call_control=...))"
            )

    def _check_agent_features(self) -> None:
        formatter = self.tool_error_formatter
        if formatter is not None and not callable(formatter):
            raise ConfigurationError(
                f"tool_error_formatter={formatter!r} is invalid: expected a function of a "
                "voxwire.agents.ToolErrorInfo returning text (or None for the default)"
            )
        refusal = self.input_guardrail_refusal
        if not (refusal is None or isinstance(refusal, str) or callable(refusal)):
            raise ConfigurationError(
                f"input_guardrail_refusal={refusal!r} is invalid: expected text to say, None "
                "(silent) or a function of the tripped guardrails' names"
            )

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)  # a frozen dataclass's derived fields

    def _check_store(self) -> None:
        ttl = self.lease_ttl_s
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < 86_400:
            raise ConfigurationError(
                f"lease_ttl_s={ttl!r} is invalid: expected seconds > 0 (how long the "
                "conversation stays held after this process stops renewing it; default "
                f"{DEFAULT_LEASE_TTL_S:g})"
            )
        if not isinstance(self.store, ConversationStore | None):
            raise ConfigurationError(
                f"store={self.store!r} is invalid: expected a voxwire.store.ConversationStore "
                "(await SQLiteStore.open(path), await PostgresStore.open(conninfo)) or None"
            )
        cid = self.conversation_id
        if cid is not None and (not isinstance(cid, str) or not cid.strip()):
            raise ConfigurationError(
                f"conversation_id={cid!r} is invalid: expected non-empty text, or None for a new id"
            )
        if not isinstance(self.store_audio, AudioPolicy | None):
            raise ConfigurationError(
                f"store_audio={self.store_audio!r} is invalid: expected a "
                "voxwire.store.AudioPolicy or None (no audio stored)"
            )

    def _check_endpoint(self) -> None:
        primary = build_url(self.url, model=self.model, call_id=self.call_id)
        fallbacks = tuple(
            build_url(other, model=self.model, call_id=self.call_id) for other in self.fallback_urls
        )
        self._set("primary_url", primary)
        self._set("urls", (primary, *fallbacks))
        key = self.api_key
        if key is not None and not (isinstance(key, str) or callable(key)):
            raise ConfigurationError(
                "api_key is invalid: expected the key as text or a function returning it"
            )
        headers = dict(self.headers or {})
        for name, value in headers.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise ConfigurationError(f"header {name!r} is invalid: names and values are text")
        self._set("headers", headers)

    def _check_input(self) -> None:
        if self.audio_input is not None:
            check_source(self.audio_input)
        frame_ms = self.input_frame_ms
        if not isinstance(frame_ms, int) or isinstance(frame_ms, bool) or not 1 <= frame_ms <= 1000:
            raise ConfigurationError(
                f"input_frame_ms={frame_ms!r} is invalid: expected an integer in 1..=1000"
            )
        barge_in = self.local_barge_in
        if not isinstance(barge_in, bool | BargeInDetector):
            raise ConfigurationError(
                f"local_barge_in={barge_in!r} is invalid: expected True, False or a "
                "voxwire.audio.BargeInDetector"
            )
        if barge_in is not False and self.audio_input is None:
            raise ConfigurationError(
                "local_barge_in needs audio_input: the detector listens to the session's "
                "microphone (give audio_input=, or leave local_barge_in off)"
            )
        self._check_echo_and_recovery()

    def _check_echo_and_recovery(self) -> None:
        output = attached_output(self.audio_output)
        if not isinstance(self.echo_cancellation, bool):
            raise ConfigurationError(
                f"echo_cancellation={self.echo_cancellation!r} is invalid: expected True or False"
            )
        if self.echo_cancellation and (self.audio_input is None or output is None):
            raise ConfigurationError(
                "echo_cancellation needs audio_input and audio_output (an AudioOutput, or a "
                "speaker holding one): the canceller takes what the speaker played out of the "
                "microphone"
            )
        recovery = self.false_interruption
        if recovery is None:
            return
        if not isinstance(recovery, FalseInterruptionFilter):
            raise ConfigurationError(
                f"false_interruption={recovery!r} is invalid: expected a "
                "voxwire.audio.FalseInterruptionFilter or None"
            )
        if self.local_barge_in is False or not isinstance(output, AudioOutput):
            raise ConfigurationError(
                "false_interruption needs local_barge_in and an audio_output holding an "
                "AudioOutput: a local onset pauses that output until the filter decides"
            )

    def input_source(self) -> AudioSource | None:
        """The microphone the session runs: ``audio_input``, behind the echo canceller with
        ``echo_cancellation`` (its reference tapped from the attached output)."""
        output = attached_output(self.audio_output)
        if self.echo_cancellation and self.audio_input is not None:
            assert isinstance(output, AudioOutput)  # checked at construction
            # Capture times are read on the session's clock, the one the output's buffers are
            # stamped with (a virtual speaker's own clock; time.monotonic by default).
            return EchoCancelledInput(self.audio_input, output, now=self.clock or time.monotonic)
        return self.audio_input

    def _check_output_and_timeouts(self) -> None:
        if self.audio_output is not None and attached_output(self.audio_output) is None:
            raise ConfigurationError(
                f"audio_output={self.audio_output!r} is invalid: expected a "
                "voxwire.audio.AudioOutput, a speaker holding one as .output (MemoryOutput, "
                "WavFileOutput, SoundDeviceOutput) or a voxwire.audio.PlaybackClock"
            )
        for name, timeout in (
            ("open_timeout_s", self.open_timeout_s),
            ("close_timeout_s", self.close_timeout_s),
        ):
            if not timeout > 0:
                raise ConfigurationError(f"{name}={timeout!r} is invalid: expected seconds > 0")

    # --- what the parts use -----------------------------------------------------------------------

    @property
    def connect_with(self) -> Connector:
        """How connections are opened (default: a websocket)."""
        return self.connector if self.connector is not None else connect_websocket

    @property
    def uses_default_connector(self) -> bool:
        return self.connector is None or self.connector is connect_websocket

    def id_factory(self) -> IdFactory:
        """Event and item ids: one factory for every connection's protocol core."""
        return self.ids if self.ids is not None else CounterIds()

    def connect_request(self, url: str, headers: Mapping[str, str]) -> ConnectRequest:
        return ConnectRequest(
            url=url,
            headers=headers,
            open_timeout_s=self.open_timeout_s,
            close_timeout_s=self.close_timeout_s,
            ping_interval_s=self.ping_interval_s,
            ping_timeout_s=self.ping_timeout_s,
            max_message_bytes=self.max_message_bytes,
        )

    def make_tracer(self) -> SessionTracer:
        """The session's OpenTelemetry spans (asyncio/observability/tracing.py)."""
        agent = self.agent
        return SessionTracer(
            disabled=self.tracing_disabled,
            tracer_provider=self.tracer_provider,
            attributes={
                "voxwire.agent.name": agent.name if agent is not None else None,
                "voxwire.workflow_name": self.workflow_name,
                "voxwire.group_id": self.group_id,
                "voxwire.metadata": self.metadata,
            },
        )

    def feedback_for(self, guardrails: Sequence[str]) -> str:
        """What the model is told after output guardrails tripped."""
        feedback = self.guardrail_feedback
        return feedback if isinstance(feedback, str) else feedback(guardrails)
