"""Session configuration in the GA shape, validated on construction.

The GA ``session`` object nests audio settings (``audio.input.format``,
``audio.output.voice`` …) where the beta protocol had flat fields (``input_audio_format``,
``voice`` …). :class:`SessionConfig` is the GA shape only; :meth:`SessionConfig.from_mapping`
accepts the legacy flat names and camelCase keys and normalises them (see ``_normalize``).

Every field defaults to ``UNSET``: a ``session.update`` carries only what the caller set, so it
never resets a server default by accident. ``None`` is a value, not "unset": the GA reference
uses ``turn_detection: null`` to turn voice activity detection off and ``transcription: null``
to turn input transcription off.

Invalid values raise :class:`~voxwire.exceptions.ConfigurationError` at once, naming the field,
the value and what is allowed (the DESIGN rule for caller misuse).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypeVar

import msgspec
from msgspec import UNSET, Struct, UnsetType

from voxwire.exceptions import ConfigurationError
from voxwire.protocol._normalize import Schema, normalize_session, value_at
from voxwire.protocol._nulls import drop_absent_nulls, unset_absent_nulls
from voxwire.protocol.units import G711_8K, PCM16_24K, SampleFormat

__all__ = [
    "PCM16",
    "PCMA",
    "PCMU",
    "AudioConfig",
    "AudioFormat",
    "AudioInputConfig",
    "AudioOutputConfig",
    "FunctionTool",
    "FunctionToolChoice",
    "McpTool",
    "McpToolChoice",
    "NoiseReduction",
    "Prompt",
    "Reasoning",
    "RetentionRatioTruncation",
    "SemanticVad",
    "ServerVad",
    "SessionConfig",
    "Tool",
    "ToolChoice",
    "TracingConfig",
    "Transcription",
    "TurnDetection",
    "VoiceId",
]

AUDIO_FORMAT_TYPES: Final = ("audio/pcm", "audio/pcmu", "audio/pcma")
PCM_RATE_HZ: Final = PCM16_24K.sample_rate_hz
SPEED_MIN: Final = 0.25
SPEED_MAX: Final = 1.5
EAGERNESS_VALUES: Final = ("low", "medium", "high", "auto")
NOISE_REDUCTION_TYPES: Final = ("near_field", "far_field")
MODALITIES: Final = ("text", "audio")
TOOL_CHOICE_MODES: Final = ("auto", "none", "required")


def invalid(path: str, value: object, allowed: str) -> ConfigurationError:
    """The one message shape for a bad value: field, value, what is allowed."""
    return ConfigurationError(f"{path}={value!r} is invalid: expected {allowed}")


class _Config(Struct, frozen=True, kw_only=True):
    """Base of the config records: immutable, keyword-only; UNSET fields are left off the wire.

    ``None`` given for a field that has no null of its own means "not given" (``UNSET``), as a
    ``null`` on the wire does; the fields that admit ``None`` keep it as a value.
    """

    def __post_init__(self) -> None:
        unset_absent_nulls(self)
        self._check()

    def _check(self) -> None:
        """Validate the values (raise :func:`invalid`); the records with rules override it."""


class _TaggedConfig(_Config, tag_field="type", frozen=True):
    """A config record told apart from its siblings by its ``type`` field."""

    @property
    def type(self) -> str:
        """The record's ``type`` on the wire."""
        return str(self.__struct_config__.tag)


# --- audio formats --------------------------------------------------------------------------------


class AudioFormat(_Config, frozen=True):
    """A GA audio format: ``{"type": "audio/pcm", "rate": 24000}``, ``audio/pcmu`` or
    ``audio/pcma``. Use the constants :data:`PCM16`, :data:`PCMU`, :data:`PCMA`."""

    type: str = "audio/pcm"  # optional in the GA types; audio/pcm is the only one with a rate
    rate_hz: int | UnsetType = msgspec.field(default=UNSET, name="rate")

    def _check(self) -> None:
        if self.type not in AUDIO_FORMAT_TYPES:
            raise invalid(
                "format.type",
                self.type,
                "one of audio/pcm, audio/pcmu, audio/pcma "
                "(legacy names pcm16, g711_ulaw, g711_alaw are accepted by from_mapping)",
            )
        if self.type == "audio/pcm":
            if self.rate_hz is not UNSET and self.rate_hz != PCM_RATE_HZ:
                raise invalid("format.rate", self.rate_hz, f"{PCM_RATE_HZ} (audio/pcm is 24 kHz)")
        elif self.rate_hz is not UNSET:
            raise invalid("format.rate", self.rate_hz, f"no rate ({self.type} is fixed at 8 kHz)")

    @property
    def sample_format(self) -> SampleFormat:
        """Bytes per sample and sample rate of this format (for the unit helpers)."""
        return PCM16_24K if self.type == "audio/pcm" else G711_8K


