"""JSON codec for Live: text frames to typed events and back, on the Realtime core's machinery.

The frame parsing, the receive-path events for bad and unknown frames
(:class:`~voxwire.protocol.server_events.ProtocolErrorEvent`,
:class:`~voxwire.protocol.server_events.UnknownServerEvent`) and the record of unknown fields
are :mod:`voxwire.protocol.codec`'s; this module adds the Live unions. Receiving never raises.
A frame becomes, in this order of preference:

1. the typed event (one ``Decoder.decode`` call; base64 audio decoded in the same pass), after
   the shared checks of :mod:`voxwire.protocol.limits` (text, UTF-8, size; nesting and number
   of values for events that hold free-form JSON);
2. :class:`UnknownServerEvent` for a ``type`` this SDK does not know, keeping the mapping;
3. :class:`ProtocolErrorEvent` naming what was wrong and where.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Union

import msgspec
from msgspec import Struct

from voxwire.live.client_events import (
    CLIENT_EVENT_TYPES,
    FORK_CLIENT_EVENT_TYPES,
    SIDEBAND_CLIENT_EVENT_TYPES,
    ForkSessionStart,
    LiveClientEvent,
    TransportDtmfSend,
)
from voxwire.live.server_events import (
    SERVER_EVENT_TYPES,
    LiveReceivedEvent,
    LiveServerEvent,
)
from voxwire.protocol.codec import (
    _holds_free_form,
    parse_object,
    remember_source,
    struct_unknown_fields,
)
from voxwire.protocol.limits import MAX_FRAME_BYTES, frame_problem, shape_problem
from voxwire.protocol.server_events import ProtocolErrorEvent, UnknownServerEvent

__all__ = [
    "decode_client_event",
    "decode_fork_client_event",
    "decode_server_event",
    "decode_sideband_client_event",
    "encode_event",
    "unknown_fields",
]


def _union(types: tuple[type, ...]) -> Any:
    # A runtime Union built from a tuple; msgspec reads it, type checkers see Any.
    return Union[types]  # noqa: UP007


_SERVER_UNION: Final = _union(tuple(SERVER_EVENT_TYPES.values()))
_CLIENT_UNION: Final = _union(tuple(CLIENT_EVENT_TYPES.values()))
_FORK_UNION: Final = _union(tuple(FORK_CLIENT_EVENT_TYPES.values()))
# Event types that can hold free-form JSON (a session's tools, a nested Responses event): their
# frames are checked against the shared bounds on nesting and size (voxwire.protocol.limits).
_FREE_FORM: Final = frozenset(
    cls
    for cls in (*SERVER_EVENT_TYPES.values(), *CLIENT_EVENT_TYPES.values())
    if _holds_free_form(cls)
)
_server_decoder: Final = msgspec.json.Decoder(_SERVER_UNION)
_client_decoder: Final = msgspec.json.Decoder(_CLIENT_UNION)
_fork_decoder: Final = msgspec.json.Decoder(_FORK_UNION)
_sideband_decoder: Final = msgspec.json.Decoder(_union(tuple(SIDEBAND_CLIENT_EVENT_TYPES.values())))
_encoder: Final = msgspec.json.Encoder()


def decode_server_event(data: str | bytes) -> LiveReceivedEvent:
    """Decode one Live server frame. Never raises."""
    problem = _frame_problem(data)
    if problem is not None:
        return problem
    try:
        event: LiveServerEvent = _server_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeError) as exc:
        slow: LiveReceivedEvent = _decode_slowly(data, SERVER_EVENT_TYPES, exc, server=True)
        return slow
    kept: LiveReceivedEvent = _kept(event, data)
    return kept


def decode_client_event(data: str | bytes) -> LiveClientEvent | ProtocolErrorEvent:
    """Decode one Live client frame (for the server side). Never raises; an unknown ``type`` is
    a protocol error here, since a server must refuse what it does not know."""
    decoded: LiveClientEvent | ProtocolErrorEvent = _decode_client(
        data, _client_decoder, CLIENT_EVENT_TYPES
    )
    return decoded


def decode_fork_client_event(
    data: str | bytes,
) -> LiveClientEvent | ForkSessionStart | ProtocolErrorEvent:
    """:func:`decode_client_event` for a fork connection, whose ``session.start`` carries
    overrides of a stored session (:class:`~voxwire.live.client_events.ForkSessionStart`)."""
    decoded: LiveClientEvent | ForkSessionStart | ProtocolErrorEvent = _decode_client(
        data, _fork_decoder, FORK_CLIENT_EVENT_TYPES
    )
    return decoded


def decode_sideband_client_event(
    data: str | bytes,
) -> LiveClientEvent | TransportDtmfSend | ProtocolErrorEvent:
    """:func:`decode_client_event` for a sideband (``/v1/live/sessions/{id}/attach``): no
    ``session.start`` nor input audio (the session has started; its audio is the primary
    transport's), and ``transport.dtmf.send``. Never raises."""
    decoded: LiveClientEvent | TransportDtmfSend | ProtocolErrorEvent = _decode_client(
        data, _sideband_decoder, SIDEBAND_CLIENT_EVENT_TYPES
    )
    return decoded


def _decode_client(
    data: str | bytes, decoder: msgspec.json.Decoder[Any], types: Mapping[str, type[Struct]]
) -> Any:
    problem = _frame_problem(data)
    if problem is not None:
        return problem
    try:
        event = decoder.decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeError) as exc:
        return _decode_slowly(data, types, exc, server=False)
    return _kept(event, data)


