"""``voxwire demo --room speakerphone``: a speakerphone in a simulated room, with and without
echo cancellation (``--aec``).

The agent's two replies (espeak-ng, the local server's voice) play through a virtual speaker
(:class:`~voxwire.audio.MemoryOutput`, 30 ms output latency, pulled period by period); what it
plays reaches a virtual microphone through a room impulse response (RT60 0.45 s) 6 dB louder
than the user. During the first reply the user coughs; 2.5 s into the second they say a line
over it. The microphone (cleaned by :class:`~voxwire.audio.EchoCancelledInput` with ``--aec``)
feeds the local barge-in detector; an onset *pauses* the output, and a
:class:`~voxwire.audio.FalseInterruptionFilter` resumes or cuts it. The server VAD's
confirmation is simulated here by webrtcvad as the local server runs it at threshold 0.75
(aggressiveness 3; three 20 ms frames to start, 500 ms of silence to stop) on the same
microphone; no session or network is involved
— the session-side wiring is not built yet (docs/audio-io.md).

Printed: onsets, pauses and what each became, whether the cut is exactly at the pause point,
echo reduction and the canceller's CPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from voxwire.audio import (
    BargeInDetector,
    Decision,
    EchoCancelledInput,
    FalseInterruptionFilter,
    MemoryInput,
    MemoryOutput,
    Resampler,
)
from voxwire.audio.room import RoomPath, cough, erle_db, level_dbfs, room_impulse_response

__all__ = ["RoomReport", "run_room"]

RATE_HZ = 24_000
PERIOD_MS = 20.0
AGENT_LINES = (
    "Your table for four is booked for eight tonight, by the window, and I have added a note "
    "about the birthday cake you mentioned.",
    "The restaurant asks guests to arrive ten minutes early, and parking is free after six in "
    "the garage across the street.",
)
USER_LINE = "Sorry, can we make it seven instead?"
COUGH_AT_S = 2.5  # into the first reply
USER_AT_S = 2.5  # into the second reply


@dataclass
class RoomReport:
    """What happened in the room."""

    aec: bool
    onsets_ms: list[float] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    cut_exact: bool | None = None
    cut_ms: float | None = None
    replies_finished: int = 0
    erle_db: float | None = None
    aec_cpu_s_per_min: float | None = None

    def lines(self) -> list[str]:
        out = [f"speakerphone room, echo cancellation {'on' if self.aec else 'off'}"]
        out.append(
            f"  local barge-in onsets at (ms of the run): {[round(t) for t in self.onsets_ms]}"
        )
        for d in self.decisions:
            out.append(f"  paused; decided at {d.at_ms:.0f} ms: {d.action} ({d.reason})")
        out.append(f"  agent replies played to the end: {self.replies_finished} of 2")
        if self.cut_ms is not None:
            exact = "exactly at the pause point" if self.cut_exact else "NOT at the pause point"
            out.append(f"  reply cut {exact}, {self.cut_ms:.0f} ms into it")
        if self.erle_db is not None:
            out.append(f"  echo reduction while the agent spoke alone: {self.erle_db:.1f} dB")
        if self.aec_cpu_s_per_min is not None:
            out.append(f"  canceller CPU: {self.aec_cpu_s_per_min:.2f} s per minute of audio")
        return out


def _speak(text: str, voice: str) -> npt.NDArray[np.int16]:
    from voxwire.server.engines.tts import EspeakEngine

    spoken = EspeakEngine.shared().synthesize(text, voice)
    return Resampler(spoken.rate_hz, RATE_HZ).process(spoken.pcm)


class _Room:
    def __init__(self, aec: bool, agent_dbfs: float) -> None:
        self.speaker = MemoryOutput(RATE_HZ, period_ms=PERIOD_MS, latency_ms=30.0, prebuffer_ms=0)
        self.output = self.speaker.output
        gain = 10 ** ((-24.0 - agent_dbfs) / 20)  # echo at -24 dBFS: 6 dB over a -30 dBFS user
        self.path = RoomPath(room_impulse_response(RATE_HZ, 0.45, seed=5), gain=gain)
        self.mic: EchoCancelledInput | None = None
        if aec:
            self.mic = EchoCancelledInput(
                MemoryInput(np.zeros(1, dtype=np.int16), RATE_HZ), self.output, now=self.speaker.now
            )
            self.output.set_tap(self.mic.reference)
        self.local = BargeInDetector(RATE_HZ, echo_gate_dbfs=-50.0, echo_min_speech_ms=120)
        self.server = BargeInDetector(RATE_HZ, aggressiveness=3, min_speech_ms=60, hangover_ms=500)
        # The stand-in VAD says "stopped" after its 500 ms hangover, as the server does after
        # silence_duration_ms.
        self.recovery = FalseInterruptionFilter(
            wait_for_transcript=False, min_turn_ms=600, vad_silence_ms=500
        )
        self.cpu = 0.0
        self.echo: list[npt.NDArray[np.float64]] = []
        self.cleaned: list[npt.NDArray[np.float64]] = []

    def now_ms(self) -> float:
        return self.speaker.now() * 1000

    def step(self, near: npt.NDArray[np.float64], report: RoomReport) -> Decision | None:
        heard = self.speaker.advance(1)
        echo = self.path.process(heard)
        mic = np.clip(np.round(echo + near), -32768, 32767).astype(np.int16)
        if self.mic is not None:
            t0 = time.process_time()
            mic = self.mic.process(mic)
            self.cpu += time.process_time() - t0
        if not near.any():
            self.echo.append(echo)
            self.cleaned.append(mic.astype(np.float64))
        self.local.agent_speaking = self.output.playing or self.output.paused
        if self.local.process(mic) and self.local.agent_speaking:
            report.onsets_ms.append(self.now_ms())
            self.output.pause()
            self.recovery.onset(self.now_ms())
        was = self.server.in_speech
        self.server.process(mic)
        if self.recovery.pending:
            # The server's speech_started, as the session would see it: speech going on.
            if self.server.in_speech:
                return self.recovery.speech_started(self.now_ms())
            if was:
                return self.recovery.speech_stopped(self.now_ms())
        return self.recovery.poll(self.now_ms())


def run_room(aec: bool) -> RoomReport:
    """Play the scene; returns the figures (see the module docs)."""
    replies = [_speak(text, "alloy") for text in AGENT_LINES]
    active = np.concatenate(replies)
    room = _Room(aec, level_dbfs(active[np.abs(active) > 30]))
    report = RoomReport(aec)
    period = room.speaker.period_samples
    user = _speak(USER_LINE, "echo").astype(np.float64)
    user *= 10 ** ((-30.0 - level_dbfs(user)) / 20)
    burst = cough(RATE_HZ, seed=2) * 6000.0
    starts: dict[str, int] = {}  # ring position of each reply's first sample
    for turn, reply in enumerate(replies):
        item = f"item_{turn + 1}"
        starts[item] = room.output.ring.pushed_samples
        room.output.push(item, 0, reply.tobytes())
        room.output.end(item, 0)
        near_at = round((COUGH_AT_S if turn == 0 else USER_AT_S) * RATE_HZ)
        extra = burst if turn == 0 else user
        near = np.zeros(near_at + len(extra) + period)
        near[near_at : near_at + len(extra)] = extra
        silence = np.zeros(period)
        pos, cut_done = 0, False
        # Until the reply has been heard (or cut) and the user is done; at most a minute.
        while pos < 60 * RATE_HZ and (
            room.output.unheard_samples or room.output.paused or pos < len(near) - period
        ):
            block = near[pos : pos + period] if pos + period <= len(near) else silence
            decision = room.step(block, report)
            pos += period
            if decision is None:
                continue
            report.decisions.append(decision)
            if decision.action == "resume":
                room.output.resume()
                continue
            point = room.output.pause_point
            reports = room.output.interrupt()
            heard = [r for r in reports if r.started]
            if heard:
                report.cut_ms = heard[0].played_samples * 1000 / RATE_HZ
                start = starts[heard[0].item_id]
                report.cut_exact = point is not None and heard[0].played_samples == point - start
            cut_done = True
        report.replies_finished += not cut_done
        room.local.reset()
    if room.echo:
        report.erle_db = erle_db(np.concatenate(room.echo), np.concatenate(room.cleaned))
    if aec:
        minutes = room.speaker.played_samples / RATE_HZ / 60
        report.aec_cpu_s_per_min = room.cpu / minutes
    return report
