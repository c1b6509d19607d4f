"""``voxwire demo --room speakerphone``: the demo's conversation on a speakerphone in a simulated
room, with and without echo cancellation (``--aec``).

The same conversation as ``voxwire demo`` (a concierge with a tool and a handoff to billing,
the local server in-process), but the user is in a room with the speaker: a virtual speaker
(:class:`~voxwire.audio.MemoryOutput`, 30 ms output latency) plays the agent, and what it plays
reaches the session's microphone through a room impulse response (RT60 0.45 s) 6 dB louder than
the user (-30 dBFS), with a little noise. Nothing is fed to the session by hand: it runs the
microphone itself (``audio_input=``), with local barge-in (``local_barge_in=True``) and
false-interruption recovery (``false_interruption=``); the server's VAD (threshold 0.75) hears
the same microphone. With ``--aec`` the microphone is an
:class:`~voxwire.audio.EchoCancelledInput` (its reference tapped from the speaker, aligned by
the playback clock).

Script: the user asks (line 1) while the room is quiet; the concierge looks the order up and
hands off; one second into billing's explanation the user coughs; three seconds in they say
line 2 over it. With the canceller: the cough pauses the agent and it plays on from the pause
(nothing truncated, no reply to the cough), the line cuts it exactly at the pause point, and
billing answers the line. Without it, the agent's own echo pauses it from its first words.

Everything runs on the speaker's clock (one tick = one 20 ms period, a few ms of real time),
which is also the session's clock (``clock=``), so the figures do not depend on the machine.
Printed: the pauses and what each became, replies and cuts, whether the cut is exactly at the
pause point, the echo reduction and the microphone path's CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

import voxwire.asyncio.events as ev
from voxwire.asyncio import RealtimeSession
from voxwire.audio import (
    Decision,
    EchoCancelledInput,
    FalseInterruptionFilter,
    MemoryOutput,
    SteppedInput,
    read_wav,
)
from voxwire.audio.room import RoomPath, cough, erle_db, level_dbfs, room_impulse_response
from voxwire.demo.script import (
    BILLING_EXPLAINS,
    SCENARIO,
    USER_LINES,
    UserLine,
    agents,
    synthesise_lines,
)
from voxwire.quickstart import endpoint
from voxwire.server import Pacing

__all__ = ["RoomReport", "run_room"]

RATE_HZ = 24_000
PERIOD_MS = 20.0
USER_DBFS = -30.0
ECHO_OVER_USER_DB = 6.0
RT60_S = 0.45
COUGH_AFTER_MS = 1_000  # heard of billing's explanation
LINE_AFTER_MS = 3_000
AGENT_VOICE = "alloy"  # the server's default voice, which the agents speak with
TICK_S = 0.003  # real time per 20 ms tick: the server keeps well ahead of the speaker
LIMIT_TICKS = 60 * 50  # a minute of the speaker's clock
MAX_REPLIES = 8  # twice the script's: an agent answering its own echo is stopped at this many
#: The server's VAD as docs/audio-io.md advises with the canceller, answering nothing itself
#: (the session does: false-interruption recovery holds create_response).
CONFIG = {
    "audio": {
        "input": {
            "turn_detection": {"type": "server_vad", "threshold": 0.75, "silence_duration_ms": 500}
        }
    }
}


@dataclass
class RoomReport:
    """What happened in the room."""

    aec: bool
    pauses_ms: list[float] = field(default_factory=list)
    """When the output paused (ms of the speaker's clock)."""
    decisions: list[Decision] = field(default_factory=list)
    cough_at_ms: float | None = None
    line_at_ms: float | None = None
    replies: int = 0
    cuts: list[ev.AudioInterruptedEvent] = field(default_factory=list)
    cut_exact: bool | None = None
    answered_line: bool = False
    erle_db: float | None = None
    mic_cpu_s_per_min: float | None = None
    transcript: list[tuple[str, str]] = field(default_factory=list)
    """(item id, what the agent said) of each audio item."""
    stopped: bool = False
    """The scene was stopped at :data:`MAX_REPLIES` (the agent answering its own echo)."""

    def lines(self) -> list[str]:
        state = "on (the 'after' picture)" if self.aec else "off (the 'before' picture)"
        out = [
            f"speakerphone room (RT60 {RT60_S} s, echo {ECHO_OVER_USER_DB:.0f} dB over the user), "
            f"echo cancellation {state}; the session runs the microphone, local barge-in and "
            "false-interruption recovery against the local server"
        ]
        if not self.aec:
            out.append(
                "  without a canceller the microphone hears the agent's own voice: expect it to "
                "cut itself off and answer its echo (add --aec to see the difference)"
            )
        cut_at = {cut.item_id: cut.played_ms for cut in self.cuts}
        spoken = [
            f"  agent: {text}" + (f" [cut at {cut_at[item]} ms]" if item in cut_at else "")
            for item, text in self.transcript
        ]
        out += spoken[:6] + ([f"  ... and {len(spoken) - 6} more"] if len(spoken) > 6 else [])
        out.append(
            f"  cough at {_ms(self.cough_at_ms)}, the user's line at {_ms(self.line_at_ms)} "
            "(ms of the speaker's clock)"
        )
        out.append(f"  output paused at: {[round(t) for t in self.pauses_ms]}")
        for d in self.decisions:
            out.append(f"  paused; decided at {d.at_ms:.0f} ms: {d.action} ({d.reason})")
        out.append(f"  agent replies: {self.replies}, cut: {len(self.cuts)}")
        if self.stopped:
            out.append(
                f"  stopped after {self.replies} replies: the agent kept answering its own echo "
                "(as expected without --aec)"
            )
        if self.cut_exact is not None:
            exact = "exactly at the pause point" if self.cut_exact else "NOT at the pause point"
            cut = self.cuts[-1]
            out.append(f"  reply cut {exact}: audio_end_ms={cut.played_ms}")
        if self.line_at_ms is None:
            out.append("  the cough and the user's line never came: billing never got that far")
        else:
            out.append(f"  the user's line answered: {'yes' if self.answered_line else 'no'}")
        if self.erle_db is not None:
            out.append(f"  echo reduction while the agent spoke alone: {self.erle_db:.1f} dB")
        if self.mic_cpu_s_per_min is not None:
            out.append(
                f"  microphone path CPU (canceller, resampling, framing, barge-in detector): "
                f"{self.mic_cpu_s_per_min:.2f} s per minute of audio"
            )
        return out


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


class _MeteredCanceller(EchoCancelledInput):
    """The canceller, keeping what it hands on (for the echo reduction figure)."""

    cleaned: list[npt.NDArray[np.int16]]

    def start(self, callback: Callable[[Any], None]) -> None:
        self.cleaned = []

        def keep(block: Any) -> None:
            self.cleaned.append(np.array(block, dtype=np.int16).reshape(-1))
            callback(block)

        super().start(keep)


@dataclass
class _Script:
    """The user's side: line 1 when quiet, then a cough and line 2 over billing."""

    line1: npt.NDArray[np.float64]
    line2: npt.NDArray[np.float64]
    burst: npt.NDArray[np.float64]
    near: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    stage: int = 0  # 0 before line 1, 1 waiting for billing, 2 cough said, 3 line 2 said

    def play(self, sound: npt.NDArray[np.float64]) -> None:
        self.near = np.concatenate([self.near, sound])

    def take(self, n: int) -> npt.NDArray[np.float64]:
        block = np.zeros(n)
        got = self.near[:n]
        block[: len(got)] = got
        self.near = self.near[n:]
        return block


class _Driver:
    """Ticks the speaker, the room and the microphone; follows the session's events."""

    def __init__(self, session: RealtimeSession, speaker: MemoryOutput, report: RoomReport) -> None:
        self.session = session
        self.speaker = speaker
        self.report = report
        self.billing_item: str | None = None
        self.after_handoff = False
        self.line_turn_answered = False
        self.starts: dict[str, int] = {}
        """Ring position of each item's first sample (from the clock while it plays)."""
        self.pause_point: int | None = None
        """Ring position of the last pause: what a cut there counts as heard ends here."""

    async def follow(self) -> None:
        async for event in self.session:
            if isinstance(event, ev.HandoffEvent):
                self.after_handoff = True
            elif isinstance(event, ev.ResponseStartedEvent):
                self.report.replies += 1
                if self.report.line_at_ms is not None:
                    self.report.answered_line = True
            elif isinstance(event, ev.AudioInterruptedEvent) and event.played_ms is not None:
                self.report.cuts.append(event)
            elif isinstance(event, ev.AssistantTranscriptDoneEvent):
                self.report.transcript.append((event.item_id, event.transcript))
            if (
                isinstance(event, ev.AssistantTranscriptDeltaEvent)
                and self.after_handoff
                and self.billing_item is None
            ):
                self.billing_item = event.item_id

    async def run(self, room: _Room, script: _Script) -> None:
        """Tick until 1.5 s of quiet after the user's line (or the limits)."""
        output, pause_seen, quiet_ticks = self.speaker.output, False, 0
        for tick in range(LIMIT_TICKS):
            _advance_script(script, self, self.report, tick, self.speaker.now() * 1000)
            room.tick(script.take(self.speaker.period_samples))
            self.note_starts()
            if output.paused and not pause_seen:
                self.report.pauses_ms.append(self.speaker.played_samples * 1000 / RATE_HZ)
                self.pause_point = output.pause_point
            pause_seen = output.paused
            await asyncio.sleep(TICK_S)
            busy = output.unheard_samples or self.session.protocol.responses_in_progress
            quiet_ticks = 0 if busy or len(script.near) else quiet_ticks + 1
            if script.stage == 3 and quiet_ticks >= 75:
                return
            if self.report.replies >= MAX_REPLIES:  # it keeps answering its own echo
                self.report.stopped = True
                return

    def note_starts(self) -> None:
        """While an item plays, heard = handed to the device - output latency - its start."""
        output = self.speaker.output
        latency = output.output_latency_samples
        for record in output.clock.items():
            if record.item_id not in self.starts and record.played_samples > 0:
                handed = output.ring.consumed_samples
                self.starts[record.item_id] = handed - latency - record.played_samples

    def heard_ms(self, item_id: str | None) -> float:
        for record in self.speaker.output.clock.items():
            if record.item_id == item_id:
                return record.played_samples * 1000 / RATE_HZ
        return 0.0


class _Room:
    """The speaker, the room's echo path and the microphone, one 20 ms tick at a time."""

    def __init__(self, aec: bool, agent_dbfs: float) -> None:
        self.speaker = MemoryOutput(RATE_HZ, period_ms=PERIOD_MS, latency_ms=30.0, prebuffer_ms=0)
        self.mic = SteppedInput(RATE_HZ)
        self.canceller = (
            _MeteredCanceller(self.mic, self.speaker.output, now=self.speaker.now) if aec else None
        )
        gain = 10 ** ((USER_DBFS + ECHO_OVER_USER_DB - agent_dbfs) / 20)  # echo 6 dB over user
        self.path = RoomPath(room_impulse_response(RATE_HZ, RT60_S, seed=5), gain=gain)
        self.rng = np.random.default_rng(7)
        self.cpu = 0.0
        self.echo_alone: list[npt.NDArray[np.float64]] = []
        self.cleaned_alone: list[int] = []  # indices of the canceller's blocks made meanwhile

    def tick(self, near: npt.NDArray[np.float64]) -> None:
        """The speaker plays a period; the microphone hears its echo, ``near`` and noise."""
        heard = self.speaker.advance(1).astype(np.float64)
        echo = self.path.process(heard)
        noise = self.rng.normal(0.0, 10.0, len(heard))
        block = np.clip(np.round(echo + near + noise), -32768, 32767).astype(np.int16)
        before = len(self.canceller.cleaned) if self.canceller is not None else 0
        started = time.process_time()
        self.mic.feed(block)
        self.cpu += time.process_time() - started
        if self.canceller is not None and not near.any() and np.abs(echo).max(initial=0) > 30:
            self.echo_alone.append(echo)
            self.cleaned_alone.extend(range(before, len(self.canceller.cleaned)))

    def erle_db(self) -> float | None:
        """Echo reduction while the agent spoke alone."""
        if self.canceller is None or not self.echo_alone:
            return None
        cleaned = self.canceller.cleaned
        residue = [cleaned[i].astype(np.float64) for i in self.cleaned_alone] or [np.zeros(1)]
        return erle_db(np.concatenate(self.echo_alone), np.concatenate(residue))


async def _converse(aec: bool, lines: list[Path], agent_dbfs: float, url: str) -> RoomReport:
    report = RoomReport(aec)
    room = _Room(aec, agent_dbfs)
    recovery = FalseInterruptionFilter(
        wait_for_transcript=False, min_turn_ms=600, vad_silence_ms=500
    )
    user = [_level(read_wav(path).pcm.astype(np.float64), USER_DBFS) for path in lines]
    script = _Script(user[0], user[1], cough(RATE_HZ, seed=2) * 6000.0)
    session = RealtimeSession(
        agents(),
        url=url,
        config=CONFIG,
        audio_input=room.canceller or room.mic,
        audio_output=room.speaker,
        local_barge_in=True,
        false_interruption=recovery,
        clock=room.speaker.now,
        wait_for_session_updated=True,
    )
    async with session:
        driver = _Driver(session, room.speaker, report)
        follower = asyncio.create_task(driver.follow())
        try:
            await driver.run(room, script)
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
    report.decisions = list(recovery.decisions)
    if report.cuts and driver.pause_point is not None:
        # audio_end_ms: the item up to the pause point, floored to ms
        cut = report.cuts[-1]
        until = driver.pause_point - driver.starts.get(cut.item_id, driver.pause_point + 1)
        report.cut_exact = cut.played_ms == until * 1000 // RATE_HZ
    report.erle_db = room.erle_db()
    minutes = room.speaker.played_samples / RATE_HZ / 60
    report.mic_cpu_s_per_min = room.cpu / minutes if minutes else None
    return report


def _advance_script(
    script: _Script, driver: _Driver, report: RoomReport, tick: int, now_ms: float
) -> None:
    if script.stage == 0 and tick == 25:  # half a second of quiet, then line 1
        script.play(script.line1)
        script.stage = 1
    elif script.stage == 1 and driver.heard_ms(driver.billing_item) >= COUGH_AFTER_MS:
        report.cough_at_ms = now_ms
        script.play(script.burst)
        script.stage = 2
    elif script.stage == 2 and driver.heard_ms(driver.billing_item) >= LINE_AFTER_MS:
        report.line_at_ms = now_ms
        script.play(script.line2)
        script.stage = 3


def _level(pcm: npt.NDArray[np.float64], dbfs: float) -> npt.NDArray[np.float64]:
    active = pcm[np.abs(pcm) > 30]
    return pcm * 10 ** ((dbfs - level_dbfs(active)) / 20) if len(active) else pcm


async def _run(aec: bool) -> RoomReport:
    with tempfile.TemporaryDirectory(prefix="voxwire-room-") as tmp:
        wavs = synthesise_lines(USER_LINES, Path(tmp))
        # The agent's level: one of its lines in the server's voice, as the speaker plays it.
        (sample,) = synthesise_lines((UserLine(BILLING_EXPLAINS),), Path(tmp), voice=AGENT_VOICE)
        agent = read_wav(sample).pcm.astype(np.float64)
        fastest = Pacing(audio_pace=0, text_tokens_per_s=0)
        async with endpoint(None, SCENARIO, fastest) as url:
            return await _converse(aec, wavs, level_dbfs(agent[np.abs(agent) > 30]), url)


def run_room(aec: bool) -> RoomReport:
    """Play the scene through a real session and the local server; returns the figures."""
    return asyncio.run(_run(aec))