def unknown_fields(
    event: LiveReceivedEvent | LiveClientEvent | ForkSessionStart | TransportDtmfSend,
) -> dict[str, Any]:
    """The fields of a decoded event that this SDK does not model, by JSON path (for example
    ``{"session.audio.output.speed": 1.1}``); every field but ``type``/``event_id`` of an
    :class:`UnknownServerEvent`; nothing for a protocol error or an event built here."""
    if isinstance(event, UnknownServerEvent):
        return {key: value for key, value in event.raw.items() if key not in ("type", "event_id")}
    if isinstance(event, ProtocolErrorEvent):
        return {}
    return struct_unknown_fields(event)


def encode_event(
    event: LiveClientEvent | ForkSessionStart | TransportDtmfSend | LiveServerEvent,
) -> str:
    """The JSON text frame of a client or server event (audio bytes become base64)."""
    return _encoder.encode(event).decode()


def _frame_problem(data: str | bytes) -> ProtocolErrorEvent | None:
    """What makes a frame unreadable before parsing — not text, not UTF-8 (a typed decoder
    skips unmodelled fields unread, so the whole frame is checked), over the size bound — by
    the shared rules (:func:`voxwire.protocol.limits.frame_problem`). A short ``str`` (the
    usual text frame, e.g. every audio delta) needs no check."""
    if type(data) is str and len(data) <= MAX_FRAME_BYTES:
        return None
    problem = frame_problem(data)
    return ProtocolErrorEvent(message=problem) if problem is not None else None


def _kept(event: Any, data: str | bytes) -> Any:
    """``event`` holding its frame, or a protocol error if it carries free-form JSON nested or
    sized over the shared bounds (the audio and transcript deltas skip the check)."""
    if type(event) in _FREE_FORM:
        problem = shape_problem(data)
        if problem is not None:
            kind = str(event.__struct_config__.tag)
            return ProtocolErrorEvent(message=f"{kind} {problem}", event_type=kind)
    remember_source(event, data)
    return event


def _decode_slowly(
    data: str | bytes, types: Mapping[str, type[Struct]], failure: Exception, *, server: bool
) -> Any:
    """Why the typed decoder refused ``data``: an unknown event (server side) or a protocol
    error naming the problem (``failure`` says what was wrong with a known type)."""
    raw = parse_object(data)
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
