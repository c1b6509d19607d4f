"""(b) A ``RealtimeSession`` (public API only) survives every mutation and completes a clean turn
afterwards.

The session talks to the local realtime server through a loopback proxy (``proxy.py``) that slips
seeded mutations of the recorded server traces (tests/fixtures/realtime) into what the session
receives: whole traces with frames mutated, duplicated and moved, odd-length and garbage audio
deltas, 1 MB, binary and deeply nested frames. After each hostile batch the proxy ends the
responses the batch started (as a server finishes what it began), and the session must then
answer "hello" with the real server's greeting — many rounds on one session, several sessions.
The session never ends by itself, every error it reports is recoverable, and no task is left.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterable
from typing import Any

import pytest

from voxwire.asyncio import (
    AssistantTranscriptDoneEvent,
    CloseEvent,
    ErrorEvent,
    RealtimeSession,
    ResponseDoneEvent,
    SessionEvent,
)
from voxwire.audio import MemoryOutput

from ..asyncio.helpers import MANUAL, assert_only_current_task, run, serving, until
from .conftest import CASES
from .mutations import SERVER_TRACES, Frame, load_trace, mutate_sequence, pcm16_b64
from .proxy import HostileProxy, hostile_proxy
from .semantic import response_ids

BASE_SEED = int(os.environ.get("VOXWIRE_FUZZ_SEED", "19"))
SESSIONS = 6
ROUNDS = 25
GREETING = "Hello! How can I help you today?"


def audio_deltas(rng: random.Random) -> list[tuple[str, Frame]]:
    """Deltas of a response the batch announces: odd lengths, garbage, a huge one."""
    frames: list[tuple[str, Frame]] = []
    for index in range(rng.randrange(1, 6)):
        n_bytes = rng.choice([1, 3, 481, 4_801, 200_001])
        audio = pcm16_b64(n_bytes // 2 + 1)[: (n_bytes + 2) // 3 * 4]
        delta = rng.choice([audio, audio, "!!!", 7])
        event = {
            "type": "response.output_audio.delta",
            "event_id": f"fuzz_audio_{index}",
            "response_id": "resp_fuzz_audio",
            "item_id": "item_fuzz_audio",
            "output_index": 0,
            "content_index": 0,
            "delta": delta,
        }
        frames.append(("audio_delta", json.dumps(event)))
    return frames


def settling(ids: Iterable[str]) -> list[Frame]:
    """``response.done`` (cancelled) for every response id given: a server ends what it began,
    so the session's gate is free for the clean turn."""
    return [
        json.dumps(
            {
                "type": "response.done",
                "event_id": f"fuzz_done_{response_id[:40]}",
                "response": {
                    "object": "realtime.response",
                    "id": response_id,
                    "status": "cancelled",
                    "status_details": {"type": "cancelled", "reason": "client_cancelled"},
                    "output": [],
                },
            }
        )
        for response_id in sorted(ids)
    ]


def hostile_batch(rng: random.Random, traces: dict[str, list[dict[str, Any]]]) -> list[Frame]:
    name = rng.choice(SERVER_TRACES)
    frames = mutate_sequence(traces[name], rng, rate=0.4)
    at = rng.randrange(len(frames) + 1)
    frames[at:at] = audio_deltas(rng)
    for kind, _ in frames:
        CASES[f"session frames: {kind}"] += 1
    # Every response the batch started, mutated ids included (a response.created whose id was
    # made huge is a response of its own: ending only the trace's left the gate waiting).
    ids = {"resp_fuzz_audio", *response_ids(frames)}
    return [frame for _, frame in frames] + settling(ids)


async def clean_turn(session: RealtimeSession) -> list[SessionEvent]:
    """Ask "hello" and wait for the greeting's response to be done."""
    greeted: list[str] = []

    def done(event: SessionEvent) -> bool:
        if isinstance(event, AssistantTranscriptDoneEvent) and event.transcript == GREETING:
            greeted.append(event.response_id)
        return isinstance(event, ResponseDoneEvent) and event.response_id in greeted

    await session.send_message("hello")
    return await until(session, done, timeout_s=20.0)


async def rounds(
    session: RealtimeSession, proxy: HostileProxy, rng: random.Random, speaker: MemoryOutput | None
) -> None:
    traces = {name: load_trace(name) for name in SERVER_TRACES}
    reported = 0
    for _ in range(ROUNDS):
        await proxy.inject(hostile_batch(rng, traces))
        events = await clean_turn(session)
        if speaker is not None:  # play what the hostile audio left in the output
            speaker.advance_ms(speaker.output.ring.readable_samples * 1000 / speaker.rate_hz + 100)
        assert not [e for e in events if isinstance(e, CloseEvent)]
        unrecoverable = [e for e in events if isinstance(e, ErrorEvent) and not e.recoverable]
        assert not unrecoverable, unrecoverable
        assert events[-1].status == "completed"  # type: ignore[union-attr]
        reported += sum(1 for e in events if isinstance(e, ErrorEvent) and e.source == "protocol")
        CASES["session rounds (hostile batch, then a clean turn)"] += 1
    assert reported > ROUNDS  # the bad frames reached the application as recoverable errors
    CASES["session protocol errors reported to the application"] += reported


@pytest.mark.parametrize("index", range(SESSIONS))
def test_a_session_survives_mutated_traces_and_keeps_working(index: int) -> None:
    """Every other session plays its audio through an ``AudioOutput`` (a virtual speaker)."""
    rng = random.Random(BASE_SEED * 1000 + 900 + index)
    speaker = MemoryOutput() if index % 2 else None

    async def body() -> None:
        async with serving() as server, hostile_proxy(f"127.0.0.1:{server.port}") as proxy:
            url = proxy.url + server.url().split(str(server.port), 1)[1]
            session = RealtimeSession(
                url=url, config=MANUAL, wait_for_session_updated=True, audio_output=speaker
            )
            async with session:
                await rounds(session, proxy, rng, speaker)
        assert_only_current_task()

    run(body(), timeout_s=120.0)
