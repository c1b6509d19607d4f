"""The session as the server holds it: defaults, validation of ``session.update``, merging.

The effective session is kept as the JSON object the server sends in ``session.created`` /
``session.updated`` — every field present, ``null`` where unset, as the real service does (see
the GA trace in ``tests/fixtures/realtime``). A ``session.update`` is checked in three steps,
each failing with the error the real service sends:

1. shape: ``session`` is an object whose ``type`` is ``"realtime"`` (``missing_required_parameter``
   / ``invalid_value``), with only GA keys (``unknown_parameter`` — legacy flat names such as
   ``input_audio_format`` are rejected, as by the GA service);
2. values: :meth:`SessionConfig.from_mapping <voxwire.protocol.SessionConfig.from_mapping>` (the
   protocol core's checks: ranges, types, unknown nested keys) plus the server-only rules
   (output modalities ``["audio"]`` or ``["text"]``, voice names);
3. state: the model cannot change; the voice cannot change once the assistant has spoken
   (``cannot_update_voice``).

Then the update is merged: ``audio``, ``audio.input`` and ``audio.output`` field by field, a turn
detection of the same type field by field (of a new type: onto that type's defaults), everything
else replaced.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import AudioFormat, SessionConfig
from voxwire.server.core.errors import ServerError

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "DEFAULT_MODEL",
    "DEFAULT_VOICE",
    "VOICES",
    "apply_update",
    "default_session",
    "turn_detection_defaults",
]

DEFAULT_MODEL: Final = "gpt-realtime"
DEFAULT_VOICE: Final = "alloy"
DEFAULT_INSTRUCTIONS: Final = (
    "You are a helpful assistant served by the voxwire local realtime server; "
    "your replies come from a scenario of rules."
)
#: Built-in voice names of the GA service; a custom voice is given as ``{"id": ...}``.
VOICES: Final = (
    "alloy",
    "ash",
    "ballad",
    "cedar",
    "coral",
    "echo",
    "marin",
    "sage",
    "shimmer",
    "verse",
)

_GA_KEYS: Final = frozenset(
    field.encode_name for field in msgspec.structs.fields(SessionConfig) if field.name != "extra"
)
_MERGED_OBJECTS: Final = frozenset({("audio",), ("audio", "input"), ("audio", "output")})

_UNKNOWN_FIELD: Final = re.compile(r"^([\w.\[\]]+) is not a known field")
_BAD_VALUE: Final = re.compile(r"^([\w.\[\]]+)=")
_BAD_TYPE: Final = re.compile(r"at `\$\.([^`]+)`")


def turn_detection_defaults(kind: str) -> dict[str, Any]:
    """The full turn detection object of ``kind`` with the service's defaults."""
    if kind == "semantic_vad":
        return {
            "type": "semantic_vad",
            "eagerness": "auto",
            "create_response": True,
            "interrupt_response": True,
        }
    return {
        "type": "server_vad",
        "threshold": 0.5,
        "prefix_padding_ms": 300,
        "silence_duration_ms": 200,
        "idle_timeout_ms": None,
        "create_response": True,
        "interrupt_response": True,
    }


def default_session(
    *,
    session_id: str,
    model: str,
    expires_at: int,
    output_modalities: list[str],
    voice: str = DEFAULT_VOICE,
    instructions: str = DEFAULT_INSTRUCTIONS,
) -> dict[str, Any]:
    """The session of ``session.created``: every field, the service's defaults."""
    pcm = {"type": "audio/pcm", "rate": 24000}
    return {
        "type": "realtime",
        "object": "realtime.session",
        "id": session_id,
        "model": model,
        "output_modalities": list(output_modalities),
        "instructions": instructions,
        "tools": [],
        "tool_choice": "auto",
        "max_output_tokens": "inf",
        "tracing": None,
        "truncation": "auto",
        "prompt": None,
        "expires_at": expires_at,
        "audio": {
            "input": {
                "format": dict(pcm),
                "transcription": None,
                "noise_reduction": None,
                "turn_detection": turn_detection_defaults("server_vad"),
            },
            "output": {"format": dict(pcm), "voice": voice, "speed": 1.0},
        },
        "include": None,
    }


def apply_update(
    current: Mapping[str, Any], raw_session: object, *, assistant_audio_sent: bool
) -> dict[str, Any]:
    """The effective session after ``session.update`` with ``raw_session``; raises
    :class:`ServerError` (and changes nothing) if the update is invalid."""
    if not isinstance(raw_session, dict):
        raise ServerError(
            "invalid_type",
            f"Invalid type for 'session': expected an object, but got {_json_type(raw_session)}.",
            param="session",
        )
    _check_shape(raw_session)
    update = _check_values(raw_session)
    _check_state(current, update, assistant_audio_sent=assistant_audio_sent)
    merged = copy.deepcopy(dict(current))
    _merge(merged, update, ())
    return merged


