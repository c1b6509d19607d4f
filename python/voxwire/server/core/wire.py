"""Server events to text frames, with the explicit ``null`` fields the real service sends.

The protocol core's structs leave ``None`` fields off the wire (the GA reference treats missing and
``null`` alike, and it keeps client frames small). The real server, though, always writes some
fields even when empty — ``previous_item_id: null``, ``response.output: []``,
``response.usage: null``, ``error.code: null``, an ``input_audio`` part's ``transcript: null``
— and clients written against real traces may
read them without a default. For those few event types the frame is completed here; every other
event (audio and text deltas, the hot path) is encoded straight by the protocol codec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from voxwire.protocol import (
    ConversationItemAdded,
    ConversationItemDone,
    ErrorEvent,
    InputAudioBufferCommitted,
    ResponseCreated,
    ResponseDone,
    ServerEvent,
    encode_event,
)

__all__ = ["encode_server_event"]

_encoder: Final = msgspec.json.Encoder()

# Top-level (or one-level nested) fields the real service always sends, with their empty value.
_ALWAYS: Final[Mapping[type, tuple[tuple[str, ...], ...]]] = {
    ConversationItemAdded: (("previous_item_id",),),
    ConversationItemDone: (("previous_item_id",),),
    InputAudioBufferCommitted: (("previous_item_id",),),
    ErrorEvent: (("error", "code"), ("error", "param"), ("error", "event_id")),
    ResponseCreated: (
        ("response", "status_details"),
        ("response", "output"),
        ("response", "conversation_id"),
        ("response", "usage"),
        ("response", "metadata"),
    ),
    ResponseDone: (
        ("response", "status_details"),
        ("response", "output"),
        ("response", "conversation_id"),
        ("response", "metadata"),
    ),
}


def encode_server_event(event: ServerEvent) -> str:
    """The JSON text frame of ``event`` as the real service would write it."""
    paths = _ALWAYS.get(type(event))
    if paths is None:
        return encode_event(event)
    data: dict[str, Any] = msgspec.to_builtins(event)
    for path in paths:
        target = data
        for key in path[:-1]:
            target = target[key]
        target.setdefault(path[-1], [] if path[-1] == "output" else None)
    item = data.get("item")
    if isinstance(item, dict):
        # User audio is announced with ``transcript: null`` until transcription fills it.
        for part in item.get("content") or ():
            if part.get("type") == "input_audio":
                part.setdefault("transcript", None)
    return _encoder.encode(data).decode()
