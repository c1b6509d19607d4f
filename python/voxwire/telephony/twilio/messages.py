"""Twilio Media Streams messages: what Twilio sends (typed, decoded without raising) and what a
bidirectional stream sends back (encoded).

Written from Twilio's "Media Streams - WebSocket Messages" page
(https://www.twilio.com/docs/voice/media-streams/websocket-messages), field by field:

* ``connected``: ``event``, ``protocol`` (``"Call"``), ``version`` — the first message.
* ``start``: ``sequenceNumber``, ``streamSid``, ``start.streamSid``, ``start.accountSid``,
  ``start.callSid``, ``start.tracks`` (``inbound`` / ``outbound``), ``start.customParameters``
  (the ``<Parameter>`` nouns of ``<Stream>``), ``start.mediaFormat.encoding``
  (always ``audio/x-mulaw``), ``.sampleRate`` (always 8000), ``.channels`` (always 1).
* ``media``: ``sequenceNumber``, ``streamSid``, ``media.track``, ``media.chunk`` (from 1),
  ``media.timestamp`` (ms from the start of the stream), ``media.payload`` (base64 µ-law).
* ``dtmf`` (bidirectional streams only): ``streamSid``, ``sequenceNumber``, ``dtmf.track``
  (always ``inbound_track``), ``dtmf.digit``.
* ``mark`` (bidirectional only): ``streamSid``, ``sequenceNumber``, ``mark.name`` — sent back
  when the audio sent before the mark has played, and for every pending mark when a ``clear``
  empties the buffer ("Send a Clear Message": "This empties all buffered audio and causes any
  mark messages to be sent back").
* ``stop``: ``sequenceNumber``, ``streamSid``, ``stop.accountSid``, ``stop.callSid``.

Sent back ("Send WebSocket Messages to Twilio"): ``media`` (``event``, ``streamSid``,
``media.payload``: raw ``mulaw/8000`` in base64, no file header), ``mark`` (``event``,
``streamSid``, ``mark.name``), ``clear`` (``event``, ``streamSid``).

Sequence numbers and chunk numbers are strings in Twilio's examples; numbers are accepted too.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Final, TypeAlias

import msgspec

__all__ = [
    "CallerAudio",
    "Connected",
    "Dtmf",
    "MarkEcho",
    "StreamError",
    "StreamEvent",
    "StreamStarted",
    "StreamStopped",
    "decode",
    "encode_clear",
    "encode_mark",
    "encode_media",
    "stream_sid_json",
]

# -- what Twilio sends, as decoded ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Connected:
    """``connected``: the websocket is open; ``protocol`` and ``version`` describe the stream."""

    protocol: str
    version: str


@dataclass(frozen=True, slots=True)
class StreamStarted:
    """``start``: the stream's identity and format (sent once, after ``connected``)."""

    stream_sid: str
    call_sid: str
    account_sid: str
    tracks: tuple[str, ...]
    custom_parameters: dict[str, str] = field(default_factory=dict)
    encoding: str = "audio/x-mulaw"
    sample_rate_hz: int = 8_000
    channels: int = 1


@dataclass(frozen=True, slots=True)
class CallerAudio:
    """``media`` of the inbound track: µ-law 8 kHz bytes of the caller (20 ms per message)."""

    payload: bytes
    chunk: int | None
    timestamp_ms: int | None


@dataclass(frozen=True, slots=True)
class Dtmf:
    """``dtmf``: the caller pressed ``digit``."""

    digit: str


@dataclass(frozen=True, slots=True)
class MarkEcho:
    """``mark``: Twilio sent back the mark called ``name`` (played, or dropped by ``clear``)."""

    name: str


@dataclass(frozen=True, slots=True)
class StreamStopped:
    """``stop``: the stream ended (the call hung up, or the ``<Stream>`` was stopped)."""

    call_sid: str


@dataclass(frozen=True, slots=True)
class StreamError:
    """A message that could not be used (malformed, out of place); it was ignored."""

    message: str


StreamEvent: TypeAlias = (
    Connected | StreamStarted | CallerAudio | Dtmf | MarkEcho | StreamStopped | StreamError
)


# -- wire shapes (msgspec), private -----------------------------------------------------------


class _Format(msgspec.Struct):
    encoding: str = "audio/x-mulaw"
    sampleRate: int = 8_000
    channels: int = 1


class _StartBody(msgspec.Struct):
    streamSid: str
    callSid: str = ""
    accountSid: str = ""
    tracks: list[str] = msgspec.field(default_factory=lambda: ["inbound"])
    customParameters: dict[str, str] = msgspec.field(default_factory=dict)
    mediaFormat: _Format = msgspec.field(default_factory=_Format)


class _MediaBody(msgspec.Struct):
    payload: str
    track: str = "inbound"
    chunk: str | int | None = None
    timestamp: str | int | None = None


class _Name(msgspec.Struct):
    name: str


class _Digit(msgspec.Struct):
    digit: str
    track: str = "inbound_track"


class _StopBody(msgspec.Struct):
    callSid: str = ""
    accountSid: str = ""


class _Base(msgspec.Struct, tag_field="event"):
    streamSid: str | None = None
    sequenceNumber: str | int | None = None


class _ConnectedMsg(_Base, tag="connected"):
    protocol: str = ""
    version: str = ""