#: PCM16 mono at 24 kHz (legacy ``pcm16``).
PCM16: Final = AudioFormat(type="audio/pcm", rate_hz=PCM_RATE_HZ)
#: G.711 µ-law at 8 kHz (legacy ``g711_ulaw``).
PCMU: Final = AudioFormat(type="audio/pcmu")
#: G.711 A-law at 8 kHz (legacy ``g711_alaw``).
PCMA: Final = AudioFormat(type="audio/pcma")


# --- input side -----------------------------------------------------------------------------------


class Transcription(_Config, frozen=True):
    """``audio.input.transcription``: asynchronous transcription of the user's audio."""

    model: str | UnsetType = UNSET
    language: str | UnsetType = UNSET
    prompt: str | UnsetType = UNSET
    delay: str | UnsetType = UNSET
    keywords: list[str] | UnsetType = UNSET
    languages: list[str] | UnsetType = UNSET


class ServerVad(_TaggedConfig, tag="server_vad", frozen=True):
    """Threshold-based voice activity detection."""

    threshold: float | UnsetType = UNSET
    prefix_padding_ms: int | UnsetType = UNSET
    silence_duration_ms: int | UnsetType = UNSET
    idle_timeout_ms: int | UnsetType | None = UNSET
    create_response: bool | UnsetType = UNSET
    interrupt_response: bool | UnsetType = UNSET

    def _check(self) -> None:
        path = "audio.input.turn_detection"
        if isinstance(self.threshold, float | int) and not 0.0 <= self.threshold <= 1.0:
            raise invalid(f"{path}.threshold", self.threshold, "a number from 0.0 to 1.0")
        for name in ("prefix_padding_ms", "silence_duration_ms", "idle_timeout_ms"):
            value = getattr(self, name)
            if isinstance(value, int) and value < 0:
                raise invalid(f"{path}.{name}", value, "a duration >= 0 ms")


class SemanticVad(_TaggedConfig, tag="semantic_vad", frozen=True):
    """Turn detection that waits longer when the user sounds unfinished."""

    eagerness: str | UnsetType = UNSET
    create_response: bool | UnsetType = UNSET
    interrupt_response: bool | UnsetType = UNSET

    def _check(self) -> None:
        if isinstance(self.eagerness, str) and self.eagerness not in EAGERNESS_VALUES:
            raise invalid(
                "audio.input.turn_detection.eagerness",
                self.eagerness,
                "one of " + ", ".join(EAGERNESS_VALUES),
            )


TurnDetection = ServerVad | SemanticVad


class NoiseReduction(_Config, frozen=True):
    """``audio.input.noise_reduction``: ``near_field`` (headsets) or ``far_field`` (laptops)."""

    type: str
    strength: float | UnsetType = UNSET

    def _check(self) -> None:
        if self.type not in NOISE_REDUCTION_TYPES:
            raise invalid(
                "audio.input.noise_reduction.type",
                self.type,
                "one of " + ", ".join(NOISE_REDUCTION_TYPES),
            )


class AudioInputConfig(_Config, frozen=True):
    """``audio.input``: what the client sends and how the server listens to it."""

    format: AudioFormat | UnsetType = UNSET
    transcription: Transcription | UnsetType | None = UNSET
    turn_detection: TurnDetection | UnsetType | None = UNSET
    noise_reduction: NoiseReduction | UnsetType | None = UNSET


# --- output side ----------------------------------------------------------------------------------


class VoiceId(_Config, frozen=True):
    """A custom voice referenced by id (GA ``voice: {"id": ...}``)."""

    id: str


