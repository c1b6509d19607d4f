"""Normalise a session mapping (GA, legacy flat, camelCase) to the GA shape, as plain data.

This module rewrites keys and values only; type checking and range checks happen when
``config`` converts the result into :class:`~voxwire.protocol.config.SessionConfig`. It knows
which keys each modelled object has through the ``schema`` that ``config`` passes in (built
from the config records themselves), so the two cannot drift apart.

Legacy (beta) session fields and where GA moved them::

    modalities                   -> output_modalities (["audio", "text"] -> ["audio"])
    input_audio_format           -> audio.input.format
    output_audio_format          -> audio.output.format
    input_audio_transcription    -> audio.input.transcription
    turn_detection               -> audio.input.turn_detection
    input_audio_noise_reduction  -> audio.input.noise_reduction
    voice                        -> audio.output.voice
    speed                        -> audio.output.speed
    max_response_output_tokens   -> max_output_tokens

Legacy format names: ``pcm16`` -> ``{"type": "audio/pcm", "rate": 24000}``, ``g711_ulaw`` ->
``audio/pcmu``, ``g711_alaw`` -> ``audio/pcma``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from voxwire.exceptions import ConfigurationError

__all__ = ["Schema", "legacy_format", "normalize_session", "snake_case", "value_at"]

#: Allowed keys per modelled object, e.g. ``{"audio.output": {"format", "voice", "speed"}}``;
#: tagged objects are keyed by ``"<object>:<type>"`` (``"turn_detection:server_vad"``).
Schema = Mapping[str, frozenset[str]]

_LEGACY_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    "modalities": ("output_modalities",),
    "input_audio_format": ("audio", "input", "format"),
    "output_audio_format": ("audio", "output", "format"),
    "input_audio_transcription": ("audio", "input", "transcription"),
    "turn_detection": ("audio", "input", "turn_detection"),
    "input_audio_noise_reduction": ("audio", "input", "noise_reduction"),
    "voice": ("audio", "output", "voice"),
    "speed": ("audio", "output", "speed"),
    "max_response_output_tokens": ("max_output_tokens",),
}

_FORMAT_NAMES: Final[Mapping[str, Mapping[str, Any]]] = {
    "audio/pcm": {"type": "audio/pcm", "rate": 24_000},
    "audio/pcmu": {"type": "audio/pcmu"},
    "audio/pcma": {"type": "audio/pcma"},
    "pcm16": {"type": "audio/pcm", "rate": 24_000},
    "g711_ulaw": {"type": "audio/pcmu"},
    "g711_alaw": {"type": "audio/pcma"},
}
_FORMATS_ALLOWED: Final = (
    "audio/pcm (24000 Hz), audio/pcmu or audio/pcma, as a name or {'type': ...}; "
    "legacy pcm16, g711_ulaw, g711_alaw"
)

_CAMEL_BOUNDARY: Final = re.compile(r"(?<=[a-z0-9])([A-Z])")
_PATH_IN_MESSAGE: Final = re.compile(r"`\$((?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*)`")
_PATH_STEP: Final = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def snake_case(key: str) -> str:
    """``silenceDurationMs`` -> ``silence_duration_ms``; snake_case keys are unchanged."""
    return _CAMEL_BOUNDARY.sub(r"_\1", key).lower()


def normalize_session(mapping: Any, *, strict: bool, schema: Schema) -> dict[str, Any]:
    """The GA-shaped plain-data form of ``mapping``; unmodelled top-level keys go to ``extra``."""
    top = _snake_keys(mapping, "session")
    extra: dict[str, Any] = dict(_mapping(top.pop("extra", {}), "extra"))
    if isinstance(top.get("audio"), Mapping):
        top["audio"] = _audio_keys(top["audio"])
    for legacy, path in _LEGACY_FIELDS.items():
        if legacy in top:
            value = top.pop(legacy)
            if legacy == "modalities":
                value = _modalities(value)
            _place(top, path, value, legacy)
    for key in list(top):
        if key not in schema["session"]:
            extra[key] = top.pop(key)
    # A null here is "not given" or, where the field admits it, a value: SessionConfig decides.
    if top.get("audio") is not None:
        top["audio"] = _audio(top["audio"], strict, schema)
    if top.get("tools") is not None:
        top["tools"] = _tools(top["tools"], strict, schema)
    for key in ("tool_choice", "tracing", "truncation", "reasoning"):
        if isinstance(top.get(key), Mapping):
            top[key] = _snake_keys(top[key], key)
    top["extra"] = extra
    return top


def legacy_format(name: str) -> dict[str, Any] | None:
    """The GA format object for a format name (``pcm16``, ``audio/pcmu`` …), or ``None``."""
    fmt = _FORMAT_NAMES.get(name)
    return dict(fmt) if fmt is not None else None


def value_at(data: Any, message: str) -> tuple[bool, Any]:
    """The value a msgspec error message points at (``- at `$.audio.output.speed```)."""
    match = _PATH_IN_MESSAGE.search(message)
    if match is None:
        return False, None
    node = data
    for key, index in _PATH_STEP.findall(match.group(1)):
        try:
            node = node[int(index)] if index else node[key]
        except (KeyError, IndexError, TypeError):
            return False, None
    return True, node


# --- helpers --------------------------------------------------------------------------------------


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{path}={value!r} is invalid: expected a mapping")
    return value


def _snake_keys(value: Any, path: str) -> dict[str, Any]:
    """Copy of a mapping with snake_case keys; two spellings of one key must agree."""
    out: dict[str, Any] = {}
    for key, item in _mapping(value, path).items():
        if not isinstance(key, str):
            raise ConfigurationError(f"{path}: key {key!r} is invalid: expected a string")
        name = snake_case(key)
        if name in out and out[name] != item:
            raise ConfigurationError(
                f"{path}.{name} is given twice with different values "
                f"({out[name]!r} and {item!r}); give it once"
            )
        out[name] = item
    return out


def _audio_keys(audio: Mapping[str, Any]) -> dict[str, Any]:
    """snake_case the ``audio``, ``audio.input`` and ``audio.output`` levels before merging."""
    out = _snake_keys(audio, "audio")
    for side in ("input", "output"):
        if isinstance(out.get(side), Mapping):
            out[side] = _snake_keys(out[side], f"audio.{side}")
    return out


def _place(top: dict[str, Any], path: tuple[str, ...], value: Any, legacy: str) -> None:
    """Put a legacy value at its GA path; a different GA value there is a conflict."""
    node = top
    for key in path[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigurationError(
                f"{'.'.join(path[: path.index(key) + 1])}={child!r} is invalid: expected a mapping"
            )
        node = child
    leaf = path[-1]
    if leaf in node and node[leaf] != value:
        raise ConfigurationError(
            f"{legacy}={value!r} (legacy name) conflicts with {'.'.join(path)}={node[leaf]!r}; "
            f"give only {'.'.join(path)}"
        )
    node[leaf] = value


def _modalities(value: Any) -> Any:
    """Beta ``["audio", "text"]`` meant "speak, with a transcript"; GA spells it ``["audio"]``."""
    if isinstance(value, list | tuple) and "audio" in value:
        return ["audio"]
    return value


def _check_keys(obj: dict[str, Any], allowed: frozenset[str], path: str, strict: bool) -> None:
    for key in list(obj):
        if key in allowed:
            continue
        if strict:
            raise ConfigurationError(
                f"{path}.{key} is not a known field: expected one of {', '.join(sorted(allowed))}"
                " (unmodelled fields go in the top-level extra)"
            )
        del obj[key]


def _audio(value: Any, strict: bool, schema: Schema) -> dict[str, Any]:
    audio = _snake_keys(value, "audio")
    _check_keys(audio, schema["audio"], "audio", strict)
    for side in ("input", "output"):
        if audio.get(side) is None:
            continue
        path = f"audio.{side}"
        section = _snake_keys(audio[side], path)
        _check_keys(section, schema[path], path, strict)
        if section.get("format") is not None:
            section["format"] = _format(section["format"], f"{path}.format", strict, schema)
        if side == "input":
            _input_parts(section, strict, schema)
        audio[side] = section
    return audio


def _format(value: Any, path: str, strict: bool, schema: Schema) -> Any:
    if isinstance(value, str):
        if value not in _FORMAT_NAMES:
            raise ConfigurationError(f"{path}={value!r} is invalid: expected {_FORMATS_ALLOWED}")
        return dict(_FORMAT_NAMES[value])
    fmt = _snake_keys(value, path)
    _check_keys(fmt, schema["format"], path, strict)
    if fmt.get("type") is None:  # optional in the GA types (null: not given): audio/pcm
        fmt["type"] = "audio/pcm"
    kind = fmt["type"]
    if kind in ("pcm16", "g711_ulaw", "g711_alaw"):
        fmt = {**fmt, **_FORMAT_NAMES[kind]}
    elif not isinstance(kind, str) or kind not in _FORMAT_NAMES:
        raise ConfigurationError(f"{path}.type={kind!r} is invalid: expected {_FORMATS_ALLOWED}")
    if fmt["type"] == "audio/pcm" and fmt.get("rate") not in (None, 24_000):
        raise ConfigurationError(
            f"{path}.rate={fmt['rate']!r} is invalid: expected 24000 (audio/pcm is 24 kHz only)"
        )
    return fmt


def _input_parts(section: dict[str, Any], strict: bool, schema: Schema) -> None:
    for name in ("transcription", "noise_reduction"):
        if section.get(name) is not None:
            path = f"audio.input.{name}"
            part = _snake_keys(section[name], path)
            _check_keys(part, schema[name], path, strict)
            section[name] = part
    if section.get("turn_detection") is not None:
        section["turn_detection"] = _turn_detection(section["turn_detection"], strict, schema)


def _turn_detection(value: Any, strict: bool, schema: Schema) -> dict[str, Any]:
    path = "audio.input.turn_detection"
    turn = _snake_keys(value, path)
    kind = turn.get("type")
    allowed = schema.get(f"turn_detection:{kind}") if isinstance(kind, str) else None
    if allowed is None:
        raise ConfigurationError(
            f"{path}.type={kind!r} is invalid: expected server_vad or semantic_vad "
            f"(set {path} to None to turn turn detection off)"
        )
    _check_keys(turn, allowed | {"type"}, path, strict)
    return turn


def _tools(value: Any, strict: bool, schema: Schema) -> list[dict[str, Any]]:
    if not isinstance(value, list | tuple):
        raise ConfigurationError(f"tools={value!r} is invalid: expected a list of tools")
    tools: list[dict[str, Any]] = []
    for index, raw in enumerate(value):
        path = f"tools[{index}]"
        # Only the tool's own keys are renamed: ``parameters`` is a JSON Schema and its
        # property names belong to the application.
        tool = _snake_keys(raw, path)
        kind = tool.get("type", "function")
        allowed = schema.get(f"tool:{kind}") if isinstance(kind, str) else None
        if allowed is None:
            if strict:
                raise ConfigurationError(
                    f"{path}.type={kind!r} is invalid: expected function or mcp"
                )
            continue
        tool["type"] = kind
        _check_keys(tool, allowed | {"type"}, path, strict)
        tools.append(tool)
    return tools