class _StartMsg(_Base, tag="start"):
    start: _StartBody | None = None


class _MediaMsg(_Base, tag="media"):
    media: _MediaBody | None = None


class _DtmfMsg(_Base, tag="dtmf"):
    dtmf: _Digit | None = None


class _MarkMsg(_Base, tag="mark"):
    mark: _Name | None = None


class _StopMsg(_Base, tag="stop"):
    stop: _StopBody = msgspec.field(default_factory=_StopBody)


_Message: TypeAlias = _ConnectedMsg | _StartMsg | _MediaMsg | _DtmfMsg | _MarkMsg | _StopMsg
_DECODER: Final = msgspec.json.Decoder(_Message)
_EVENT_ONLY: Final = msgspec.json.Decoder(dict[str, object])

MAX_MESSAGE_CHARS: Final = 256 * 1024
"""Largest text message read (Twilio's are under 1 KiB; a ``start`` with custom parameters a
few KiB)."""

MAX_DIGIT_CHARS: Final = 8


def _number(value: str | int | None) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit() and len(value) <= 18:
        return int(value)
    return None


def decode(text: str | bytes) -> tuple[StreamEvent, str | None]:
    """One websocket message from Twilio -> ``(event, streamSid)``. Never raises: whatever is
    wrong (not JSON, wrong types, an unknown event, bad base64, too big) is a
    :class:`StreamError` saying what."""
    if len(text) > MAX_MESSAGE_CHARS:
        return StreamError(
            f"a message of {len(text)} characters (at most {MAX_MESSAGE_CHARS})"
        ), None
    try:
        message = _DECODER.decode(text)
    except (msgspec.MsgspecError, ValueError, RecursionError) as exc:
        return StreamError(_why(text, exc)), None
    return _event(message), message.streamSid


def _why(text: str | bytes, exc: Exception) -> str:
    """Name the event if the message had one (an unknown event is not malformed JSON)."""
    try:
        raw = _EVENT_ONLY.decode(text)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return f"not a JSON object: {str(exc)[:200]}"
    event = raw.get("event")
    if isinstance(event, str) and event not in _EVENTS:
        return f"unknown event {event[:40]!r} ignored"
    return f"malformed {str(event)[:40]!r} message: {str(exc)[:200]}"


_EVENTS: Final = frozenset({"connected", "start", "media", "dtmf", "mark", "stop"})


def _event(message: _Message) -> StreamEvent:
    if isinstance(message, _MediaMsg):
        return _media(message)
    if isinstance(message, _MarkMsg):
        return MarkEcho(message.mark.name) if message.mark else StreamError("a mark without name")
    if isinstance(message, _StartMsg):
        return _start(message)
    if isinstance(message, _DtmfMsg):
        if message.dtmf is None or not 0 < len(message.dtmf.digit) <= MAX_DIGIT_CHARS:
            return StreamError("a dtmf message without a digit")
        return Dtmf(message.dtmf.digit)
    if isinstance(message, _StopMsg):
        return StreamStopped(message.stop.callSid)
    return Connected(message.protocol, message.version)


def _media(message: _MediaMsg) -> StreamEvent:
    body = message.media
    if body is None:
        return StreamError("a media message without media")
    try:
        payload = base64.b64decode(body.payload, validate=True)
    except (binascii.Error, ValueError):
        return StreamError("a media payload that is not base64")
    if body.track not in ("inbound", "inbound_track"):
        return StreamError(f"media of the {body.track[:40]!r} track ignored")
    return CallerAudio(payload, _number(body.chunk), _number(body.timestamp))


def _start(message: _StartMsg) -> StreamEvent:
    body = message.start
    if body is None or not body.streamSid:
        return StreamError("a start message without start.streamSid")
    fmt = body.mediaFormat
    return StreamStarted(
        stream_sid=body.streamSid,
        call_sid=body.callSid,
        account_sid=body.accountSid,
        tracks=tuple(body.tracks),
        custom_parameters=dict(body.customParameters),
        encoding=fmt.encoding,
        sample_rate_hz=fmt.sampleRate,
        channels=fmt.channels,
    )


# -- what a bidirectional stream sends back ----------------------------------------------------


def encode_media(stream_sid_json: str, ulaw: bytes) -> str:
    """A ``media`` message playing ``ulaw`` (µ-law 8 kHz, no header). ``stream_sid_json``: the
    stream's SID as a JSON string (quoted), encoded once per stream."""
    payload = base64.b64encode(ulaw).decode("ascii")
    return f'{{"event":"media","streamSid":{stream_sid_json},"media":{{"payload":"{payload}"}}}}'


def encode_mark(stream_sid_json: str, name: str) -> str:
    """A ``mark`` message: Twilio sends ``name`` back once the audio before it has played."""
    return (
        f'{{"event":"mark","streamSid":{stream_sid_json},'
        f'"mark":{{"name":{msgspec.json.encode(name).decode()}}}}}'
    )


def encode_clear(stream_sid_json: str) -> str:
    """A ``clear`` message: Twilio drops the audio it buffered and sends back pending marks."""
    return f'{{"event":"clear","streamSid":{stream_sid_json}}}'


def stream_sid_json(stream_sid: str) -> str:
    """The SID as it goes into the messages above (JSON-quoted)."""
    return msgspec.json.encode(stream_sid).decode()