class AudioOutputConfig(_Config, frozen=True):
    """``audio.output``: what the server speaks."""

    format: AudioFormat | UnsetType = UNSET
    voice: str | VoiceId | UnsetType = UNSET
    speed: float | UnsetType = UNSET

    def _check(self) -> None:
        speed = self.speed
        if speed is not UNSET and not SPEED_MIN <= speed <= SPEED_MAX:
            raise invalid("audio.output.speed", speed, f"a number from {SPEED_MIN} to {SPEED_MAX}")
        if isinstance(self.voice, str) and not self.voice:
            raise invalid("audio.output.voice", self.voice, "a voice name such as 'marin'")


class AudioConfig(_Config, frozen=True):
    """``audio``: the input and output halves."""

    input: AudioInputConfig | UnsetType = UNSET
    output: AudioOutputConfig | UnsetType = UNSET


# --- tools ----------------------------------------------------------------------------------------


class FunctionTool(_TaggedConfig, tag="function", frozen=True):
    """A function the model may call; ``parameters`` is a JSON Schema object."""

    name: str
    description: str | UnsetType | None = UNSET
    parameters: dict[str, Any] | UnsetType | None = UNSET


class McpTool(_TaggedConfig, tag="mcp", frozen=True):
    """A hosted MCP server the Realtime API calls itself; nested options stay as given."""

    server_label: str
    server_url: str | UnsetType | None = UNSET
    connector_id: str | UnsetType | None = UNSET
    authorization: str | UnsetType | None = UNSET
    headers: dict[str, str] | UnsetType | None = UNSET
    server_description: str | UnsetType | None = UNSET
    allowed_tools: Any = UNSET
    require_approval: Any = UNSET
    allowed_callers: list[str] | UnsetType | None = UNSET
    defer_loading: bool | UnsetType | None = UNSET
    tunnel_id: str | UnsetType | None = UNSET


Tool = FunctionTool | McpTool


class FunctionToolChoice(_TaggedConfig, tag="function", frozen=True):
    """Force a call to the function ``name``."""

    name: str


class McpToolChoice(_TaggedConfig, tag="mcp", frozen=True):
    """Force a call to a tool of the MCP server ``server_label``."""

    server_label: str
    name: str | UnsetType | None = UNSET


ToolChoice = Literal["auto", "none", "required"] | FunctionToolChoice | McpToolChoice


# --- the rest -------------------------------------------------------------------------------------


class TracingConfig(_Config, frozen=True):
    """Explicit tracing settings (``"auto"`` picks defaults, ``None`` disables tracing)."""

    workflow_name: str | UnsetType = UNSET
    group_id: str | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET


class RetentionRatioTruncation(_TaggedConfig, tag="retention_ratio", frozen=True):
    """Drop the oldest part of the context, keeping ``retention_ratio`` of it."""

    retention_ratio: float
    token_limits: dict[str, Any] | UnsetType | None = UNSET

    def _check(self) -> None:
        if not 0.0 <= self.retention_ratio <= 1.0:
            raise invalid("truncation.retention_ratio", self.retention_ratio, "0.0 to 1.0")


class Reasoning(_Config, frozen=True):
    """Reasoning effort, for reasoning Realtime models (``minimal`` … ``xhigh``)."""

    effort: str | UnsetType = UNSET


class Prompt(_Config, frozen=True):
    """A stored prompt template and its variables."""

    id: str
    version: str | UnsetType | None = UNSET
    variables: dict[str, Any] | UnsetType | None = UNSET


MaxOutputTokens = int | Literal["inf"]


def check_max_output_tokens(value: MaxOutputTokens | UnsetType, path: str) -> None:
    """``max_output_tokens`` is 1..4096 or ``"inf"`` (GA reference)."""
    if value is UNSET or value == "inf":
        return
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 4096:
        raise invalid(path, value, "an integer from 1 to 4096, or 'inf'")


def check_output_modalities(value: list[str] | UnsetType, path: str) -> None:
    """GA output modalities are ``["audio"]`` or ``["text"]``; audio always carries a transcript."""
    if value is UNSET:
        return
    if not value or len(set(value)) != len(value) or any(m not in MODALITIES for m in value):
        raise invalid(path, value, "['audio'] or ['text']")


