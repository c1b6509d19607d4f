"""Seeded mutations of JSON frames for the Live fuzz tests: fields dropped or retyped, deep
nesting, frames cut, bytes flipped, invalid UTF-8, as text or bytes."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

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
