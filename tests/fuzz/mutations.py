"""Seeded mutation of recorded Realtime frames: the hostile inputs of the fuzz suite.

Every mutation starts from a real frame (the recorded traces in ``tests/fixtures/realtime``, whose
sources its README names) and breaks it the way a faulty or hostile peer could: a field deleted,
a value of the wrong type, ``null``, a huge or deeply nested value, invalid UTF-8, a binary
frame, base64 garbage, a 1 MB frame, bad JSON. Sequences are also reordered and duplicated
(:func:`mutate_sequence`). Everything is drawn from a :class:`random.Random` the caller seeds, so a
failing case is reproduced by its seed and index.
"""

from __future__ import annotations

import base64
import functools
import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import msgspec

FIXTURES: Final = Path(__file__).resolve().parent.parent / "fixtures" / "realtime"

SERVER_TRACES: Final = (
    "real_ga_sip-gateway_turn_sequence.jsonl",
    "real_ga_sip-gateway_server_events_fileorder.jsonl",
    "real_events_from_issue_threads.jsonl",
    "openai-openapi_docs_examples_ga_server.jsonl",
    "real_beta-webrtc_banyan_session_server.jsonl",
    "real_beta_liusida_text_response_server.jsonl",
)
CLIENT_TRACES: Final = (
    "openai-openapi_docs_examples_ga_client.jsonl",
    "real_beta-webrtc_banyan_session_client.jsonl",
)

Frame = str | bytes
Json = Any


