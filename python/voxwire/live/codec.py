"""JSON codec for Live: text frames to typed events and back, on the Realtime core's machinery.

The frame parsing, the receive-path events for bad and unknown frames
(:class:`~voxwire.protocol.server_events.ProtocolErrorEvent`,
:class:`~voxwire.protocol.server_events.UnknownServerEvent`) and the record of unknown fields
are :mod:`voxwire.protocol.codec`'s; this module adds the Live unions. Receiving never raises.
A frame becomes, in this order of preference:

1. the typed event (one ``Decoder.decode`` call; base64 audio decoded in the same pass);
2. :class:`UnknownServerEvent` for a ``type`` this SDK does not know, keeping the mapping;
3. :class:`ProtocolErrorEvent` naming what was wrong and where.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Union

import msgspec
from msgspec import Struct

from voxwire.live.client_events import CLIENT_EVENT_TYPES, LiveClientEvent
from voxwire.live.server_events import (
    SERVER_EVENT_TYPES,
    LiveReceivedEvent,
    LiveServerEvent,
)
from voxwire.protocol.codec import parse_object, remember_source, struct_unknown_fields
from voxwire.protocol.server_events import ProtocolErrorEvent, UnknownServerEvent

__all__ = [
    "decode_client_event",
    "decode_server_event",
    "encode_event",
    "unknown_fields",
]


def _union(types: tuple[type, ...]) -> Any:
    # A runtime Union built from a tuple; msgspec reads it, type checkers see Any.
    return Union[types]  # noqa: UP007


_SERVER_UNION: Final = _union(tuple(SERVER_EVENT_TYPES.values()))
_CLIENT_UNION: Final = _union(tuple(CLIENT_EVENT_TYPES.values()))
_server_decoder: Final = msgspec.json.Decoder(_SERVER_UNION)
_client_decoder: Final = msgspec.json.Decoder(_CLIENT_UNION)
_encoder: Final = msgspec.json.Encoder()


def decode_server_event(data: str | bytes) -> LiveReceivedEvent:
    """Decode one Live server frame. Never raises."""
    if type(data) is bytes and not data.isascii() and not _is_utf8(data):
        return _NOT_UTF8
    try:
        event: LiveServerEvent = _server_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeError) as exc:
        slow: LiveReceivedEvent = _decode_slowly(data, SERVER_EVENT_TYPES, exc, server=True)
        return slow
    remember_source(event, data)
    return event


def decode_client_event(data: str | bytes) -> LiveClientEvent | ProtocolErrorEvent:
    """Decode one Live client frame (for the server side). Never raises; an unknown ``type`` is
    a protocol error here, since a server must refuse what it does not know."""
    if type(data) is bytes and not data.isascii() and not _is_utf8(data):
        return _NOT_UTF8
    try:
        event: LiveClientEvent = _client_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeError) as exc:
        slow: LiveClientEvent | ProtocolErrorEvent = _decode_slowly(
            data, CLIENT_EVENT_TYPES, exc, server=False
        )
        return slow
    remember_source(event, data)
    return event


def unknown_fields(event: LiveReceivedEvent | LiveClientEvent) -> dict[str, Any]:
    """The fields of a decoded event that this SDK does not model, by JSON path (for example
    ``{"session.audio.output.speed": 1.1}``); every field but ``type``/``event_id`` of an
    :class:`UnknownServerEvent`; nothing for a protocol error or an event built here."""
    if isinstance(event, UnknownServerEvent):
        return {key: value for key, value in event.raw.items() if key not in ("type", "event_id")}
    if isinstance(event, ProtocolErrorEvent):
        return {}
    return struct_unknown_fields(event)


def encode_event(event: LiveClientEvent | LiveServerEvent) -> str:
    """The JSON text frame of a client or server event (audio bytes become base64)."""
    return _encoder.encode(event).decode()


# A typed decoder skips the fields it does not model without reading them, so a binary frame
# could pass as an event; the whole frame is checked (ASCII frames, e.g. audio, skip the check).
_NOT_UTF8: Final = ProtocolErrorEvent(
    message="frame is not UTF-8 text (a binary frame?): Live events are JSON text frames"
)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decode_slowly(
    data: str | bytes, types: Mapping[str, type[Struct]], failure: Exception, *, server: bool
) -> Any:
    """Why the typed decoder refused ``data``: an unknown event (server side) or a protocol
    error naming the problem (``failure`` says what was wrong with a known type)."""
    try:
        raw = parse_object(data)
    except (RecursionError, UnicodeError) as exc:
        # The shared parser's hardening (voxwire.protocol.limits) will answer these itself.
        why = "nests too deeply" if isinstance(exc, RecursionError) else "is not Unicode text"
        return ProtocolErrorEvent(message=f"frame {why} to be read as a Live event")
    if isinstance(raw, ProtocolErrorEvent):
        return raw
    kind = raw.get("type")
    event_id = raw.get("event_id") if isinstance(raw.get("event_id"), str) else None
    if not isinstance(kind, str):
        return ProtocolErrorEvent(
            message=f"event has no string 'type' (got {type(kind).__name__})",
            event_id=event_id,
            raw=raw,
        )
    if kind not in types:
        if server:
            return UnknownServerEvent(type=kind, raw=raw, event_id=event_id)
        return ProtocolErrorEvent(
            message=f"unknown Live client event type {kind[:64]!r}: expected one of "
            + ", ".join(sorted(types)),
            event_type=kind,
            event_id=event_id,
            raw=raw,
        )
    reason = str(failure) if isinstance(failure, msgspec.DecodeError) else repr(failure)
    return ProtocolErrorEvent(
        message=f"{kind} event is invalid: {reason}", event_type=kind, event_id=event_id, raw=raw
    )
