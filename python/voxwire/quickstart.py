"""``voxwire quickstart``: one spoken turn with a voice agent, offline by default.

What happens: the local realtime server starts on a free loopback port (or, with ``--url``, an
external Realtime endpoint is used instead: a separate ``voxwire serve`` or any compatible
service); the user's question — a WAV file given with ``--wav`` (any rate, mixed down to mono and
resampled to 24 kHz by the Rust core) or one synthesised with the server's own voice — is streamed
to it as 20 ms PCM16 chunks; the server's VAD detects the turn, commits it and answers with
speech. The session events and transcripts are printed as they happen, and the reply's audio is
written to a WAV file. The client side is ``RealtimeSession``, the same session an application
uses against the hosted service.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from voxwire.agents import RealtimeAgent
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import (
    AssistantTranscriptDoneEvent,
    AudioEvent,
    CloseEvent,
    ErrorEvent,
    ResponseDoneEvent,
    ResponseStartedEvent,
    UserInputTranscribedEvent,
    UserStateChangedEvent,
)
from voxwire.audio import Resampler, read_wav, write_wav
from voxwire.server import NoVoiceError, Pacing, RealtimeServer, Scenario

USER_TEXT = "Hello there. Can you hear me?"
REPLY = (
    "Hello! I am the local voxwire server. I heard you, and I am answering with no network at all."
)
RATE_HZ = 24000
#: What to do when no voice can speak the user's words (``voxwire quickstart`` and ``demo``; the
#: server's --no-audio does not help them: their input is speech).
USER_VOICE_HINT: Final = (
    "the user's lines are spoken with a local voice, and none is installed: "
    "pip install 'voxwire[server]' (espeak-ng) or 'voxwire[hibari]'"
)
#: The same for the in-process server's answers (``--url`` uses another endpoint's voice).
SERVER_VOICE_HINT: Final = (
    "the local server answers with a local voice, and none is installed: "
    "pip install 'voxwire[server]' (espeak-ng) or 'voxwire[hibari]', or talk to another "
    "endpoint with --url"
)
CHUNK_SAMPLES = RATE_HZ // 50
#: After the last chunk, how long (wall clock) the server's VAD may take to report speech
#: before the turn is given up: a silent or empty WAV never starts a turn.
HEARD_TIMEOUT_S: Final = 10.0
#: How long the response may take once the user's speech started (wall clock).
ANSWER_TIMEOUT_S: Final = 60.0


class TurnError(Exception):
    """The turn could not be completed (no speech heard, no answer in time)."""


@dataclass
class TurnResult:
    """What the quickstart observed, in order."""

    timeline: list[tuple[float, str]] = field(default_factory=list)
    transcript: str = ""
    reply_pcm: list[bytes] = field(default_factory=list)
    status: str = ""
    failure: str | None = None
    """Why the response did not complete (the server's error message or reason)."""
    heard: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the server's VAD heard the user start speaking."""

    @property
    def reply_samples(self) -> int:
        return sum(len(b) for b in self.reply_pcm) // 2


def to_session_rate(pcm: npt.NDArray[np.int16], rate_hz: int) -> npt.NDArray[np.int16]:
    """Mono PCM16 at any rate -> 24 kHz, the Realtime session's PCM rate."""
    if rate_hz == RATE_HZ:
        return pcm
    r = Resampler(rate_hz, RATE_HZ)
    return np.concatenate([r.process(pcm), r.flush()])


def user_utterance(wav: Path | None = None) -> npt.NDArray[np.int16]:
    """The user's words as 24 kHz PCM16 (from ``wav``, or synthesised), with silence around them
    so the server's VAD sees where the turn starts and ends."""
    if wav is not None:
        audio = read_wav(wav)
        pcm = to_session_rate(audio.pcm, audio.rate_hz)
    else:
        # Imported here: with --wav and --url the server's voice is not needed at all.
        from voxwire.server.engines.tts import Voice

        try:
            voice = Voice.load("auto")
        except NoVoiceError as exc:
            raise NoVoiceError(USER_VOICE_HINT, exc.reason) from None
        try:
            spoken = voice.speak_blocking(USER_TEXT, "alloy", 1.0, "audio/pcm")
        finally:
            voice.close()
        pcm = np.frombuffer(spoken.audio, dtype="<i2").astype(np.int16)
    silence_before = np.zeros(RATE_HZ // 2, np.int16)
    silence_after = np.zeros(RATE_HZ, np.int16)
    return np.concatenate([silence_before, pcm, silence_after])


@contextlib.asynccontextmanager
async def endpoint(url: str | None, scenario: Scenario, pacing: Pacing) -> AsyncIterator[str]:
    """``url``, or the URL of a local server answering from ``scenario``, running for the
    duration (shared with ``voxwire demo``)."""
    if url is not None:
        yield url
        return
    server = RealtimeServer(scenario=scenario, pacing=pacing)
    try:
        try:
            await server.start()
        except NoVoiceError as exc:
            # The server's own advice (--no-audio) does not fit here: these turns are spoken.
            raise NoVoiceError(SERVER_VOICE_HINT, exc.reason) from None
        yield server.url("gpt-realtime")
    finally:
        await server.close()


# A pause between the user's words must not end the turn early.
_CONFIG: Final[dict[str, Any]] = {
    "audio": {"input": {"turn_detection": {"type": "server_vad", "silence_duration_ms": 600}}}
}


async def run_turn(
    pace: float = 4.0,
    *,
    wav: Path | None = None,
    url: str | None = None,
    report: Callable[[str], None] | None = None,
) -> TurnResult:
    """One spoken turn; every step goes to ``report`` (with its time) as it happens."""
    result = TurnResult()
    audio = user_utterance(wav)
    scenario = Scenario.from_mapping({"rules": [], "fallback": REPLY})
    async with endpoint(url, scenario, Pacing(audio_pace=pace)) as url_in_use:
        t0 = time.perf_counter()

        def note(what: str) -> None:
            at = time.perf_counter() - t0
            result.timeline.append((at, what))
            if report is not None:
                report(f"  {at * 1000:8.1f} ms  {what}")

        session = RealtimeSession(
            RealtimeAgent(name="quickstart", instructions="Answer briefly."),
            url=url_in_use,
            config=_CONFIG,
            wait_for_session_updated=True,
        )
        async with session:
            note(f"session connected and configured ({session.url.split('?')[0]})")

            async def speak() -> None:
                note(f"streaming {len(audio) / RATE_HZ:.2f} s of user speech in 20 ms chunks")
                # pace 0: as fast as possible (as the server's Pacing), yielding between chunks.
                period_s = 0.02 / pace if pace > 0 else 0.0
                for i in range(0, len(audio), CHUNK_SAMPLES):
                    await session.send_audio(audio[i : i + CHUNK_SAMPLES])
                    await asyncio.sleep(period_s)

            source = "in the WAV" if wav is not None else "in the user's turn"
            await together(speak(), _follow(session, note, result), result.heard, source)
    return result


async def together(
    speak: Coroutine[Any, Any, None],
    follow: Coroutine[Any, Any, None],
    heard: asyncio.Event | None = None,
    source: str = "in the user's turn",
) -> None:
    """Stream the user's speech while following the turn, until the turn is followed to its
    end. A failure of the speaking side is raised here, not left in its task (where the turn
    would wait for speech that never comes). Every wait is bounded: once all speech is sent,
    the server's VAD has :data:`HEARD_TIMEOUT_S` to hear it (``heard``, when given), and then
    the response :data:`ANSWER_TIMEOUT_S` to end; :class:`TurnError` says which did not come."""
    speaker = asyncio.create_task(speak)
    follower = asyncio.create_task(follow)
    try:
        done, _ = await asyncio.wait({speaker, follower}, return_when=asyncio.FIRST_COMPLETED)
        if speaker in done:
            speaker.result()  # raises what the speaking side failed with
            if heard is not None:
                no_speech = f"no speech heard {source}"
                await _bounded(follower, heard.wait(), HEARD_TIMEOUT_S, no_speech)
            await _bounded(
                follower,
                asyncio.shield(follower),
                ANSWER_TIMEOUT_S,
                f"the server did not answer within {ANSWER_TIMEOUT_S:.0f} s",
            )
        else:
            follower.result()
    finally:
        for task in (speaker, follower):
            task.cancel()
        await asyncio.gather(speaker, follower, return_exceptions=True)


async def _bounded(
    follower: asyncio.Task[None], waited: Awaitable[Any], timeout_s: float, what: str
) -> None:
    """Wait for ``waited`` (or the follower's end) for at most ``timeout_s``: else TurnError."""
    waiter = asyncio.ensure_future(waited)
    try:
        done, _ = await asyncio.wait(
            {waiter, follower}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
    if follower in done:
        follower.result()
    elif not done:
        raise TurnError(what)


async def _follow(
    session: RealtimeSession, note: Callable[[str], None], result: TurnResult
) -> None:
    """Note the turn's events as they come, and keep the reply, until the response is done."""
    async for event in session:
        if isinstance(event, UserStateChangedEvent):
            if event.new_state == "speaking":
                result.heard.set()
                note("user started speaking (server VAD)")
            else:
                note("user stopped speaking (server VAD): the turn is committed")
        elif isinstance(event, UserInputTranscribedEvent) and event.is_final:
            note(f'user said: "{event.transcript}"')
        elif isinstance(event, ResponseStartedEvent):
            note("response started")
        elif isinstance(event, AudioEvent):
            if not result.reply_pcm:
                note("first reply audio")
            result.reply_pcm.append(event.pcm)
        elif isinstance(event, AssistantTranscriptDoneEvent):
            result.transcript = event.transcript
            note(f'assistant said: "{event.transcript}"')
        elif isinstance(event, ErrorEvent):
            note(f"error: {event.message}")
        elif isinstance(event, CloseEvent):
            note(f"connection closed ({event.reason}) {event.detail}".rstrip())
            return
        elif isinstance(event, ResponseDoneEvent):
            result.status = event.status or ""
            result.failure = event.failure
            because = f": {result.failure}" if result.failure else ""
            note(f"response done ({result.status}{because})")
            return


def main(out: Path, pace: float, *, wav: Path | None = None, url: str | None = None) -> int:
    try:
        result = asyncio.run(run_turn(pace, wav=wav, url=url, report=print))
    except TurnError as exc:
        print(f"the turn did not complete: {exc}")
        return 1
    if result.status != "completed" or not result.reply_pcm:
        because = f": {result.failure}" if result.failure else ""
        print(f"the turn did not complete (status {result.status!r}{because})")
        return 1
    pcm = np.frombuffer(b"".join(result.reply_pcm), dtype="<i2").astype(np.int16)
    write_wav(out, pcm, RATE_HZ)
    print(f"{result.reply_samples / RATE_HZ:.2f} s of reply audio written to {out}")
    return 0