def load_trace(name: str) -> list[dict[str, Any]]:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@functools.cache
def pcm16_b64(n_samples: int) -> str:
    """Valid base64 PCM16 (a quiet pattern) of ``n_samples`` samples."""
    return base64.b64encode(
        bytes(range(7)) * (n_samples * 2 // 7) + bytes(n_samples * 2 % 7)
    ).decode()


def _copy(event: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(event))
    return copied


# --- value mutations ------------------------------------------------------------------------------


def _paths(value: Json, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (not the root)."""
    found: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, child in value.items():
            found.append((*prefix, key))
            found.extend(_paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.append((*prefix, index))
            found.extend(_paths(child, (*prefix, index)))
    return found


def _parent(root: Json, path: tuple[Any, ...]) -> Any:
    target = root
    for key in path[:-1]:
        target = target[key]
    return target


_DEEP: Final = "\u0000deep:"


def deep_text(depth: int) -> str:
    """JSON nested ``depth`` levels: arrays and objects by turns."""
    opening = "".join("[" if i % 2 else '{"a":' for i in range(depth))
    closing = "".join("]" if i % 2 else "}" for i in reversed(range(depth)))
    return opening + "1" + closing


def _wrong_value(current: Json, rng: random.Random) -> Json:
    choices: list[Json] = [
        0,
        -1,
        1.5,
        2**70,
        -(2**64),
        True,
        False,
        "",
        "text",
        "\u0000\ud7ff\uffff",
        [],
        [1, "a", None],
        {},
        {"type": 3},
        {"type": ["x"]},
        {"type": {"a": 1}},
    ]
    candidates = [c for c in choices if type(c) is not type(current)]
    return rng.choice(candidates)


def _huge_value(rng: random.Random) -> Json:
    kind = rng.randrange(4)
    if kind == 0:
        return "x" * rng.choice([10_000, 100_000, 300_000])
    if kind == 1:
        return [0] * rng.choice([1_000, 50_000])
    if kind == 2:
        return {f"k{i}": i for i in range(rng.choice([1_000, 20_000]))}
    return 10 ** rng.choice([30, 400, 4000])  # beyond int64; 10**4000 has 4001 digits


def mutate_value(event: dict[str, Any], rng: random.Random) -> tuple[str, dict[str, Any]]:
    """One structural mutation of a copy of ``event``: (its name, the mutated event)."""
    event = _copy(event)
    paths = _paths(event)
    if not paths:  # every field already gone
        return "delete", event
    path = rng.choice(paths)
    parent = _parent(event, path)
    key = path[-1]
    kind = rng.choice(["delete", "wrong_type", "null", "huge", "deep", "type_swap", "dup_key"])
    if kind == "delete":
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
    elif kind == "wrong_type":
        parent[key] = _wrong_value(parent[key], rng)
    elif kind == "null":
        parent[key] = None
    elif kind == "huge":
        parent[key] = _huge_value(rng)
    elif kind == "deep":
        # A marker, replaced by the nested text when encoded (json.dumps would recurse).
        parent[key] = f"{_DEEP}{rng.choice([50, 200, 900, 3_000])}"
    elif kind == "type_swap":
        event["type"] = rng.choice(
            [
                "response.done",
                "response.created",
                "session.updated",
                "conversation.item.added",
                "response.output_audio.delta",
                "response.content_part.done",
                "response.output_item.done",
                "error",
                "conversation.item.truncated",
                "conversation.item.deleted",
                "response.audio.delta",
                "conversation.item.created",
            ]
        )
    else:  # dup_key: the same field written twice (JSON allows it; the last one wins)
        return "dup_key", event
    return kind, event


# --- frame mutations ------------------------------------------------------------------------------


def _encode(event: Json) -> str:
    text = json.dumps(event, separators=(",", ":"))
    # Python's json recurses: deep values are written as text (see mutate_value).
    marker = json.dumps(_DEEP)[:-1]
    if marker in text:
        text = re.sub(re.escape(marker) + r'(\d+)"', lambda m: deep_text(int(m.group(1))), text)
    return text


def _encode_deep(event: dict[str, Any], key: str, depth: int) -> str:
    body = _encode(event)
    return body[:-1] + f',"{key}":{deep_text(depth)}' + "}"


def _audio_mutation(event: dict[str, Any], rng: random.Random) -> tuple[str, Frame]:
    event = _copy(event)
    field = "delta" if "delta" in event else "audio"
    kind = rng.choice(["b64_garbage", "b64_odd", "b64_padding", "b64_huge", "b64_type"])
    if kind == "b64_garbage":
        event[field] = rng.choice(["!!!!", "abc", "a===", "€uro", "Zm9v\nYmFy", "-_-_"])
    elif kind == "b64_odd":
        event[field] = (
            pcm16_b64(rng.randrange(1, 200))
            if False
            else base64.b64encode(
                bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400) * 2 + 1))
            ).decode()
        )
    elif kind == "b64_padding":
        event[field] = "AAA"
    elif kind == "b64_huge":
        event[field] = pcm16_b64(rng.choice([100_000, 400_000]))
    else:
        event[field] = rng.choice([123, None, ["AAAA"], {"b": "AAAA"}])
    return kind, _encode(event)


def mutate_frame(event: dict[str, Any], rng: random.Random) -> tuple[str, Frame]:
    """One hostile frame made from ``event``: (the mutation's name, the frame)."""
    roll = rng.random()
    if roll < 0.1:  # several faults in one frame
        mutated = event
        for _ in range(rng.randrange(2, 5)):
            _, mutated = mutate_value(mutated, rng)
        return "multi", _encode(mutated)
    if roll < 0.45:
        kind, mutated = mutate_value(event, rng)
        if kind == "dup_key":
            body = _encode(mutated)
            return kind, body[:-1] + ',"type":' + _encode(mutated.get("type")) + "}"
        return kind, _encode(mutated)
    if roll < 0.55 and ("delta" in event or "audio" in event):
        return _audio_mutation(event, rng)
    text = _encode(event)
    kind = rng.choice(
        [
            "invalid_utf8",
            "binary",
            "truncated",
            "deep_frame",
            "megabyte",
            "not_object",
            "bytes_ok",
            "garbage_text",
            "bom",
        ]
    )
    if kind == "invalid_utf8":
        raw = text.encode()
        at = rng.randrange(len(raw))
        bad = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"])
        return kind, raw[:at] + bad + raw[at:]
    if kind == "binary":
        return kind, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    if kind == "truncated":
        return kind, text[: rng.randrange(len(text))]
    if kind == "deep_frame":
        return kind, _encode_deep(
            event,
            rng.choice(["extra", "item", "response", "session"]),
            rng.choice([100, 1_000, 20_000]),
        )
    if kind == "megabyte":
        pad = "y" * (1024 * 1024)
        return kind, text[:-1] + f',"padding":"{pad}"' + "}"
    if kind == "not_object":
        return kind, rng.choice(["[]", "null", "42", '"type"', "true", "[{}]"])
    if kind == "bytes_ok":
        return kind, text.encode()
    if kind == "garbage_text":
        return kind, "".join(rng.choice('{}[]":,x1 ') for _ in range(rng.randrange(1, 80)))
    return kind, "\ufeff" + text


def mutate_sequence(
    events: list[dict[str, Any]], rng: random.Random, rate: float = 0.3
) -> list[tuple[str, Frame]]:
    """A trace with some frames mutated, some duplicated and some moved: (kind, frame) pairs;
    the kind of an untouched frame is ``"clean"``."""
    out: list[tuple[str, Frame]] = []
    for event in events:
        if rng.random() < rate:
            out.append(mutate_frame(event, rng))
        else:
            out.append(("clean", _encode(event)))
        if rng.random() < 0.05:
            out.append(("duplicated", out[-1][1]))
    for _ in range(rng.randrange(0, 3)):
        if len(out) > 1:
            a, b = rng.randrange(len(out)), rng.randrange(len(out))
            out[a], out[b] = (("reordered", out[b][1]), ("reordered", out[a][1]))
    return out


Mutator = Callable[[dict[str, Any], random.Random], tuple[str, Frame]]


def client_script() -> list[dict[str, Any]]:
    """A client's events of every type, as voxwire sends them (the base of the server fuzz,
    beside the recorded client traces)."""
    return [
        {
            "type": "session.update",
            "event_id": "c_session",
            "session": {
                "type": "realtime",
                "instructions": "Be brief.",
                "output_modalities": ["text"],
                "audio": {
                    "input": {
                        "turn_detection": None,
                        "format": {"type": "audio/pcm", "rate": 24000},
                    },
                    "output": {"voice": "marin"},
                },
                "tools": [
                    {
                        "type": "function",
                        "name": "get_weather",
                        "description": "The weather in a city",
                        "parameters": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                        },
                    }
                ],
            },
        },
        {"type": "input_audio_buffer.append", "event_id": "c_append", "audio": pcm16_b64(2400)},
        {"type": "input_audio_buffer.commit", "event_id": "c_commit"},
        {
            "type": "conversation.item.create",
            "event_id": "c_create_user",
            "item": {
                "id": "item_user",
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "hello"}],
            },
        },
        {
            "type": "conversation.item.create",
            "event_id": "c_create_assistant",
            "item": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Hi."}],
            },
        },
        {
            "type": "conversation.item.create",
            "event_id": "c_create_output",
            "item": {"type": "function_call_output", "call_id": "call_1", "output": "{}"},
        },
        {
            "type": "conversation.item.truncate",
            "event_id": "c_truncate",
            "item_id": "item_user",
            "content_index": 0,
            "audio_end_ms": 0,
        },
        {"type": "conversation.item.retrieve", "event_id": "c_retrieve", "item_id": "item_user"},
        {"type": "conversation.item.delete", "event_id": "c_delete", "item_id": "item_gone"},
        {
            "type": "response.create",
            "event_id": "c_response",
            "response": {
                "instructions": "Say hi.",
                "output_modalities": ["text"],
                "conversation": "none",
                "metadata": {"topic": "greeting"},
                "input": [{"type": "item_reference", "id": "item_user"}],
            },
        },
        {"type": "response.cancel", "event_id": "c_cancel"},
        {"type": "input_audio_buffer.clear", "event_id": "c_clear"},
    ]