class SessionConfig(_Config, frozen=True):
    """The GA ``session`` object of ``session.update`` / ``session.created`` / ``session.updated``.

    ``extra`` is a raw passthrough: fields the SDK does not model are sent as given, and fields the
    server adds (``object``, ``id``, ``expires_at`` …) are kept there when a session is decoded.
    """

    type: Literal["realtime"] = "realtime"
    model: str | UnsetType = UNSET
    output_modalities: list[str] | UnsetType = UNSET
    instructions: str | UnsetType = UNSET
    audio: AudioConfig | UnsetType = UNSET
    tools: list[Tool] | UnsetType = UNSET
    tool_choice: ToolChoice | UnsetType = UNSET
    max_output_tokens: MaxOutputTokens | UnsetType = UNSET
    tracing: Literal["auto"] | TracingConfig | UnsetType | None = UNSET
    truncation: Literal["auto", "disabled"] | RetentionRatioTruncation | UnsetType = UNSET
    prompt: Prompt | UnsetType | None = UNSET
    include: list[str] | UnsetType = UNSET
    reasoning: Reasoning | UnsetType = UNSET
    parallel_tool_calls: bool | UnsetType = UNSET
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    def _check(self) -> None:
        check_output_modalities(self.output_modalities, "output_modalities")
        check_max_output_tokens(self.max_output_tokens, "max_output_tokens")
        if isinstance(self.tool_choice, str) and self.tool_choice not in TOOL_CHOICE_MODES:
            raise invalid(
                "tool_choice",
                self.tool_choice,
                "one of auto, none, required, or a FunctionToolChoice / McpToolChoice",
            )

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> SessionConfig:
        """Build a config from a mapping in the GA shape, the legacy flat shape or camelCase.

        Keys the SDK does not model at the top level go to ``extra``; unknown keys inside the
        modelled objects (``audio.output`` …) are rejected as probable typos.
        """
        return _convert(normalize_session(mapping, strict=True, schema=_SCHEMA), cls)

    @classmethod
    def from_wire(cls, mapping: Mapping[str, Any]) -> SessionConfig:
        """Decode a session object sent by a server (GA or beta shape), keeping unknown fields.

        Unlike :meth:`from_mapping`, unknown keys inside modelled objects are dropped: a newer
        server may add fields there, and they must not make the session unreadable.
        """
        return _convert(normalize_session(mapping, strict=False, schema=_SCHEMA), cls)

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready ``session`` object: set fields only, then ``extra`` merged in."""
        wire: dict[str, Any] = msgspec.to_builtins(self)
        extra = wire.pop("extra")
        for key, value in extra.items():
            wire.setdefault(key, value)
        return wire

    @property
    def output_sample_format(self) -> SampleFormat:
        """Sample rate and width of the audio the server sends (PCM16 24 kHz unless set)."""
        if isinstance(self.audio, AudioConfig) and isinstance(self.audio.output, AudioOutputConfig):
            fmt = self.audio.output.format
            if isinstance(fmt, AudioFormat):
                return fmt.sample_format
        return PCM16_24K


_T = TypeVar("_T")


def _keys(cls: type[Struct]) -> frozenset[str]:
    return frozenset(field.encode_name for field in msgspec.structs.fields(cls))


# Which keys each modelled object accepts, derived from the records above (see ``_normalize``).
_SCHEMA: Final[Schema] = {
    "session": _keys(SessionConfig) - {"extra"},
    "audio": _keys(AudioConfig),
    "audio.input": _keys(AudioInputConfig),
    "audio.output": _keys(AudioOutputConfig),
    "format": _keys(AudioFormat),
    "transcription": _keys(Transcription),
    "noise_reduction": _keys(NoiseReduction),
    "turn_detection:server_vad": _keys(ServerVad),
    "turn_detection:semantic_vad": _keys(SemanticVad),
    "tool:function": _keys(FunctionTool),
    "tool:mcp": _keys(McpTool),
}


def _convert(normalized: dict[str, Any], cls: type[_T]) -> _T:
    """Type-check a normalised mapping; a type error names the field, the value and the type."""
    given = drop_absent_nulls(normalized, cls)
    try:
        return msgspec.convert(given, cls)
    except msgspec.ValidationError as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, ConfigurationError):
            raise ConfigurationError(str(cause)) from None
        message = str(exc)
        found, value = value_at(given, message)
        detail = f" (got {value!r})" if found else ""
        raise ConfigurationError(f"invalid session config: {message}{detail}") from None
