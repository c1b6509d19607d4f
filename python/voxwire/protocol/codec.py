"""JSON codec: text frames to typed events and back, with msgspec.

Why msgspec: it decodes JSON straight into typed, immutable structs in one C pass — tagged
unions dispatch on ``type`` by hash lookup, base64 audio is decoded to ``bytes`` in the same
pass, unknown fields are skipped without building dicts — and it is typed for ``mypy --strict``,
small, dependency-free and actively maintained. ``benches/test_bench_protocol.py`` measures it
against validating the same JSON with the official pydantic types.

Receiving never raises. A frame becomes, in this order of preference:

1. the typed event (fast path: one ``Decoder.decode`` call);
2. the typed event after repairing a known deviation (``"audio"`` / ``"text"`` content in
   assistant items, which the GA docs examples and beta servers use for ``output_audio`` /
   ``output_text``);
3. :class:`~voxwire.protocol.server_events.UnknownServerEvent` for a ``type`` this SDK does not
   know, keeping the raw mapping;
4. :class:`~voxwire.protocol.server_events.ProtocolErrorEvent` naming what was wrong and where:
   bad JSON, text that is not UTF-8 (a binary frame), a frame over a bound of
   :mod:`~voxwire.protocol.limits` (size, nesting depth, number of values), a missing or
   mistyped field.

Session objects are decoded as mappings first and normalised by
:meth:`SessionConfig.from_wire <voxwire.protocol.config.SessionConfig.from_wire>`, which keeps the
fields the SDK does not model (``object``, ``id``, ``expires_at`` …).

Unknown fields are kept, as the official (pydantic, ``extra="allow"``) types keep them, but
without paying for them on every frame: a typed event holds a reference to the frame it was
decoded from (one dictionary store, no copy), and :func:`unknown_fields` / :func:`raw_fields`
read it again only when asked. Events this process builds itself have no frame.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final, Union, get_args

import msgspec
import msgspec.inspect as mi
from msgspec import Struct

from voxwire.exceptions import ConfigurationError
from voxwire.protocol._nulls import drop_absent_nulls
from voxwire.protocol.client_events import CLIENT_EVENT_TYPES, ClientEvent, SessionUpdate
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.items import Item
from voxwire.protocol.limits import MAX_FRAME_BYTES, frame_problem, shape_problem
from voxwire.protocol.objects import Response
from voxwire.protocol.server_events import (
    SERVER_EVENT_TYPES,
    ProtocolErrorEvent,
    ReceivedEvent,
    ServerEvent,
    SessionCreated,
    SessionUpdated,
    UnknownServerEvent,
)

__all__ = [
    "decode_client_event",
    "decode_server_event",
    "encode_event",
    "parse_object",
    "raw_fields",
    "salvage_response",
    "server_event_from_mapping",
    "short_repr",
    "unknown_fields",
]

#: Session fields only a server sets; a ``session.update`` must not echo them back (the GA
#: ``session.update`` schema has no such fields and the server rejects unknown parameters).
SERVER_ONLY_SESSION_FIELDS: Final = frozenset({"object", "id", "expires_at", "client_secret"})

# Assistant content part types as the GA docs examples and beta servers spell them in items.
_CONTENT_TYPE_REPAIRS: Final = {"audio": "output_audio", "text": "output_text"}


class _SessionCreatedWire(Struct, tag_field="type", tag="session.created", kw_only=True):
    event_id: str
    session: dict[str, Any]


class _SessionUpdatedWire(Struct, tag_field="type", tag="session.updated", kw_only=True):
    event_id: str
    session: dict[str, Any]


class _SessionUpdateWire(
    Struct, tag_field="type", tag="session.update", kw_only=True, omit_defaults=True
):
    session: dict[str, Any]
    event_id: str | None = None


def _union(types: tuple[type, ...]) -> Any:
    # A runtime Union built from a tuple; msgspec reads it, type checkers see Any.
    return Union[types]  # noqa: UP007


_SESSION_WIRE_TYPES: Final = frozenset({_SessionCreatedWire, _SessionUpdatedWire})

# The decode unions: the public session events are replaced by their wire forms.
_SERVER_UNION: Final = _union(
    (
        *(cls for cls in get_args(ServerEvent) if cls not in (SessionCreated, SessionUpdated)),
        _SessionCreatedWire,
        _SessionUpdatedWire,
    )
)
_CLIENT_UNION: Final = _union(
    (*(cls for cls in get_args(ClientEvent) if cls is not SessionUpdate), _SessionUpdateWire)
)


def _holds_free_form(kind: Any) -> bool:
    """The decoded type can hold JSON of any shape (an ``Any`` somewhere inside)."""
    seen: set[int] = set()
    pending: list[mi.Type] = [mi.type_info(kind)]
    while pending:
        t = pending.pop()
        seen.add(id(t))
        if isinstance(t, mi.AnyType):
            return True
        children: list[mi.Type] = []
        if isinstance(t, mi.StructType):
            children = [field.type for field in t.fields]
        elif isinstance(t, mi.UnionType):
            children = list(t.types)
        elif isinstance(t, mi.ListType):
            children = [t.item_type]
        elif isinstance(t, mi.DictType):
            children = [t.value_type]
        pending.extend(child for child in children if id(child) not in seen)
    return False


#: Decoded event types that can hold free-form JSON: checked against the shape bounds.
_FREE_FORM_TYPES: Final = frozenset(cls for cls in get_args(_SERVER_UNION) if _holds_free_form(cls))

_CLIENT_FREE_FORM_TYPES: Final = frozenset(
    cls for cls in get_args(_CLIENT_UNION) if _holds_free_form(cls)
)

_server_decoder: Final = msgspec.json.Decoder(_SERVER_UNION)
_client_decoder: Final = msgspec.json.Decoder(_CLIENT_UNION)
_any_decoder: Final = msgspec.json.Decoder()
_encoder: Final = msgspec.json.Encoder()

_EXCERPT_CHARS: Final = 80

# Where a typed event keeps the frame (text, bytes or mapping) it was decoded from.
_SOURCE: Final = "_voxwire_source"


# --- receiving ------------------------------------------------------------------------------------


def decode_server_event(data: str | bytes) -> ReceivedEvent:
    """Decode one GA server frame. Never raises (see the module docstring for what comes out)."""
    if type(data) is not str or len(data) > MAX_FRAME_BYTES:  # a text frame skips the checks
        checked = _checked(data)
        if isinstance(checked, ProtocolErrorEvent):
            return checked
        data = checked
    try:
        event = _server_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeError):
        return _decode_slowly(data)
    # Set lookups on the exact type: this runs for every audio delta, which skip both.
    if type(event) in _FREE_FORM_TYPES:
        problem = shape_problem(data)
        if problem is not None:
            return _over_bound(problem, event)
        if type(event) in _SESSION_WIRE_TYPES:
            event = _publish_session(event)
            if isinstance(event, ProtocolErrorEvent):
                return event
    event.__dict__[_SOURCE] = data
    result: ServerEvent = event
    return result


def server_event_from_mapping(raw: Mapping[str, Any]) -> ReceivedEvent:
    """Type a server event that is already a mapping (used for beta frames). Never raises."""
    kind = raw.get("type")
    if not isinstance(kind, str):
        return ProtocolErrorEvent(
            message=f"event has no string 'type' (got {short_repr(kind)})", raw=dict(raw)
        )
    if kind not in SERVER_EVENT_TYPES:
        return UnknownServerEvent(type=kind, raw=dict(raw), event_id=_event_id(raw))
    try:
        event = msgspec.convert(raw, _SERVER_UNION)
    except msgspec.ValidationError as exc:
        repaired = _repaired(raw)
        if repaired is None:
            return _invalid(kind, raw, exc)
        try:
            event = msgspec.convert(repaired, _SERVER_UNION)
        except msgspec.ValidationError as repaired_exc:
            # Report what is still wrong once the known deviation is out of the way.
            return _invalid(kind, raw, repaired_exc)
    if type(event) in _SESSION_WIRE_TYPES:
        event = _publish_session(event)
        if isinstance(event, ProtocolErrorEvent):
            return event
    event.__dict__[_SOURCE] = raw
    result: ServerEvent = event
    return result


def raw_fields(event: ReceivedEvent) -> dict[str, Any] | None:
    """The whole mapping an event was decoded from (a fresh copy each call), including the
    fields this SDK does not model; ``None`` for an event built in this process."""
    if isinstance(event, UnknownServerEvent):
        return copy.deepcopy(event.raw)
    if isinstance(event, ProtocolErrorEvent):
        return copy.deepcopy(event.raw) if event.raw is not None else None
    source = event.__dict__.get(_SOURCE)
    if source is None:
        return None
    if isinstance(source, (str, bytes)):
        raw = parse_object(source)
        # The frame decoded once already, so it is an object; the check keeps mypy honest.
        return raw if not isinstance(raw, ProtocolErrorEvent) else None
    return copy.deepcopy(dict(source))


def unknown_fields(event: ReceivedEvent) -> dict[str, Any]:
    """The fields of a received event that this SDK does not model, by JSON path.

    For example ``{"response.output[0].new_flag": True}`` for a ``response.done`` whose first
    output item carries a field added to the protocol after this release. Empty when nothing
    was unknown (or the event was built in this process). A session object's unmodelled fields
    are listed too (they also stay in :attr:`SessionConfig.extra`), except the ones every
    server sends and the official session type models (``object``, ``id``, ``expires_at``,
    ``client_secret``). For an :class:`UnknownServerEvent` every field but ``type`` and
    ``event_id`` is unknown; a :class:`ProtocolErrorEvent` has none (its ``raw`` holds all).
    """
    raw = raw_fields(event)
    if raw is None or isinstance(event, ProtocolErrorEvent):
        return {}
    if isinstance(event, UnknownServerEvent):
        return {key: value for key, value in raw.items() if key not in ("type", "event_id")}
    found: dict[str, Any] = {}
    _collect_unknown(event, raw, "", found)
    return found


def _collect_unknown(value: object, raw: object, path: str, found: dict[str, Any]) -> None:
    if isinstance(value, SessionConfig):
        for key, extra in value.extra.items():
            if key not in SERVER_ONLY_SESSION_FIELDS:
                found[f"{path}.{key}"] = extra
    elif isinstance(value, Struct) and isinstance(raw, dict):
        attributes = dict(zip(value.__struct_encode_fields__, value.__struct_fields__, strict=True))
        tag_field = value.__struct_config__.tag_field
        for key, child in raw.items():
            where = f"{path}.{key}" if path else key
            attribute = attributes.get(key)
            if attribute is not None:
                _collect_unknown(getattr(value, attribute), child, where, found)
            elif key != tag_field:
                found[where] = child
    elif isinstance(value, list) and isinstance(raw, list):
        for index, (element, child) in enumerate(zip(value, raw, strict=False)):
            _collect_unknown(element, child, f"{path}[{index}]", found)


def salvage_response(raw: Mapping[str, Any]) -> Response | None:
    """What can be read of a response object that failed validation as a whole: each field
    converted on its own (and each output item), the unreadable ones left unset. ``None``
    without a string ``id``. Used so a damaged ``response.done`` still ends its response
    with the status and usage it reports."""
    response_id = raw.get("id")
    if not isinstance(response_id, str):
        return None
    readable: dict[str, Any] = {}
    for name in Response.__struct_fields__:
        if name not in raw:
            continue
        if name == "output" and isinstance(raw[name], list):
            readable[name] = [
                item for item in (_convert_or_none(x, Item) for x in raw[name]) if item is not None
            ]
            continue
        try:
            msgspec.convert({name: raw[name]}, Response)
        except msgspec.ValidationError:
            continue
        readable[name] = raw[name]
    return msgspec.convert(readable, Response)


def _convert_or_none(raw: object, kind: Any) -> Any:
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError:
        return None


def decode_client_event(data: str | bytes) -> ClientEvent | ProtocolErrorEvent:
    """Decode one client frame (for the server side). Never raises; the bounds of
    :mod:`~voxwire.protocol.limits` apply as on the client side.

    A ``null`` in an optional field without a null of its own counts as absent (``_nulls``):
    the fast path decodes the frame as it is, and only a frame that fails is looked at again.
    """
    checked = _checked(data)
    if isinstance(checked, ProtocolErrorEvent):
        return checked
    data = checked
    try:
        event = _client_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeError) as exc:
        raw = parse_object(data)
        if isinstance(raw, ProtocolErrorEvent):
            return raw
        kind = raw.get("type")
        if not isinstance(kind, str) or kind not in CLIENT_EVENT_TYPES:
            return ProtocolErrorEvent(
                message=f"unknown client event type {short_repr(kind)}: expected one of "
                + ", ".join(sorted(CLIENT_EVENT_TYPES)),
                event_type=kind if isinstance(kind, str) else None,
                event_id=_event_id(raw),
                raw=raw,
            )
        stripped = drop_absent_nulls(raw, _CLIENT_UNION)
        if stripped is raw:
            return _invalid(kind, raw, exc)
        try:
            event = _client_decoder.decode(_encoder.encode(stripped))
        except msgspec.DecodeError as again:
            return _invalid(kind, raw, again)
    if type(event) in _CLIENT_FREE_FORM_TYPES:
        # Free-form JSON (tool schemas in a session or a response) is bounded like the rest.
        problem = shape_problem(data)
        if problem is not None:
            return _over_bound(problem, event)
    if isinstance(event, _SessionUpdateWire):
        session = _session_or_error("session.update", event.event_id, event.session)
        if isinstance(session, ProtocolErrorEvent):
            return session
        return SessionUpdate(event_id=event.event_id, session=session)
    result: ClientEvent = event
    return result


def parse_object(data: str | bytes) -> dict[str, Any] | ProtocolErrorEvent:
    """The frame as a plain JSON object, or a protocol error saying why it is not one (not
    JSON, not UTF-8, over a bound of :mod:`~voxwire.protocol.limits`). Never raises."""
    checked = _checked(data)
    if isinstance(checked, ProtocolErrorEvent):
        return checked
    data = checked
    problem = shape_problem(data)
    if problem is not None:
        return ProtocolErrorEvent(message=problem)
    try:
        raw = _any_decoder.decode(data)
    except UnicodeError as exc:  # a str with a lone surrogate (bytes were checked above)
        where = getattr(exc, "start", "?")
        return ProtocolErrorEvent(
            message=f"frame is not Unicode text (character {where} is a lone surrogate)"
        )
    except (msgspec.DecodeError, RecursionError) as exc:
        return ProtocolErrorEvent(message=f"frame is not valid JSON ({exc}): {_excerpt(data)!r}")
    if not isinstance(raw, dict):
        return ProtocolErrorEvent(
            message=f"frame is JSON but not an object (got {type(raw).__name__}); "
            "every Realtime event is a JSON object with a 'type'"
        )
    return raw


def _checked(data: object) -> str | bytes | ProtocolErrorEvent:
    """The frame as ``str`` or ``bytes`` (a ``bytearray`` or ``memoryview`` is copied), or what
    makes it unreadable before parsing (:func:`~voxwire.protocol.limits.frame_problem`)."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    problem = frame_problem(data)
    if problem is not None:
        return ProtocolErrorEvent(message=problem)
    assert isinstance(data, (str, bytes))  # frame_problem refuses anything else
    return data


