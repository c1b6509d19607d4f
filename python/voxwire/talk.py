"""``voxwire talk``: talk with a voice agent through the microphone and the speaker.

The session runs the microphone (:class:`~voxwire.audio.SoundDeviceInput`, ``audio_input=``)
into the hosted service — or any Realtime endpoint given with ``--url``, such as a
``voxwire serve`` — and plays the agent into the speaker
(:class:`~voxwire.audio.SoundDeviceOutput`, ``audio_output=``), so an interruption truncates
the agent's item at what the speaker had played. The live state, the transcripts, every
interruption with its truncation point and a metrics line per turn are printed by the same
:class:`~voxwire.console.Console` as ``voxwire demo``. Ctrl-C (SIGINT) or SIGTERM ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

from voxwire.agents import RealtimeAgent
from voxwire.asyncio import RealtimeSession
from voxwire.audio import EchoCancelledInput, SoundDeviceInput, SoundDeviceOutput, same_device
from voxwire.console import Console
from voxwire.exceptions import AudioDeviceError

__all__ = ["TalkOptions", "main"]

AGENT = RealtimeAgent(
    name="Assistant",
    instructions="You are a friendly voice assistant. Answer briefly, in a sentence or two.",
)

# Server VAD ends the user's turn after half a second of silence, answers and lets the user
# interrupt the agent.
_CONFIG = {
    "audio": {
        "input": {
            "turn_detection": {
                "type": "server_vad",
                "silence_duration_ms": 500,
                "create_response": True,
                "interrupt_response": True,
            }
        }
    }
}


@dataclass(frozen=True)
class TalkOptions:
    """What ``voxwire talk`` was asked for: devices by index, name or part of a name."""

    url: str | None = None
    input: str | None = None
    output: str | None = None
    json: bool = False
    aec: bool | None = None
    """Cancel the speaker's echo in the microphone (:class:`~voxwire.audio.EchoCancelledInput`);
    ``None``: when the microphone and the speaker are one device's
    (:func:`~voxwire.audio.same_device`)."""


def _device(spec: str | None) -> int | str | None:
    """``"3"`` is device index 3; anything else a name (or part of one)."""
    return int(spec) if spec is not None and spec.isdigit() else spec


async def talk(options: TalkOptions) -> None:
    """Talk until SIGINT or SIGTERM, or until the connection ends."""
    microphone = SoundDeviceInput(_device(options.input))
    speaker = SoundDeviceOutput(_device(options.output))
    started = time.monotonic()
    console = Console(lambda: time.monotonic() - started, json=options.json, states=True)
    aec = same_device(microphone, speaker) if options.aec is None else options.aec
    # Real devices misreport their latencies and their clocks drift: search the echo's delay.
    source = (
        # The delay search on: over 120 unseen rooms (benches/RESULTS.md, "Echo cancellation over
        # unseen rooms") it gives 35 dB median / 17 dB worst against 33 / 6 without it.
        EchoCancelledInput(microphone, speaker.output, delay_search=True) if aec else microphone
    )
    session = RealtimeSession(
        AGENT, url=options.url, config=_CONFIG, audio_input=source, audio_output=speaker
    )
    stop = asyncio.Event()
    with _stopped_by_signals(stop), speaker:
        speaker.start()
        async with session:
            console.note(
                "session",
                f"talking to {session.url.split('?')[0]}: microphone {microphone.device_name!r} "
                f"at {microphone.rate_hz} Hz, speaker {speaker.device_name!r} at "
                f"{speaker.rate_hz} Hz; {_echo_note(aec, options.aec)}; Ctrl-C ends",
                url=session.url.split("?")[0],
                microphone=microphone.device_name,
                speaker=speaker.device_name,
            )
            follower = asyncio.create_task(_follow(session, console))
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait({follower, stopping}, return_when=asyncio.FIRST_COMPLETED)
            for task in (follower, stopping):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        metrics = session.metrics
        console.note(
            "summary",
            f"{metrics.responses} responses, {metrics.interruptions} interruptions, "
            f"{speaker.output.underruns} underruns; tokens {metrics.usage.input_tokens} in / "
            f"{metrics.usage.output_tokens} out",
            responses=metrics.responses,
            interruptions=metrics.interruptions,
            underruns=speaker.output.underruns,
        )


def _echo_note(on: bool, asked: bool | None) -> str:
    why = "one device's microphone and speaker" if asked is None else "asked"
    if not on:
        why = "separate devices" if asked is None else "--no-aec"
    return f"echo cancellation {'on' if on else 'off'} ({why})"


@contextlib.contextmanager
def _stopped_by_signals(stop: asyncio.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop``. Plain handlers, not ``loop.add_signal_handler``: that
    one learns of a signal from a byte in the loop's wake-up socket, which a device thread
    calling ``call_soon_threadsafe`` fast enough (ALSA's unpaced null device) can fill, and the
    byte — the signal — is then lost. A plain handler runs on the main thread regardless."""
    loop = asyncio.get_running_loop()

    def handler(signum: int, frame: object) -> None:
        loop.call_soon_threadsafe(stop.set)

    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.signal(signum, handler) for signum in signals}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


async def _follow(session: RealtimeSession, console: Console) -> None:
    async for event in session:
        console.event(event)


def main(options: TalkOptions) -> int:
    """Run :func:`talk`; a missing key, PortAudio or device is exit status 2 with what to do."""
    if options.url is None and not os.environ.get("OPENAI_API_KEY"):
        print(
            "voxwire talk: OPENAI_API_KEY is not set: export your key to talk to the hosted "
            "service, or name another endpoint with --url (for example a local "
            "`voxwire serve`: --url ws://127.0.0.1:8765/v1/realtime)",
            file=sys.stderr,
        )
        return 2
    try:
        asyncio.run(talk(options))
    except AudioDeviceError as exc:
        print(f"voxwire talk: {exc}", file=sys.stderr)
        return 2
    return 0
