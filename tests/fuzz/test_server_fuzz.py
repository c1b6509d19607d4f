"""(c) The local server answers every malformed client event with the ``error`` event the hosted
service would send, and keeps serving the same connection.

Over a real loopback websocket, seeded mutations of a client's events (``client_script``) and
of the recorded client traces (tests/fixtures/realtime) are sent as they come — text frames,
and binary frames for bytes — each followed by a probe (the retrieval of an item that does not
exist) that must be answered. Every frame the server sends validates against the official
``openai`` types (``tests/server/helpers.Client``); a frame the codec cannot read gets an
``invalid_request_error`` naming the client's ``event_id`` where the frame shows one; none gets
a ``server_error``. Then a clean turn is served on the same connection.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any

import pytest

from voxwire.protocol import ProtocolErrorEvent, decode_client_event
from voxwire.protocol.limits import shape_problem

from ..server.helpers import Client, client_of, run, serving
from .conftest import CASES
from .mutations import CLIENT_TRACES, Frame, client_script, load_trace, mutate_frame

BASE_SEED = int(os.environ.get("VOXWIRE_FUZZ_SEED", "19"))
CASES_PER_CHUNK = 1000
CHUNKS = 3

WRONG_TYPES: list[Any] = [{"name": "session.update"}, ["response.create"], 7, 1.5, True, None, ""]


def shown_event_id(frame: Frame) -> str | None:
    """The ``event_id`` a reader of the frame can see (a frame within the bounds, JSON object)."""
    if shape_problem(frame) is not None:
        return None
    try:
        raw = json.loads(frame.decode("utf-8") if isinstance(frame, bytes) else frame)
    except ValueError:
        return None
    event_id = raw.get("event_id") if isinstance(raw, dict) else None
    return event_id if isinstance(event_id, str) else None


async def send_and_probe(client: Client, frame: Frame, probe: int) -> list[dict[str, Any]]:
    """Send ``frame``, then a probe the server answers with an error naming it (the retrieval
    of an item that does not exist); the events before that answer."""
    await client.ws.send(frame)
    probe_id = f"probe_{probe}"
    await client.send({"type": "conversation.item.retrieve", "event_id": probe_id, "item_id": "x"})
    events: list[dict[str, Any]] = []
    while True:
        event = await client.recv()
        if event["type"] == "error" and event["error"]["event_id"] == probe_id:
            return events
        events.append(event)


def check_answer(frame: Frame, events: list[dict[str, Any]]) -> None:
    errors = [e["error"] for e in events if e["type"] == "error"]
    assert all(error["type"] == "invalid_request_error" for error in errors), errors
    if isinstance(decode_client_event(frame), ProtocolErrorEvent):
        assert errors, f"no error for {frame[:300]!r}"
        event_id = shown_event_id(frame)
        if event_id is not None:
            assert event_id in [error["event_id"] for error in errors], (errors, frame[:300])


async def fuzz(client: Client, rng: random.Random, bases: list[dict[str, Any]]) -> None:
    for case in range(CASES_PER_CHUNK):
        kind, frame = mutate_frame(rng.choice(bases), rng)
        check_answer(frame, await send_and_probe(client, frame, case))
        CASES[f"server client events: {kind}"] += 1


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_the_server_answers_mutated_client_events_and_keeps_serving(chunk: int) -> None:
    rng = random.Random(BASE_SEED * 1000 + 700 + chunk)
    bases = client_script() + [e for name in CLIENT_TRACES for e in load_trace(name)]

    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await fuzz(client, rng, bases)
            # Then a clean turn on the same connection (the session may have been changed by
            # the valid mutations: set it back).
            manual = {"input": {"turn_detection": None}}
            await client.update(output_modalities=["text"], audio=manual)
            await client.say("hello")
            done = (await client.respond(output_modalities=["text"]))[-1]
            assert done["response"]["status"] == "completed"
            assert len(server.connections) == 1

    run(body())


def test_an_event_type_that_is_not_text_is_an_invalid_type_error() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            for case, base in enumerate(client_script()):
                for wrong in WRONG_TYPES:
                    frame = json.dumps({**base, "type": wrong})
                    events = await send_and_probe(client, frame, case)
                    (error,) = [e["error"] for e in events if e["type"] == "error"]
                    assert error["type"] == "invalid_request_error"
                    assert error["event_id"] == base["event_id"]
                    if wrong is None:
                        assert error["code"] == "invalid_event"
                    elif isinstance(wrong, str):
                        assert (error["code"], error["param"]) == ("invalid_value", "type")
                    else:
                        assert (error["code"], error["param"]) == ("invalid_type", "type")
                    CASES["server wrong event types"] += 1
            await client.say("hello")
            assert (await client.respond())[-1]["response"]["status"] == "completed"

    run(body())