def _check_shape(raw: Mapping[str, Any]) -> None:
    if "type" not in raw:
        raise ServerError(
            "missing_required_parameter",
            "Missing required parameter: 'session.type'.",
            param="session.type",
        )
    if raw["type"] != "realtime":
        raise ServerError(
            "invalid_value",
            f"Invalid value: {raw['type']!r}. This server supports only 'realtime' sessions "
            "(transcription sessions are not implemented).",
            param="session.type",
        )
    for key in raw:
        if key not in _GA_KEYS:
            raise ServerError(
                "unknown_parameter",
                f"Unknown parameter: 'session.{key}'.",
                param=f"session.{key}",
            )
    audio = raw.get("audio")
    if isinstance(audio, dict):
        for side in ("input", "output"):
            half = audio.get(side)
            if (
                isinstance(half, dict)
                and half.get("format") is not None
                and not isinstance(half["format"], dict)
            ):
                raise ServerError(
                    "invalid_type",
                    f"Invalid type for 'session.audio.{side}.format': expected an object such as "
                    "{'type': 'audio/pcm', 'rate': 24000}, but got "
                    f"{_json_type(half['format'])}.",
                    param=f"session.audio.{side}.format",
                )


def _check_values(raw: Mapping[str, Any]) -> dict[str, Any]:
    try:
        config = SessionConfig.from_mapping(raw)
    except ConfigurationError as exc:
        raise _config_error(str(exc)) from None
    update = config.to_wire()
    modalities = update.get("output_modalities")
    if modalities is not None and modalities not in (["audio"], ["text"]):
        raise ServerError(
            "invalid_value",
            f"Invalid value: {modalities!r}. Supported values are: ['audio'] and ['text'] "
            "(audio always comes with its transcript).",
            param="session.output_modalities",
        )
    voice = update.get("audio", {}).get("output", {}).get("voice")
    if isinstance(voice, str) and voice not in VOICES:
        raise ServerError(
            "invalid_value",
            f"Invalid value: {voice!r}. Supported values are: "
            + ", ".join(repr(v) for v in VOICES)
            + " (or a custom voice {'id': ...}).",
            param="session.audio.output.voice",
        )
    return update


def _check_state(
    current: Mapping[str, Any], update: Mapping[str, Any], *, assistant_audio_sent: bool
) -> None:
    model = update.get("model")
    if model is not None and model != current["model"]:
        raise ServerError(
            "invalid_value",
            f"Cannot change the session's model from {current['model']!r} to {model!r}; "
            "connect again with ?model=... instead.",
            param="session.model",
        )
    voice = update.get("audio", {}).get("output", {}).get("voice")
    if voice is not None and voice != current["audio"]["output"]["voice"] and assistant_audio_sent:
        raise ServerError(
            "cannot_update_voice",
            "Cannot update a conversation's voice if assistant audio is present.",
        )


def _merge(target: dict[str, Any], update: Mapping[str, Any], path: tuple[str, ...]) -> None:
    for key, value in update.items():
        here = (*path, key)
        if here in _MERGED_OBJECTS and isinstance(value, dict):
            _merge(target.setdefault(key, {}), value, here)
        elif key == "turn_detection" and isinstance(value, dict):
            old = target.get(key)
            base = old if isinstance(old, dict) and old.get("type") == value["type"] else None
            merged = dict(base) if base is not None else turn_detection_defaults(value["type"])
            merged.update(value)
            target[key] = merged
        else:
            target[key] = copy.deepcopy(value)


def _config_error(message: str) -> ServerError:
    """Map the protocol core's :class:`ConfigurationError` wording to a service error."""
    if match := _UNKNOWN_FIELD.match(message):
        param = f"session.{match.group(1)}"
        return ServerError("unknown_parameter", f"Unknown parameter: '{param}'.", param=param)
    if match := _BAD_TYPE.search(message):
        param = f"session.{match.group(1)}"
        return ServerError("invalid_type", f"Invalid type for '{param}': {message}", param=param)
    if match := _BAD_VALUE.match(message):
        param = f"session.{match.group(1)}"
        return ServerError("invalid_value", f"Invalid value for '{param}': {message}", param=param)
    return ServerError("invalid_value", message)


def _json_type(value: object) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    if value is None:
        return "null"
    if isinstance(value, list):
        return "an array"
    return names.get(type(value), type(value).__name__)


def output_format(session: Mapping[str, Any]) -> AudioFormat:
    """The session's output audio format as the protocol core's record."""
    fmt = session["audio"]["output"]["format"]
    return msgspec.convert(fmt, AudioFormat)


def input_format(session: Mapping[str, Any]) -> AudioFormat:
    """The session's input audio format as the protocol core's record."""
    fmt = session["audio"]["input"]["format"]
    return msgspec.convert(fmt, AudioFormat)
