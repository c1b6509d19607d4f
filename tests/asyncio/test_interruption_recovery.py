"""False-interruption recovery end to end against the local server (server VAD on): a local
onset pauses the agent; a cough that server VAD does not take for a turn is recovered (the agent
plays on from where it paused, nothing truncated); a short "okay" the server's VAD does take
for a turn is recovered and gets no reply; a real line is cut exactly at the pause point and
answered once; a turn spoken while the agent is silent is answered by the session."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import numpy as np
import pytest

from voxwire.agents import GuardrailResult, RealtimeAgent, input_guardrail
from voxwire.asyncio import (
    AudioInterruptedEvent,
    InterruptionRecoveredEvent,
    RealtimeSession,
    ResponseStartedEvent,
    SessionEvent,
)
from voxwire.audio import BargeInDetector, FalseInterruptionFilter, MemoryOutput, SteppedInput
from voxwire.audio.room import cough
from voxwire.exceptions import ConfigurationError

from .helpers import RATE_HZ, SLOW, ScriptedTranscriber, poll, run, serving, speech_pcm

pytest.importorskip("voxwire.server.engines.tts")

VAD = {"audio": {"input": {"turn_detection": {"type": "server_vad", "silence_duration_ms": 300}}}}
TRANSCRIBED = {
    "audio": {
        "input": {
            "transcription": {"model": "whisper-1"},
            "turn_detection": {"type": "server_vad", "silence_duration_ms": 300},
        }
    }
}
CHECKED: list[str] = []


@input_guardrail
def no_secrets(agent: RealtimeAgent, text: str) -> GuardrailResult:
    CHECKED.append(text)
    return GuardrailResult("secret" in text.lower())


GUARDED = RealtimeAgent(name="guarded", instructions="Answer.", input_guardrails=[no_secrets])


def _blocks(pcm: np.ndarray[Any, Any]) -> list[np.ndarray[Any, Any]]:
    n = 480
    padded = np.concatenate([pcm, np.zeros(-len(pcm) % n, dtype=np.int16)])
    return [padded[i : i + n] for i in range(0, len(padded), n)]


def interrupted_by(
    sound: np.ndarray[Any, Any],
    *,
    agent_speaks: bool = True,
    generated: bool = False,
    agent: RealtimeAgent | None = None,
    transcripts: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The agent speaks (unless not ``agent_speaks``); after 1 s the microphone hears ``sound``
    then silence for 3 s. ``generated``: the sound comes once the server finished the agent's
    response (its audio still plays: the server would answer a turn at once). With
    ``transcripts``, the server transcribes the user's turns as these texts and the filter waits
    for them."""

    async def body() -> dict[str, Any]:
        speaker = MemoryOutput(RATE_HZ, period_ms=20.0, latency_ms=0.0, prebuffer_ms=0.0)
        mic = SteppedInput(RATE_HZ)
        transcriber = ScriptedTranscriber(*transcripts) if transcripts else None
        events: list[SessionEvent] = []
        result: dict[str, Any] = {}
        async with (
            serving(tts="espeak", pacing=SLOW, transcriber=transcriber) as server,
            RealtimeSession(
                agent,
                url=server.url(),
                config=TRANSCRIBED if transcripts else VAD,
                audio_input=mic,
                local_barge_in=BargeInDetector(
                    RATE_HZ, echo_min_speech_ms=100, echo_gate_dbfs=-60.0
                ),
                false_interruption=FalseInterruptionFilter(
                    window_ms=800,
                    min_turn_ms=600,
                    wait_for_transcript=bool(transcripts),
                    vad_silence_ms=300,
                ),
                audio_output=speaker,
            ) as session,
        ):

            async def collect() -> None:
                async for event in session:
                    events.append(event)

            collector = asyncio.create_task(collect())
            if agent_speaks:
                await session.send_message("tell me a story")
                await poll(lambda: speaker.output.ring.readable_samples >= 3 * RATE_HZ)
            if generated:
                await poll(lambda: not session.protocol.responses_in_progress, timeout_s=30.0)
            silence = np.zeros(480, dtype=np.int16)
            blocks = [silence] * 50 + _blocks(sound) + [silence] * 150
            microphone = session.microphone
            assert microphone is not None
            for block in blocks:
                speaker.advance(1)
                mic.feed(block)
                await asyncio.sleep(0.004)  # real-time-ish for the server's VAD and timers
                if microphone.barge_ins and "onset" not in result:
                    result["onset"] = {
                        r.item_id: r.played_samples for r in speaker.output.clock.items()
                    }
            await asyncio.sleep(0.5)
            for _ in range(100):  # an answer to the user's turn plays out
                speaker.advance(1)
                await asyncio.sleep(0.004)
            result["played_total"] = speaker.played_samples
            result["user_turns"] = sum(  # spoken turns: without the "tell me a story"
                1 for item in session.history if item.role == "user" and item.type == "message"
            ) - int(agent_speaks)
            result["wire_create_response"] = session.protocol.session is not None and (
                session.protocol.session.to_wire()["audio"]["input"]["turn_detection"].get(
                    "create_response"
                )
            )
            collector.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await collector
        result["recovered"] = [e for e in events if isinstance(e, InterruptionRecoveredEvent)]
        result["cuts"] = [e for e in events if isinstance(e, AudioInterruptedEvent)]
        result["responses"] = sum(1 for e in events if isinstance(e, ResponseStartedEvent))
        return result

    return run(body(), timeout_s=90.0)


