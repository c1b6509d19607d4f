"""Mutated Live frames never kill a LiveSession: a peer on a loopback websocket answers
session.start, then slips in seeded mutations of every sample server frame (text and binary,
cut, retyped, deep, not UTF-8); the session reports what it could not read as error events and
still hears the clean frame that follows."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from tests.live.mutations import mutate
from tests.live.samples import SERVER, SESSION
from voxwire.agents import RealtimeAgent
from voxwire.asyncio.live import LiveSession, LiveTranscriptEvent
from voxwire.audio import AudioOutput
from voxwire.exceptions import SessionClosed

FRAMES = 300
CLEAN = json.dumps(
    {
        "type": "session.output_transcript.delta",
        "event_id": "clean",
        "delta": "still alive",
        "start_ms": 0,
        "end_ms": 10,
    }
)
# session.closed ends a session by design; every other event is fair game.
KINDS = sorted(k for k in SERVER if k != "session.closed")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mutated_frames_never_kill_a_live_session(seed: int) -> None:
    rng = random.Random(seed)
    hostile = [mutate(rng, SERVER[rng.choice(KINDS)]) for _ in range(FRAMES)]

    async def peer(ws: ServerConnection) -> None:
        start = json.loads(await ws.recv())
        started = {**SERVER["session.started"], "session": SESSION}
        started["client_event_id"] = start.get("event_id")
        await ws.send(json.dumps(started))
        for frame in hostile:
            await ws.send(frame)
        await ws.send(CLEAN)
        async for _ in ws:  # read what the session sends (tool outputs, close)
            pass

    async def body() -> None:
        async with serve(peer, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            agent = RealtimeAgent(name="Fuzzed")
            session = LiveSession(agent, url=f"ws://127.0.0.1:{port}/v1/live/sessions")
            async with session:
                events: list[Any] = []

                async def read() -> None:
                    async for event in session:
                        events.append(event)
                        if isinstance(event, LiveTranscriptEvent) and event.delta == "still alive":
                            return

                await asyncio.wait_for(read(), 30)
            errors = [e for e in events if e.type == "error"]
            assert errors  # the unreadable frames were reported ...
            assert all(e.source in ("protocol", "server", "session") for e in errors)
            assert not [e for e in errors if e.source == "session"]  # ... none broke a part
            assert events[-1].delta == "still alive"

    asyncio.run(body())


def test_a_session_the_server_closes_ends_cleanly() -> None:
    async def peer(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(json.dumps({**SERVER["session.started"], "session": SESSION}))
        await ws.send(json.dumps({**SERVER["session.closed"], "reason": "expired"}))
        async for _ in ws:
            pass

    async def body() -> None:
        async with serve(peer, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            session = LiveSession(
                RealtimeAgent(name="Short"),
                url=f"ws://127.0.0.1:{port}/v1/live/sessions",
                audio_output=AudioOutput(),
            )
            await session.connect()
            events = [event async for event in session]
            assert [e.type for e in events] == ["close"]
            assert events[0].reason == "server_closed"
            assert session.protocol.close_reason == "expired"
            assert session.metrics.usage_seconds == 9.0
            with pytest.raises(SessionClosed):
                await session.send_audio(b"\x00\x00")
            await session.close()  # stops the transcript ticker: nothing is left running
            left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            assert not [t for t in left if t.get_name().startswith("live")]

    asyncio.run(body())


def test_a_slow_reader_loses_audio_not_words() -> None:
    delta = json.dumps({**SERVER["session.output_audio.delta"]})

    async def peer(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(json.dumps({**SERVER["session.started"], "session": SESSION}))
        for _ in range(50):
            await ws.send(delta)
        await ws.send(CLEAN)
        async for _ in ws:
            pass

    async def body() -> None:
        async with serve(peer, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            url = f"ws://127.0.0.1:{port}/v1/live/sessions"
            async with LiveSession(RealtimeAgent(name="Slow"), url=url, max_events=5) as session:
                await asyncio.sleep(0.5)  # the application is busy; 51 events arrive
                events: list[Any] = []
                async for event in session:
                    events.append(event)
                    if isinstance(event, LiveTranscriptEvent):
                        break
                assert session.dropped_events == 46
                assert [e.type for e in events] == ["live_audio"] * 4 + ["live_transcript"]

    asyncio.run(body())
