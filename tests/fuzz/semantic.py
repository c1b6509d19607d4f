"""Server events of valid shape whose state does not match the session's: the out-of-order and
duplicated side of the fuzz.

Each event names items and responses drawn from small pools (so some exist, some were deleted,
some never did): deltas for unknown items and responses, ``response.done`` before
``response.created`` (or twice), truncation and deletion of unknown items, function calls with
garbage arguments or for tools the agent does not have (or a handoff), transcripts for items that
are not audio, VAD events in the middle of a response, error events naming nothing, floods of
new items. A few frames are also broken (``mutate_frame``). Seeded: a failing case is reproduced
by its seed.
"""

from __future__ import annotations

import json
import random
from typing import Any

from voxwire.protocol.limits import read_json

from .mutations import Frame, deep_text, mutate_frame, pcm16_b64

ARGUMENTS = ["{}", '{"city":"Paris"}', "[", '{"city":5}', r'{"city":"\ud800"}', "null", "1e999"]
TOOL_NAMES = ["get_weather", "unknown_tool", "boom", "transfer_to_other", ""]


def _pick(rng: random.Random, pool: list[str], prefix: str) -> str:
    if pool and rng.random() < 0.6:
        return rng.choice(pool)
    return rng.choice([f"{prefix}_unknown", f"{prefix}_{rng.randrange(10**6)}", "", "x" * 200])


def _call(rng: random.Random, item_id: str, call_id: str) -> dict[str, Any]:
    arguments = rng.choice([*ARGUMENTS, deep_text(rng.choice([50, 3000]))])
    name = rng.choice(TOOL_NAMES)
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def _response_events(rng: random.Random, rid: str, iid: str, call: str) -> list[dict[str, Any]]:
    where = {"response_id": rid, "item_id": iid, "output_index": rng.choice([0, 1, 99])}
    part = {**where, "content_index": rng.choice([0, 1, 7])}
    message = {"type": "message", "id": iid, "role": "assistant", "content": []}
    output = rng.choice(
        [
            [],
            [_call(rng, iid, call)],
            [{**message, "content": [{"type": "output_text", "text": "hi"}]}],
        ]
    )
    status = rng.choice(["completed", "cancelled", "failed", "incomplete", "in_progress"])
    response = {"object": "realtime.response", "id": rid, "status": status}
    return [
        {
            "type": "response.created",
            "response": {**response, "status": "in_progress", "output": []},
        },
        {"type": "response.done", "response": {**response, "output": output}},
        {
            "type": "response.output_item.added",
            "response_id": rid,
            "output_index": 0,
            "item": rng.choice([message, _call(rng, iid, call)]),
        },
        {
            "type": "response.output_item.done",
            "response_id": rid,
            "output_index": 0,
            "item": _call(rng, iid, call),
        },
        {"type": "response.output_audio.delta", **part, "delta": pcm16_b64(rng.choice([1, 240]))},
        {
            "type": "response.output_audio_transcript.delta",
            **part,
            "delta": rng.choice(["once upon", "a time", "x" * 5000]),
        },
        {"type": "response.output_text.delta", **part, "delta": "upon"},
        {"type": "response.output_audio.done", **part},
        {
            "type": "response.function_call_arguments.delta",
            **where,
            "call_id": call,
            "delta": rng.choice(['{"ci', "\u0000", "]]]"]),
        },
        {
            "type": "response.function_call_arguments.done",
            **where,
            "call_id": call,
            "name": rng.choice(TOOL_NAMES),
            "arguments": rng.choice(ARGUMENTS),
        },
        {
            "type": "response.content_part.added",
            **part,
            "part": {"type": rng.choice(["audio", "text", "weird"]), "transcript": ""},
        },
        {
            "type": rng.choice(["output_audio_buffer.started", "output_audio_buffer.stopped"]),
            "response_id": rid,
        },
    ]