def test_a_cough_pauses_the_agent_and_it_plays_on_from_the_pause() -> None:
    noise = np.clip(cough(RATE_HZ, seed=3) * 16_000, -32768, 32767).astype(np.int16)
    result = interrupted_by(noise)
    assert "onset" in result, "the local detector did not hear the cough"
    assert len(result["recovered"]) == 1
    assert result["recovered"][0].reason in {"unconfirmed", "short"}
    assert result["cuts"] == []
    assert result["responses"] == 1  # the story only


def test_a_backchannel_the_server_takes_for_a_turn_is_resumed_over_and_not_answered() -> None:
    okay = np.frombuffer(speech_pcm("Okay."), dtype="<i2").astype(np.int16)
    result = interrupted_by(okay, generated=True)
    assert "onset" in result
    assert result["user_turns"] == 1, "the server's VAD did not commit the okay as a turn"
    assert [r.reason for r in result["recovered"]] == ["short"]
    assert result["cuts"] == []
    # The server answers no turn by itself (the session holds create_response off) and the
    # session does not answer a recovered one: the story is the only response.
    assert result["wire_create_response"] is False
    assert result["responses"] == 1


def test_with_input_guardrails_a_recovered_okay_passes_them_and_is_still_not_answered() -> None:
    # The guardrail runner answers spoken turns when the agent has input guardrails; it must
    # skip the one the session resumed over.
    CHECKED.clear()
    okay = np.frombuffer(speech_pcm("Okay."), dtype="<i2").astype(np.int16)
    result = interrupted_by(okay, generated=True, agent=GUARDED, transcripts=("okay",))
    assert CHECKED == ["tell me a story", "okay"]  # both checks ran and passed
    assert [(r.reason, r.transcript) for r in result["recovered"]] == [("filler", "okay")]
    assert result["cuts"] == []
    assert result["responses"] == 1


def test_a_turn_while_the_agent_is_silent_is_answered_by_the_session() -> None:
    line = np.frombuffer(speech_pcm("What time do you open tomorrow?"), dtype="<i2")
    result = interrupted_by(line.astype(np.int16), agent_speaks=False)
    assert result["user_turns"] == 1
    assert result["recovered"] == []
    assert result["cuts"] == []
    assert result["responses"] == 1  # the session's answer


def test_a_real_line_is_cut_exactly_at_the_pause_point() -> None:
    line = np.frombuffer(
        speech_pcm("Wait, stop, I want to ask about something else entirely now."),
        dtype="<i2",
    ).astype(np.int16)
    result = interrupted_by(line)
    assert "onset" in result
    assert result["recovered"] == []
    (cut,) = [c for c in result["cuts"] if c.played_ms is not None]
    heard_at_onset = result["onset"][cut.item_id]
    onset_ms = heard_at_onset * 1000 // RATE_HZ
    # The pause takes effect at the device's next pull (one 20 ms period) and fades over 4 ms;
    # nothing after it counts as heard, so the cut is the pause point.
    assert 0 <= cut.played_ms - onset_ms <= 24
    assert result["responses"] == 2  # the story, then one answer to the line


def test_recovery_needs_local_barge_in_an_audio_output_and_server_vad() -> None:
    mic = SteppedInput(RATE_HZ)
    speaker = MemoryOutput(RATE_HZ)
    decider = FalseInterruptionFilter()
    with pytest.raises(ConfigurationError, match="local_barge_in"):
        RealtimeSession(audio_input=mic, audio_output=speaker, false_interruption=decider)
    with pytest.raises(ConfigurationError, match="turn detection"):
        RealtimeSession(
            config={"audio": {"input": {"turn_detection": None}}},
            audio_input=mic,
            audio_output=speaker,
            local_barge_in=True,
            false_interruption=decider,
        )
    RealtimeSession(  # server VAD by default: accepted
        audio_input=mic, audio_output=speaker, local_barge_in=True, false_interruption=decider
    )
