"""Helpers for the session tests: the local server on loopback, a tiny misbehaving peer, event
collection, and the no-task-left check."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from functools import cache
from typing import Any, TypeVar

from websockets.asyncio.server import ServerConnection, serve

from voxwire.asyncio import RealtimeSession, SessionEvent
from voxwire.asyncio.events import ResponseDoneEvent
from voxwire.audio import PcmRing, PlaybackClock
from voxwire.server import Pacing, RealtimeServer, Scenario
from voxwire.server.engines.transcribe import Transcript

T = TypeVar("T")

#: Everything as fast as the socket takes it.
FAST = Pacing(audio_pace=0, text_tokens_per_s=0)
#: Slow enough that a response is still running while the test sends more.
SLOW = Pacing(audio_pace=2.0, text_tokens_per_s=60)

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"after_tool": "get_weather", "say": "It is {output.temperature} degrees in Paris."},
            {"match": "hello", "say": "Hello! How can I help you today?"},
            {"match": "story", "say": " ".join(["Once upon a time there was a long story."] * 6)},
        ],
        "fallback": "You said: {text}",
    }
)

#: Text only, turn detection off: the application drives every turn.
MANUAL = {"output_modalities": ["text"], "audio": {"input": {"turn_detection": None}}}
#: Spoken answers, turn detection off.
AUDIO_MANUAL = {"audio": {"input": {"turn_detection": None}}}
RATE_HZ = 24_000


_RUNNERS: set[asyncio.Task[Any] | None] = set()


def run(coro: Coroutine[Any, Any, T], timeout_s: float = 30.0) -> T:
    """Run a test body on a fresh event loop, bounded so a hang fails instead of stalling."""

    async def bounded() -> T:
        _RUNNERS.add(asyncio.current_task())
        try:
            return await asyncio.wait_for(coro, timeout_s)
        finally:
            _RUNNERS.discard(asyncio.current_task())

    return asyncio.run(bounded())


@asynccontextmanager
async def serving(**options: Any) -> AsyncIterator[RealtimeServer]:
    """The local realtime server on a free loopback port (text only and fast unless told)."""
    options.setdefault("pacing", FAST)
    options.setdefault("scenario", SCENARIO)
    options.setdefault("tts", None)
    async with RealtimeServer(**options) as server:
        yield server


def device(seconds: int = 30) -> tuple[PcmRing, PlaybackClock]:
    """A 24 kHz ring of ``seconds`` and the playback clock over it; the test pops the ring as a
    sound device would."""
    ring = PcmRing(RATE_HZ * seconds)
    return ring, PlaybackClock(ring, ring_rate_hz=RATE_HZ)


@asynccontextmanager
async def speaking(
    clock: PlaybackClock, *, config: dict[str, Any] = AUDIO_MANUAL, pacing: Pacing = FAST
) -> AsyncIterator[RealtimeSession]:
    """A session on the local server (espeak-ng voice) whose audio goes into ``clock``."""
    async with (
        serving(tts="espeak", pacing=pacing) as server,
        RealtimeSession(url=server.url(), config=config, audio_output=clock) as session,
    ):
        yield session


def session_tasks() -> list[asyncio.Task[Any]]:
    """Tasks running code of the session layer."""
    return [
        task
        for task in asyncio.all_tasks()
        if task.get_name().startswith("voxwire-client")
        or "voxwire/asyncio/" in getattr(task.get_coro(), "cr_code", _NoCode).co_filename
    ]


class _NoCode:
    co_filename = ""


def assert_only_current_task() -> None:
    """No task is left but the test's own (and the runner's that bounds it)."""
    assert asyncio.all_tasks() - _RUNNERS == {asyncio.current_task()}


async def until(
    session: RealtimeSession,
    done: str | Callable[[SessionEvent], bool],
    *,
    timeout_s: float = 10.0,
) -> list[SessionEvent]:
    """Events up to and including the first that is of type ``done`` (or satisfies it)."""
    check = (lambda e: e.type == done) if isinstance(done, str) else done
    seen: list[SessionEvent] = []

    async def collect() -> list[SessionEvent]:
        async for event in session:
            seen.append(event)
            if check(event):
                return seen
        raise AssertionError(f"the session ended before {done!r}: {[e.type for e in seen]}")

    return await asyncio.wait_for(collect(), timeout_s)


async def drain(session: RealtimeSession, *, timeout_s: float = 10.0) -> list[SessionEvent]:
    """Every event until the iteration ends."""

    async def collect() -> list[SessionEvent]:
        return [event async for event in session]

    return await asyncio.wait_for(collect(), timeout_s)


Handler = Callable[[ServerConnection], Awaitable[None]]


@asynccontextmanager
async def peer(handler: Handler) -> AsyncIterator[str]:
    """A bare websocket server on loopback running ``handler`` per connection (for behaviour the
    local realtime server does not have: dying, sending garbage). Yields its URL."""
    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/v1/realtime"


def session_created() -> str:
    return json.dumps(
        {
            "type": "session.created",
            "event_id": "event_1",
            "session": {"type": "realtime", "object": "realtime.session", "id": "sess_1"},
        }
    )


@cache
def speech_pcm(text: str = "Hello, what is the weather like?") -> bytes:
    """Real speech, 24 kHz PCM16, made by the local server's own voice."""
    from voxwire.server.engines.tts import Voice

    voice = Voice.load()
    try:
        return voice.speak_blocking(text, "alloy", 1.0, "audio/pcm").audio
    finally:
        voice.close()


async def poll(condition: Callable[[], bool], *, timeout_s: float = 10.0) -> None:
    """Wait until ``condition()`` holds (for state no event announces, like a ring's fill)."""
    for _ in range(int(timeout_s / 0.005)):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {condition}")


def all_done(session: RealtimeSession) -> bool:
    """No response in progress, none requested, none held."""
    protocol = session.protocol
    return protocol.can_create_response and protocol.held_response_creates == 0


async def settle(session: RealtimeSession, *, timeout_s: float = 15.0) -> list[SessionEvent]:
    """Events until every response the session asked for has run."""
    return await until(
        session,
        lambda e: isinstance(e, ResponseDoneEvent) and all_done(session),
        timeout_s=timeout_s,
    )


class ScriptedTranscriber:
    """The local server's transcription engine for tests: says the next scripted text for each
    committed turn (the audio is real speech; what it says is the test's)."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)

    async def transcribe(
        self, audio: bytes, format_type: str, *, language: str | None, prompt: str | None
    ) -> Transcript:
        return Transcript(pieces=(self.texts.pop(0),), audio_s=len(audio) / (2 * RATE_HZ))
