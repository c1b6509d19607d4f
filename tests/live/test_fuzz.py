"""Received data never makes the Live core raise: seeded mutations of every sample frame (fields
dropped, retyped, nested deep, frames cut, bytes flipped, invalid UTF-8), as text and as bytes,
through LiveProtocol in every delegation mode and through the server-side client decoder."""

from __future__ import annotations

import json
import random
from typing import get_args

import pytest

from tests.live.mutations import mutate
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
