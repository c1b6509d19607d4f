"""Received data never makes the Live core raise: seeded mutations of every sample frame (fields
dropped, retyped, nested deep, frames cut, bytes flipped, invalid UTF-8), as text and as bytes,
through LiveProtocol in every delegation mode and through the server-side client decoder."""

from __future__ import annotations

import copy
import json
import random
from typing import Any, get_args

import pytest

from tests.live.samples import CLIENT, SERVER, SESSION
from voxwire.live import LiveProtocol
from voxwire.live.client_events import LiveClientEvent
from voxwire.live.codec import decode_client_event, unknown_fields
from voxwire.live.server_events import LiveReceivedEvent
from voxwire.protocol.server_events import ProtocolErrorEvent

SEEDS = range(6)
FRAMES_PER_SEED = 500
RECEIVED = get_args(LiveReceivedEvent)
DECODED_CLIENT = (*get_args(LiveClientEvent), ProtocolErrorEvent)

_ODD_VALUES: list[Any] = [
    None,
    True,
    -1,
    2**70,
    1.5e308,
    "",
    "x" * 5000,
    "\ud800",
    [],
    {},
    [None, {"type": "function_call"}],
    {"type": "response.output_item.done", "item": {"type": "function_call", "call_id": 1}},
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


def _set(root: Any, path: tuple[Any, ...], value: Any, *, delete: bool = False) -> None:
    for step in path[:-1]:
        root = root[step]
    if delete:
        del root[path[-1]]
    else:
        root[path[-1]] = value


_DEEP = "__deep__"


def _deep(text: str, depth: int) -> str:
    return text.replace(f'"{_DEEP}"', '{"a": [' * depth + "0" + "]}" * depth, 1)


def mutate(rng: random.Random, raw: dict[str, Any]) -> str | bytes:
    frame = copy.deepcopy(raw)
    paths = _paths(frame)
    action = rng.randrange(9)
    path = rng.choice(paths)
    if action == 0:
        _set(frame, path, None, delete=True)
    elif action in (1, 2):
        _set(frame, path, rng.choice(_ODD_VALUES))
    elif action == 3:
        _set(frame, path, _DEEP)
    elif action == 4:
        frame[rng.choice(("extra", "type", "event_id"))] = rng.choice(_ODD_VALUES)
    text = _deep(json.dumps(frame), rng.choice((10, 200, 3000)))
    if action == 5:
        text = text[: rng.randrange(len(text))]
    data: str | bytes = text.encode() if rng.random() < 0.5 else text
    if action == 6:
        encoded = bytearray(text.encode())
        encoded[rng.randrange(len(encoded))] = rng.randrange(256)
        data = bytes(encoded)
    elif action == 7:
        data = text.encode()[:-1] + b"\xff\xfe" + rng.randbytes(3)
    elif action == 8:
        data = "[" * rng.choice((5, 100_000)) + text
    return data


def _protocol(mode: int) -> LiveProtocol:
    live = LiveProtocol()
    delegation = [None, {"type": "responses", "responses": {"model": "m"}}][mode % 2]
    live.send_session_start({"model": "gpt-live-1", "delegation": delegation})
    live.receive_text(json.dumps({**SERVER["session.started"], "session": SESSION}))
    return live


@pytest.mark.parametrize("seed", SEEDS)
def test_mutated_server_frames_never_raise(seed: int) -> None:
    rng = random.Random(seed)
    live = _protocol(seed)
    kinds = sorted(SERVER)
    errors = 0
    for _ in range(FRAMES_PER_SEED):
        live.receive_text(mutate(rng, SERVER[rng.choice(kinds)]))
        for event in live.events_received():
            assert isinstance(event, RECEIVED)
            unknown_fields(event)
            errors += isinstance(event, ProtocolErrorEvent)
        if rng.random() < 0.02:
            live.connection_lost()
            live = _protocol(seed)
    assert 0 < errors < FRAMES_PER_SEED  # the mutations hit both sides of the line


@pytest.mark.parametrize("seed", SEEDS)
def test_mutated_client_frames_never_raise(seed: int) -> None:
    rng = random.Random(1000 + seed)
    kinds = sorted(CLIENT)
    for _ in range(FRAMES_PER_SEED):
        event = decode_client_event(mutate(rng, CLIENT[rng.choice(kinds)]))
        assert isinstance(event, DECODED_CLIENT)
        unknown_fields(event)


def test_non_object_json_values() -> None:
    live = _protocol(0)
    for frame in ("null", "1", '"s"', "true", "[]", "", " ", b"", b"\x00"):
        live.receive_text(frame)
    assert all(isinstance(e, ProtocolErrorEvent) for e in live.events_received()[1:])
