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

GA's ``conversation.item.done`` arrives when an item is final. A beta server announced an item
once; a completed one (a committed user turn, a created message) is therefore also announced as
done, while an in-progress assistant item is completed later by ``response.output_item.done``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

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
