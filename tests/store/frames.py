"""Server frames as the GA Realtime API sends them (JSON text), for driving the recorder with
real decoded events, and a bounded runner for async test bodies."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Coroutine
from typing import Any, TypeVar

from voxwire.protocol.codec import decode_server_event
from voxwire.protocol.server_events import ReceivedEvent

T = TypeVar("T")
_ids = itertools.count(1)


def run(coro: Coroutine[Any, Any, T], timeout_s: float = 60.0) -> T:
    """Run a test body on a fresh event loop; a hang fails instead of stalling the suite."""
    return asyncio.run(asyncio.wait_for(coro, timeout_s))


def event(kind: str, **fields: Any) -> ReceivedEvent:
    """The server event decoded from its JSON frame, exactly as a session receives it."""
    frame = json.dumps({"type": kind, "event_id": f"event_{next(_ids)}", **fields})
    decoded = decode_server_event(frame)
    assert type(decoded).__name__ not in ("ProtocolErrorEvent", "UnknownServerEvent"), decoded
    return decoded


def added(item: dict[str, Any], previous: str | None) -> ReceivedEvent:
    return event("conversation.item.added", item=item, previous_item_id=previous)


def done(item: dict[str, Any], previous: str | None) -> ReceivedEvent:
    return event("conversation.item.done", item=item, previous_item_id=previous)


def output_added(item: dict[str, Any], response_id: str, index: int = 0) -> ReceivedEvent:
    return event(
        "response.output_item.added", response_id=response_id, output_index=index, item=item
    )


def user(item_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "status": "completed",
        "role": "user",
        "content": [{"type": "input_text", "text": text}],
        **extra,
    }


def assistant(item_id: str, transcript: str | None, status: str = "completed") -> dict[str, Any]:
    part: dict[str, Any] = {"type": "output_audio"}
    if transcript is not None:
        part["transcript"] = transcript
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [part],
    }


def call(
    item_id: str, call_id: str, name: str = "get_weather", arguments: str = "{}"
) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "function_call",
        "status": "completed",
        "name": name,
        "arguments": arguments,
        "call_id": call_id,
    }


def output(item_id: str, call_id: str, value: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "function_call_output",
        "call_id": call_id,
        "output": value,
    }


def response_done(response_id: str, items: list[dict[str, Any]], **usage: Any) -> ReceivedEvent:
    return event(
        "response.done",
        response={
            "id": response_id,
            "object": "realtime.response",
            "status": "completed",
            "output": items,
            "usage": usage or None,
        },
    )
