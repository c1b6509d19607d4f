"""Optional understanding of servers that still speak the beta protocol names.

A beta server (``OpenAI-Beta: realtime=v1``, and servers modelled on it) differs from GA in
names, not in meaning. Frames are mapped to the GA events, so everything above this module
sees one protocol:

==========================================  =================================================
beta                                        GA
==========================================  =================================================
``response.audio.delta`` / ``.done``        ``response.output_audio.delta`` / ``.done``
``response.audio_transcript.*``             ``response.output_audio_transcript.*``
``response.text.*``                         ``response.output_text.*``
``conversation.item.created``               ``conversation.item.added``, then
                                            ``conversation.item.done`` if the item is complete
item content ``audio`` / ``text``           ``output_audio`` / ``output_text``
response ``modalities``, ``voice``,         ``output_modalities``, ``audio.output.voice``,
``output_audio_format``                     ``audio.output.format``
flat session fields                         nested GA session (see ``_normalize``)
==========================================  =================================================

Content parts in ``response.content_part.*`` are ``audio`` / ``text`` in both protocols.

Which protocol a server speaks can be told from its first frames (:func:`beta_dialect`): the
session object of ``session.created`` is nested with a ``type`` in GA and flat in beta, a
response object has ``output_modalities`` in GA and ``modalities`` in beta, and some event names
exist only in beta. ``RealtimeProtocol(beta="auto")`` (the default) decides on the first such
frame and then stays on the chosen decoder.

Sending: a beta server is configured in its own shape. Once the core knows it talks to one
(``beta=True``, or ``"auto"`` after a telling frame), client events go out as beta has them
(:func:`beta_client_frame`): ``session.update`` flat — ``modalities``, ``voice``, ``speed``,
``input_audio_format``, ``output_audio_format``, ``input_audio_transcription``,
``turn_detection``, ``input_audio_noise_reduction``, ``max_response_output_tokens``, the table
above read right to left, with ``["audio"]`` sent as ``["text", "audio"]``, formats by their
beta names (``pcm16``, ``g711_ulaw``, ``g711_alaw``) and GA's session ``type`` left out;
``response.create``'s output settings the same way; an item's ``output_text``/``output_audio``
content as ``text``/``audio``. Until the core knows, it sends GA.

GA's ``conversation.item.done`` arrives when an item is final. A beta server announced an item
once; a completed one (a committed user turn, a created message) is therefore also announced as
done, while an in-progress assistant item is completed later by ``response.output_item.done``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from voxwire.protocol._normalize import legacy_format
from voxwire.protocol.codec import parse_object, server_event_from_mapping
from voxwire.protocol.server_events import (
    ConversationItemAdded,
    ConversationItemDone,
    ProtocolErrorEvent,
    ReceivedEvent,
)

__all__ = [
    "BETA_EVENT_TYPES",
    "BETA_ONLY_TYPES",
    "beta_client_frame",
    "beta_dialect",
    "decode_beta_server_event",
    "decode_beta_server_mapping",
]

#: Beta server event ``type`` -> GA ``type``, where they differ.
BETA_EVENT_TYPES: Final = {
    "response.audio.delta": "response.output_audio.delta",
    "response.audio.done": "response.output_audio.done",
    "response.audio_transcript.delta": "response.output_audio_transcript.delta",
    "response.audio_transcript.done": "response.output_audio_transcript.done",
    "response.text.delta": "response.output_text.delta",
    "response.text.done": "response.output_text.done",
    "conversation.item.created": "conversation.item.added",
}


def decode_beta_server_event(data: str | bytes) -> list[ReceivedEvent]:
    """Decode a frame from a beta (or GA) server into GA events. Never raises.

    Returns a list because one beta ``conversation.item.created`` stands for two GA events.
    """
    raw = parse_object(data)
    if isinstance(raw, ProtocolErrorEvent):
        return [raw]
    return decode_beta_server_mapping(raw)


def decode_beta_server_mapping(raw: dict[str, Any]) -> list[ReceivedEvent]:
    """:func:`decode_beta_server_event` for a frame already parsed (``raw`` is changed)."""
    kind = raw.get("type")
    if isinstance(kind, str) and kind in BETA_EVENT_TYPES:
        raw["type"] = BETA_EVENT_TYPES[kind]
    response = raw.get("response")
    if kind in ("response.created", "response.done") and isinstance(response, dict):
        raw["response"] = _ga_response(response)
    event = server_event_from_mapping(raw)
    if (
        kind == "conversation.item.created"
        and isinstance(event, ConversationItemAdded)
        and getattr(event.item, "status", None) == "completed"
    ):
        done = ConversationItemDone(
            event_id=event.event_id, item=event.item, previous_item_id=event.previous_item_id
        )
        return [event, done]
    return [event]


#: Event names only a beta server sends (``conversation.item.created`` is in both unions).
BETA_ONLY_TYPES: Final = frozenset(BETA_EVENT_TYPES) - {"conversation.item.created"}


def beta_dialect(raw: Mapping[str, Any]) -> bool | None:
    """``True`` if this frame shows a beta server, ``False`` if it shows a GA server, ``None``
    if it could be either."""
    kind = raw.get("type")
    if not isinstance(kind, str):
        return None
    if kind in BETA_ONLY_TYPES:
        return True
    if kind in ("session.created", "session.updated"):
        session = raw.get("session")
        if isinstance(session, dict):
            if "type" in session or "audio" in session or "output_modalities" in session:
                return False
            if "modalities" in session or "input_audio_format" in session:
                return True
    elif kind in ("response.created", "response.done"):
        response = raw.get("response")
        if isinstance(response, dict):
            if "output_modalities" in response:
                return False
            if "modalities" in response:
                return True
    return None


def _ga_response(response: dict[str, Any]) -> dict[str, Any]:
    """Move the beta response's flat output settings to their GA places."""
    ga = dict(response)
    modalities = ga.pop("modalities", None)
    if "output_modalities" not in ga and isinstance(modalities, list):
        # Beta ["audio", "text"] meant speech with its transcript, which GA calls ["audio"].
        ga["output_modalities"] = ["audio"] if "audio" in modalities else modalities
    voice = ga.pop("voice", None)
    fmt = ga.pop("output_audio_format", None)
    if "audio" not in ga and (voice is not None or fmt is not None):
        output: dict[str, Any] = {}
        if voice is not None:
            output["voice"] = voice
        ga_format = legacy_format(fmt) if isinstance(fmt, str) else None
        if ga_format is not None:
            output["format"] = ga_format
        ga["audio"] = {"output": output}
    return ga


