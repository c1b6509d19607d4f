"""(a) The protocol core never raises on received data: seeded mutations of the recorded traces
(tests/fixtures/realtime, sources in its README), tens of thousands of frames, fed to
``RealtimeProtocol`` in sequences (reordered, duplicated), and to the decoders one by one.

Every frame must become typed events, an ``UnknownServerEvent`` or a ``ProtocolErrorEvent`` of
the peer's (never one that reports a voxwire bug); the events' raw fields must be readable; and
the state must still plan an interruption and a reconnection afterwards. ``VOXWIRE_FUZZ_SEED``
picks other seeds (the default ones run in CI).
"""

from __future__ import annotations

import os
import random
from typing import get_args

import pytest

from voxwire.protocol import (
    ProtocolErrorEvent,
    RealtimeProtocol,
    ReceivedEvent,
    ServerEvent,
    UnknownServerEvent,
    decode_beta_server_event,
    decode_client_event,
    raw_fields,
    unknown_fields,
)
from voxwire.protocol.state import INTERNAL_ERROR_PREFIX

from .conftest import CASES
from .mutations import CLIENT_TRACES, SERVER_TRACES, Frame, load_trace, mutate_sequence

BASE_SEED = int(os.environ.get("VOXWIRE_FUZZ_SEED", "19"))
CHUNKS = 6
SEQUENCES_PER_CHUNK = 90

_TYPED = (*get_args(ServerEvent), UnknownServerEvent, ProtocolErrorEvent)


def check_events(events: list[ReceivedEvent], frame: Frame) -> None:
    for event in events:
        assert isinstance(event, _TYPED), (event, frame[:200])
        if isinstance(event, ProtocolErrorEvent):
            assert not event.message.startswith(INTERNAL_ERROR_PREFIX), (event, frame[:300])
            assert event.message  # says what was wrong
        raw_fields(event)
        unknown_fields(event)


def run_sequence(protocol: RealtimeProtocol, frames: list[tuple[str, Frame]]) -> None:
    for kind, frame in frames:
        protocol.receive_text(frame)
        check_events(protocol.events_received(), frame)
        CASES[f"core frames: {kind}"] += 1
    # The state is still usable: plan an interruption, lose the connection, plan the next.
    protocol.interrupt({})
    protocol.data_to_send()
    loss = protocol.connection_lost()
    assert loss.plan is not None


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_the_core_never_raises_on_mutated_traces(chunk: int) -> None:
    rng = random.Random(BASE_SEED * 1000 + chunk)
    traces = {name: load_trace(name) for name in SERVER_TRACES}
    for _ in range(SEQUENCES_PER_CHUNK):
        name = rng.choice(SERVER_TRACES)
        beta = rng.choice([True, False, "auto", "auto"])
        frames = mutate_sequence(traces[name], rng)
        run_sequence(RealtimeProtocol(beta=beta), frames)
        CASES["core sequences"] += 1


@pytest.mark.parametrize("chunk", range(1))
def test_the_decoders_never_raise_on_mutated_frames(chunk: int) -> None:
    """Client frames (the server's side of the codec) and beta decoding, frame by frame."""
    rng = random.Random(BASE_SEED * 1000 + 500 + chunk)
    events = [e for name in (*CLIENT_TRACES, *SERVER_TRACES) for e in load_trace(name)]
    for _ in range(20):
        for kind, frame in mutate_sequence(events, rng, rate=0.6):
            client = decode_client_event(frame)
            if isinstance(client, ProtocolErrorEvent):
                assert not client.message.startswith(INTERNAL_ERROR_PREFIX)
            check_events(decode_beta_server_event(frame), frame)
            CASES[f"decoder frames: {kind}"] += 1
