"""Echo cancellation end to end against the local server: the agent's reply plays into a
virtual speaker whose output reaches the session's microphone through a simulated room (echo
louder than a user would be). With ``EchoCancelledInput`` in front of the microphone, the
session's local barge-in never hears the agent; without it, the agent interrupts itself."""

from __future__ import annotations

import asyncio
import contextlib

import numpy as np
import pytest

from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import AudioInterruptedEvent
from voxwire.audio import BargeInDetector, EchoCancelledInput, MemoryOutput, SteppedInput
from voxwire.audio.room import RoomPath, room_impulse_response

from .helpers import AUDIO_MANUAL, RATE_HZ, SLOW, poll, run, serving

pytest.importorskip("voxwire.server.engines.tts")


def agent_turn(cancel_echo: bool) -> tuple[int, list[AudioInterruptedEvent]]:
    """Play 4 s of the agent's reply through the room; returns (local barge-ins, cuts)."""

    async def body() -> tuple[int, list[AudioInterruptedEvent]]:
        speaker = MemoryOutput(RATE_HZ, period_ms=20.0, latency_ms=30.0, prebuffer_ms=0.0)
        room = RoomPath(room_impulse_response(RATE_HZ, 0.45, seed=4), gain=0.7)
        mic = SteppedInput(RATE_HZ)
        source = EchoCancelledInput(mic, speaker.output, now=speaker.now) if cancel_echo else mic
        # With the canceller, the session's own detector for it (local_barge_in=True); without,
        # one with the same thresholds.
        detector = True if cancel_echo else BargeInDetector.behind_echo_canceller(RATE_HZ)
        cuts: list[AudioInterruptedEvent] = []
        async with (
            serving(tts="espeak", pacing=SLOW) as server,
            RealtimeSession(
                url=server.url(),
                config=AUDIO_MANUAL,  # no server VAD: any interruption is the local detector's
                audio_input=source,
                local_barge_in=detector,
                audio_output=speaker,
            ) as session,
        ):

            async def collect() -> None:
                async for event in session:
                    if isinstance(event, AudioInterruptedEvent):
                        cuts.append(event)

            collector = asyncio.create_task(collect())
            await session.send_message("tell me a story")
            await poll(lambda: speaker.output.ring.readable_samples >= RATE_HZ)
            for _ in range(200):  # 4 s of the reply
                heard = speaker.advance(1)
                echo = room.process(heard)
                mic.feed(np.clip(np.round(echo), -32768, 32767).astype(np.int16))
                await asyncio.sleep(0.001)  # let the session take the frames
            microphone = session.microphone
            assert microphone is not None
            assert microphone.pipeline is not None
            assert microphone.pipeline.barge_in is not None
            assert microphone.pipeline.barge_in.echo_gate_dbfs == -50.0  # no -30 dBFS gate
            # the level rule by default (the residual-echo gate is opt-in: docs/audio-io.md)
            assert microphone.pipeline.barge_in.residual_echo is None
            barge_ins = microphone.barge_ins
            collector.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await collector
        return barge_ins, cuts

    return run(body(), timeout_s=60.0)


def test_with_the_canceller_the_agent_is_not_cut_by_its_own_echo() -> None:
    barge_ins, cuts = agent_turn(cancel_echo=True)
    assert barge_ins == 0
    assert cuts == []


def test_without_it_the_agent_interrupts_itself() -> None:
    barge_ins, cuts = agent_turn(cancel_echo=False)
    assert barge_ins >= 1
    assert cuts