#: GA audio format type -> the beta format name.
_BETA_FORMATS: Final = {"audio/pcm": "pcm16", "audio/pcmu": "g711_ulaw", "audio/pcma": "g711_alaw"}

#: Where a GA session's ``audio`` settings go in a beta session.
_BETA_AUDIO_FIELDS: Final = {
    ("input", "format"): "input_audio_format",
    ("input", "transcription"): "input_audio_transcription",
    ("input", "turn_detection"): "turn_detection",
    ("input", "noise_reduction"): "input_audio_noise_reduction",
    ("output", "format"): "output_audio_format",
    ("output", "voice"): "voice",
    ("output", "speed"): "speed",
}


def beta_client_frame(kind: str, frame: str) -> str:
    """A client event's frame (as the core encodes it, GA) in the beta shape: ``session.update``
    with the session flat, ``response.create`` with the response's output settings flat, items of
    ``conversation.item.create`` with ``text``/``audio`` content for ``output_text``/
    ``output_audio``; every other event is the same in both and comes back unchanged."""
    if kind not in ("session.update", "response.create", "conversation.item.create"):
        return frame
    event = msgspec.json.decode(frame)
    if kind == "session.update":
        event["session"] = _beta_session(event["session"])
    elif kind == "response.create" and isinstance(event.get("response"), dict):
        response = _beta_session(event["response"])
        if isinstance(response.get("input"), list):
            response["input"] = [_beta_item(item) for item in response["input"]]
        event["response"] = response
    elif kind == "conversation.item.create":
        event["item"] = _beta_item(event["item"])
    return msgspec.json.encode(event).decode()


def _beta_item(item: Any) -> Any:
    """An item with GA's assistant content types (``output_text``/``output_audio``) renamed to
    beta's (``text``/``audio``)."""
    if not isinstance(item, dict) or not isinstance(item.get("content"), list):
        return item
    content = [
        {**part, "type": _BETA_CONTENT[part["type"]]}
        if isinstance(part, dict) and part.get("type") in _BETA_CONTENT
        else part
        for part in item["content"]
    ]
    return {**item, "content": content}


_BETA_CONTENT: Final = {"output_text": "text", "output_audio": "audio"}


def _beta_session(ga: dict[str, Any]) -> dict[str, Any]:
    """A GA session (or response parameters: the same fields) flat, as beta has them."""
    beta = dict(ga)
    beta.pop("type", None)  # beta sessions have no type
    audio = beta.pop("audio", None) or {}
    for (direction, key), name in _BETA_AUDIO_FIELDS.items():
        section = audio.get(direction) or {}
        if key in section:
            value = section[key]
            if key == "format" and isinstance(value, dict):
                value = _BETA_FORMATS.get(str(value.get("type")), value)
            beta[name] = value
    if "output_modalities" in beta:
        # GA ["audio"] is speech with its transcript: beta ["text", "audio"].
        modalities = beta.pop("output_modalities")
        beta["modalities"] = ["text", "audio"] if modalities == ["audio"] else modalities
    if "max_output_tokens" in beta:
        beta["max_response_output_tokens"] = beta.pop("max_output_tokens")
    return beta