def short_repr(value: object) -> str:
    """``repr`` of a received value, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= _EXCERPT_CHARS else text[: _EXCERPT_CHARS - 3] + "..."


def _excerpt(data: str | bytes) -> str:
    head = data[: _EXCERPT_CHARS * 4]
    text = head if isinstance(head, str) else head.decode("utf-8", "replace")
    return text[:_EXCERPT_CHARS]


def _over_bound(problem: str, event: Struct) -> ProtocolErrorEvent:
    """A frame that decoded but holds free-form JSON over a bound. ``raw`` keeps only what is
    flat and typed (and a response's id and status, so a ``response.done`` still ends its
    response); nothing of the oversized part."""
    raw: dict[str, Any] = {}
    kind = event.__struct_config__.tag
    for name in ("event_id", "response_id", "item_id", "previous_item_id"):
        value = getattr(event, name, None)
        if isinstance(value, str):
            raw[name] = value
    raw["type"] = kind
    response = getattr(event, "response", None)
    if isinstance(response, Response):
        raw["response"] = msgspec.to_builtins(msgspec.structs.replace(response, output=[]))
    return ProtocolErrorEvent(
        message=f"{kind} {problem}",
        event_type=str(kind),
        event_id=raw.get("event_id"),
        raw=raw,
    )


def _decode_slowly(data: str | bytes) -> ReceivedEvent:
    raw = parse_object(data)
    if isinstance(raw, ProtocolErrorEvent):
        return raw
    return server_event_from_mapping(raw)


def _event_id(raw: Mapping[str, Any]) -> str | None:
    event_id = raw.get("event_id")
    return event_id if isinstance(event_id, str) else None


def _invalid(kind: str, raw: Mapping[str, Any], exc: Exception) -> ProtocolErrorEvent:
    return ProtocolErrorEvent(
        message=f"{kind} event is invalid: {exc}",
        event_type=kind,
        event_id=_event_id(raw),
        raw=dict(raw),
    )


def _session_or_error(
    kind: str, event_id: str | None, session: dict[str, Any]
) -> SessionConfig | ProtocolErrorEvent:
    try:
        return SessionConfig.from_wire(session)
    except ConfigurationError as exc:
        raw = {"type": kind, "event_id": event_id, "session": session}
        return _invalid(kind, raw, exc)


def _publish_session(
    wire: _SessionCreatedWire | _SessionUpdatedWire,
) -> SessionCreated | SessionUpdated | ProtocolErrorEvent:
    """The public session event, its session normalised into a :class:`SessionConfig`."""
    is_created = isinstance(wire, _SessionCreatedWire)
    session = _session_or_error(
        "session.created" if is_created else "session.updated", wire.event_id, wire.session
    )
    if isinstance(session, ProtocolErrorEvent):
        return session
    if is_created:
        return SessionCreated(event_id=wire.event_id, session=session)
    return SessionUpdated(event_id=wire.event_id, session=session)


def _repaired(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """A copy of ``raw`` with assistant content types repaired, or ``None`` if none needed it."""
    if not _parts_to_repair(raw):
        return None  # nothing copied: most invalid frames need no repair
    fixed = copy.deepcopy(dict(raw))
    for part in _parts_to_repair(fixed):
        part["type"] = _CONTENT_TYPE_REPAIRS[part["type"]]
    return fixed


def _parts_to_repair(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The content parts of assistant items spelled ``audio`` / ``text`` (see the module
    docstring), in ``item`` or ``response.output``."""
    items: list[Any] = [raw.get("item")]
    response = raw.get("response")
    if isinstance(response, dict) and isinstance(response.get("output"), list):
        items.extend(response["output"])
    parts: list[dict[str, Any]] = []
    for item in items:
        if not (isinstance(item, dict) and item.get("role") == "assistant"):
            continue
        content = item.get("content")
        for part in content if isinstance(content, list) else ():
            kind = part.get("type") if isinstance(part, dict) else None
            if isinstance(kind, str) and kind in _CONTENT_TYPE_REPAIRS:
                parts.append(part)
    return parts


# --- sending --------------------------------------------------------------------------------------


def encode_event(event: ClientEvent | ServerEvent) -> str:
    """The JSON text frame of a client or server event (audio bytes become base64)."""
    wire: Struct = event
    if isinstance(event, SessionUpdate):
        session = {
            key: value
            for key, value in event.session.to_wire().items()
            if key not in SERVER_ONLY_SESSION_FIELDS
        }
        wire = _SessionUpdateWire(event_id=event.event_id, session=session)
    elif isinstance(event, SessionCreated):
        wire = _SessionCreatedWire(event_id=event.event_id, session=event.session.to_wire())
    elif isinstance(event, SessionUpdated):
        wire = _SessionUpdatedWire(event_id=event.event_id, session=event.session.to_wire())
    return _encoder.encode(wire).decode()