def _conversation_events(rng: random.Random, iid: str, call: str) -> list[dict[str, Any]]:
    item = rng.choice(
        [
            {
                "type": "message",
                "id": iid,
                "role": rng.choice(["user", "assistant", "system"]),
                "content": [{"type": "input_text", "text": "hi"}],
            },
            {"type": "function_call_output", "id": iid, "call_id": call, "output": "{}"},
            {
                "type": "function_call",
                "id": iid,
                "call_id": call,
                "name": "get_weather",
                "arguments": "{}",
            },
        ]
    )
    added = rng.choice(["conversation.item.added", "conversation.item.done"])
    error = {
        "type": rng.choice(["invalid_request_error", "server_error", "x"]),
        "code": rng.choice(
            [None, "response_cancel_not_active", "conversation_already_has_active_response"]
        ),
        "message": "boom",
        "param": None,
        "event_id": rng.choice([None, "c_1"]),
    }
    return [
        {
            "type": "conversation.item.truncated",
            "item_id": iid,
            "content_index": rng.choice([0, 3]),
            "audio_end_ms": rng.choice([0, 10**12, 500]),
        },
        {"type": "conversation.item.deleted", "item_id": iid},
        {"type": added, "previous_item_id": rng.choice([None, iid, "nowhere"]), "item": item},
        {
            "type": "input_audio_buffer.speech_started",
            "audio_start_ms": rng.choice([0, 10**10]),
            "item_id": iid,
        },
        {"type": "input_audio_buffer.speech_stopped", "audio_end_ms": 5, "item_id": iid},
        {"type": "input_audio_buffer.committed", "previous_item_id": None, "item_id": iid},
        {
            "type": "conversation.item.input_audio_transcription.completed",
            "item_id": iid,
            "content_index": rng.choice([0, 4]),
            "transcript": rng.choice(["hello", "weather"]),
        },
        {
            "type": "conversation.item.input_audio_transcription.delta",
            "item_id": iid,
            "content_index": 0,
            "delta": "wea",
        },
        {"type": "error", "error": error},
        {
            "type": "rate_limits.updated",
            "rate_limits": [
                {
                    "name": "tokens",
                    "limit": rng.choice([0, -1, 10**20]),
                    "remaining": 5,
                    "reset_seconds": rng.choice([0.1, 1e308]),
                }
            ],
        },
    ]


def server_event(rng: random.Random, items: list[str], responses: list[str]) -> dict[str, Any]:
    """One semantically hostile server event, its ids drawn from the pools or made up."""
    iid, rid = _pick(rng, items, "item"), _pick(rng, responses, "resp")
    call = rng.choice(["call_a", "call_b", f"call_{rng.randrange(1000)}"])
    choices = _response_events(rng, rid, iid, call) + _conversation_events(rng, iid, call)
    return rng.choice(choices)


def _flood(n: int, count: int) -> list[tuple[str, Frame]]:
    return [
        (
            "flood",
            json.dumps(
                {
                    "type": "conversation.item.added",
                    "event_id": f"f{n}_{j}",
                    "previous_item_id": None,
                    "item": {
                        "type": "message",
                        "id": f"item_flood_{n}_{j}",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "x"}],
                    },
                }
            ),
        )
        for j in range(count)
    ]


def hostile_sequence(
    rng: random.Random, count: int, mutate_rate: float = 0.1
) -> tuple[list[tuple[str, Frame]], list[str]]:
    """About ``count`` (kind, frame) pairs, and the id of every response they name (for the
    caller to end them all, as a server finishes what it began)."""
    items, responses = [f"item_s{i}" for i in range(4)], [f"resp_s{i}" for i in range(3)]
    out: list[tuple[str, Frame]] = []
    while len(out) < count:
        if rng.random() < 0.01:
            out += _flood(len(out), rng.choice([20, 200]))
            continue
        event = {**server_event(rng, items, responses), "event_id": f"evt_h{len(out)}"}
        if rng.random() < 0.2:
            items.append(f"item_s{len(items)}")
        if rng.random() < 0.1:
            responses.append(f"resp_s{len(responses)}")
        if rng.random() < mutate_rate:
            out.append(mutate_frame(event, rng))
        else:
            out.append((str(event["type"]), json.dumps(event)))
    return out, sorted(response_ids(out) | set(responses))


def response_ids(frames: list[tuple[str, Frame]]) -> set[str]:
    """Every response id the frames name (``response_id``, ``response.id``) where readable."""
    found: set[str] = set()
    for _, frame in frames:
        event, _ = read_json(frame)  # bounded: some frames nest thousands deep
        if not isinstance(event, dict):
            continue
        response = event.get("response")
        for value in (event.get("response_id"), isinstance(response, dict) and response.get("id")):
            if isinstance(value, str):
                found.add(value)
    return found
