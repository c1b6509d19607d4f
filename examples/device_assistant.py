"""A voice assistant on this machine's microphone and speaker, with local barge-in.

Speak; server VAD ends your turn and the agent answers through the speaker. Talk over it and it
stops at once: the session's local barge-in detector hears you on the microphone's own thread
(no round trip to the server), cuts playback and truncates the agent's reply at what the
speaker had played. Ctrl-C ends it.

    pip install "voxwire[devices]"                 # and: apt install libportaudio2
    python examples/device_assistant.py            # the hosted service (OPENAI_API_KEY)

    voxwire serve &                                # offline: the local server's voice and VAD
    python examples/device_assistant.py --url ws://127.0.0.1:8765/v1/realtime

``assist()`` takes any microphone and speaker: the tests run it with a WAV file as the
microphone and a WAV-writing virtual speaker (``voxwire.audio.WavFileInput`` /
``WavFileOutput``), against the local server.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Callable

from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import RealtimeSession, SessionEvent
from voxwire.audio import MemoryOutput, SoundDeviceInput, SoundDeviceOutput, WavFileInput
from voxwire.exceptions import VoxwireError


@function_tool
def what_time_is_it() -> str:
    """The local time, for questions about the time."""
    return time.strftime("%H:%M")


AGENT = RealtimeAgent(
    name="Assistant",
    instructions="You are a friendly voice assistant. Answer in a sentence or two.",
    tools=[what_time_is_it],
)

# Server VAD ends the user's turn after 500 ms of silence and answers by itself.
CONFIG = {
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


async def assist(
    microphone: SoundDeviceInput | WavFileInput,
    speaker: SoundDeviceOutput | MemoryOutput,
    *,
    url: str | None = None,
    until: Callable[[SessionEvent], bool] = lambda event: False,
) -> RealtimeSession:
    """Run the assistant until ``until(event)`` is true (or the connection ends); returns the
    closed session (``session.microphone.barge_ins``, ``session.history``)."""
    with speaker:  # closed (stopped) at the end
        speaker.start()  # the speaker plays whatever the session pushes into speaker.output
        session = RealtimeSession(
            AGENT,
            url=url,
            config=CONFIG,
            audio_input=microphone,  # started and stopped by the session
            audio_output=speaker,  # truncations are what this speaker played
            local_barge_in=True,
        )
        async with session:
            async for event in session:
                show(event)
                if until(event):
                    break
    return session


def show(event: SessionEvent) -> None:
    """One line for what a person following the conversation wants to see."""
    if event.type == "user_state_changed":
        print(f"[you are {event.new_state}]", flush=True)
    elif event.type == "assistant_transcript_done":
        print(f"agent: {event.transcript}", flush=True)
    elif event.type == "audio_interrupted":
        heard = "nothing" if event.played_ms is None else f"{event.played_ms} ms"
        print(f"[interrupted: you heard {heard} of it]", flush=True)
    elif event.type == "tool_end":
        print(f"[tool {event.name} -> {event.output}]", flush=True)
    elif event.type in ("error", "close"):
        print(f"[{event.type}] {event}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a Realtime endpoint (default: the hosted service)")
    parser.add_argument("--input", help="microphone: index, name or part of a name")
    parser.add_argument("--output", help="speaker: index, name or part of a name")
    args = parser.parse_args()
    if args.url is None and not os.environ.get("OPENAI_API_KEY"):
        # Said before the devices open: it is the first thing to fix.
        parser.exit(
            2,
            f"{parser.prog}: the hosted service needs OPENAI_API_KEY; or run offline: "
            "voxwire serve & and --url ws://127.0.0.1:8765/v1/realtime\n",
        )

    def device(spec: str | None) -> int | str | None:
        return int(spec) if spec is not None and spec.isdigit() else spec

    try:
        microphone = SoundDeviceInput(device(args.input))
        speaker = SoundDeviceOutput(device(args.output))
        asyncio.run(assist(microphone, speaker, url=args.url))
    except VoxwireError as exc:  # no device, no connection: what is wrong, in one line
        parser.exit(1, f"{parser.prog}: {exc}\n")
    except KeyboardInterrupt:
        print("bye")


if __name__ == "__main__":
    main()
