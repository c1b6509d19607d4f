"""Barge-in behind the echo canceller over unseen rooms (issue 31):
``python -m benches.aec_eval.bargein [--set tune|held_out] [--rooms N] [--sweep]``.

The rooms are benches/aec_eval/generator.py's, chosen half with a linear loudspeaker and half
with a distorting one (-16 and -10 dB, a quarter each), in seed order. Every room is played
three times through the real :class:`~voxwire.audio.EchoCanceller` (10 ms blocks, the reference
20 ms ahead as :class:`~voxwire.audio.EchoCancelledInput` reads it), its output given block by
block to each detector under test (the "after" one reads the canceller's
``residual_echo_dbfs`` after each block, as it would in the session):

* **agent only**: the echo and the microphone's noise, no user. ``false``: the times a detector
  fires, per 10 minutes of agent speech (the agent's sentences, first start to last end).
* **real**: the scene as generated ("Stop.", "Wait, wait.", "Sorry, what was that?"... over the
  agent at the start, in the middle or at the end of its turn). ``real``: the detector fires
  within 300 ms of the user's onset (the first sample above 1 % of the line's peak).
* **recovery**: the agent-only capture with two events over the agent's speech, at the user's
  level: a backchannel ("Mm-hmm.", "Yeah.", "Right.", "Okay.", in a user voice) or a non-speech
  sound (a cough, a door: a low thud and a latch, a keyboard: a train of clicks), all
  synthesised from seeded noise with envelopes (benches/aec_eval/events.py). When the detector
  fires during an event the agent pauses: from there on nothing is played and the echo dies
  away at the room's RT60, the capture re-run through a fresh canceller. The decision is then
  the session's own: :class:`FalseInterruptionFilter` fed the server VAD's ``speech_started`` /
  ``speech_stopped`` (the local server's :class:`TurnDetector`, server_vad with 300 ms of
  silence, on the canceller's output) and, with transcripts, the event's words (the
  backchannel's; none for a noise) 300 ms after the VAD's stop. ``recovered``: not paused, or
  paused and resumed. Without transcripts (``wait_for_transcript=False``) the VAD's span
  decides alone. The real lines go through the same decision after their pause (``real cut``:
  cut, with their words transcribed).

Figures are printed as Markdown; benches/RESULTS.md has them with the commands.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import numpy.typing as npt
from benches.aec_eval.events import KINDS, event_sound, user_dbfs
from benches.aec_eval.generator import RATE_HZ, SEEDS, Scene
from benches.aec_eval.scenes import scene

from voxwire.audio import BargeInDetector, EchoCanceller, FalseInterruptionFilter
from voxwire.server.core.ids import ServerIds
from voxwire.server.core.turn_detection import SpeechStarted, SpeechStopped
from voxwire.server.engines.vad import TurnDetector

BLOCK = RATE_HZ // 100
LEAD_MS = 20.0
WITHIN = int(0.3 * RATE_HZ)
Pcm = npt.NDArray[np.int16]
Make = Callable[[EchoCanceller], BargeInDetector]
DETECTORS: dict[str, Make] = {
    "before: behind_echo_canceller(rate)": lambda c: BargeInDetector.behind_echo_canceller(RATE_HZ),
    "after: behind_echo_canceller(rate, canceller)": lambda c: (
        BargeInDetector.behind_echo_canceller(RATE_HZ, c)
    ),
}
TURNS = {"type": "server_vad", "silence_duration_ms": 300}
SERVER_VAD = {"audio": {"input": {"turn_detection": TURNS}}}


def rooms(which: str, count: int | None) -> list[int]:
    """Seeds of ``which`` set: as many linear as distorting loudspeakers (half -16, half -10).
    A scene whose rendered echo is not finite (a generator fault) is left out."""
    seeds = [s for s in SEEDS[which] if np.isfinite(scene(s).echo).all()]
    linear = [s for s in seeds if scene(s).meta["speaker"] == "linear"]
    d16 = [s for s in seeds if scene(s).meta["speaker"] == "distort16"]
    d10 = [s for s in seeds if scene(s).meta["speaker"] == "distort10"]
    half = min(len(linear), 2 * min(len(d16), len(d10)))
    if count is not None:
        half = min(half, count // 2)
    half -= half % 2
    return sorted(linear[:half] + d16[: half // 2] + d10[: half // 2])


def listen(mic: Pcm, played: Pcm, makers: list[Make]) -> tuple[Pcm, list[list[int]]]:
    """Run the canceller on ``mic`` and every detector on its output; returns the output and
    each detector's firing positions, both aligned with ``mic`` (the canceller's lag removed)."""
    aec = EchoCanceller(RATE_HZ)
    detectors = [make(aec) for make in makers]
    for d in detectors:
        d.agent_speaking = True
    ref = np.concatenate([played[round(LEAD_MS * RATE_HZ / 1000) :], np.zeros(480, np.int16)])
    out = np.zeros(len(mic), dtype=np.int16)
    fires: list[list[int]] = [[] for _ in detectors]
    lag = aec.latency_samples
    for i in range(0, len(mic) - BLOCK + 1, BLOCK):
        block = aec.process(mic[i : i + BLOCK], ref[i : i + BLOCK])
        out[i : i + BLOCK] = block
        for d, f in zip(detectors, fires, strict=True):
            if d.process(block):
                f.append(i + BLOCK - lag)
    return np.concatenate([out[lag:], np.zeros(lag, np.int16)]), fires


def pcm(x: npt.NDArray[np.float64]) -> Pcm:
    return np.clip(np.round(x), -32768, 32767).astype(np.int16)


def server_vad(out: Pcm) -> list[tuple[float, str]]:
    """The local server's turn detector on ``out`` (20 ms appends): (ms, "start"/"stop")."""
    vad = TurnDetector.from_session(SERVER_VAD, ServerIds(0))
    step = RATE_HZ // 50
    signals: list[tuple[float, str]] = []
    for i in range(0, len(out) - step + 1, step):
        now = (i + step) * 1000 / RATE_HZ
        for sig in vad.feed(out[i : i + step].tobytes(), "audio/pcm", round(i * 1000 / RATE_HZ)):
            if isinstance(sig, SpeechStarted):
                signals.append((now, "start"))
            elif isinstance(sig, SpeechStopped):
                signals.append((now, "stop"))
    return signals


def decide(onset_ms: float, signals: list[tuple[float, str]], words: str | None) -> str:
    """The session's decision on a pause at ``onset_ms``: "resume" or "cut". ``words``: the
    transcript the server would send (``None``: no transcription, the VAD span decides)."""
    f = FalseInterruptionFilter(wait_for_transcript=words is not None, vad_silence_ms=300)
    f.onset(onset_ms)
    before = [(t, kind) for t, kind in signals if t < onset_ms]
    if before and before[-1][1] == "start":  # the server already hears speech: the session
        f.speech_started(before[-1][0])  # confirms the onset with it at once
    later = [(t, kind) for t, kind in signals if t >= onset_ms]
    transcript_at = math.inf
    for now in np.arange(onset_ms, onset_ms + 5000, 20.0):
        decision = None
        while later and later[0][0] <= now:
            t, kind = later.pop(0)
            if kind == "start":
                decision = f.speech_started(t)
            else:
                decision = f.speech_stopped(t)
                transcript_at = t + 300
        if decision is None and words is not None and now >= transcript_at:
            decision = f.transcript(words, now)
        decision = decision or f.poll(now)
        if decision is not None:
            return decision.action
    return "undecided"


def paused_at(s: Scene, rest: npt.NDArray[np.float64], at: int) -> list[tuple[float, str]]:
    """The server VAD's signals when the agent pauses at sample ``at``: what it played stops
    there and its echo dies away at the room's RT60; ``rest`` (the user, noises, the
    microphone's noise) is unchanged. The canceller runs on that capture as the session's would."""
    t = np.maximum(np.arange(len(rest)) - at, 0) / RATE_HZ
    echo = s.echo * 10 ** (-3 * t / float(s.meta["rt60_s"]))
    played = s.played.copy()
    played[max(at - round(LEAD_MS * RATE_HZ / 1000), 0) :] = 0
    out, _ = listen(pcm(echo + rest), played, [])
    return server_vad(out)


def decisions(s: Scene, rest: npt.NDArray[np.float64], at: int, words: str) -> tuple[str, str]:
    """The session's decisions on a pause at ``at``: with ``words`` transcribed, and without
    transcription (the VAD span alone)."""
    signals = paused_at(s, rest, at)
    ms = at * 1000 / RATE_HZ
    return decide(ms, signals, words), decide(ms, signals, None)


@dataclass
class Tally:
    """One detector's counts over the rooms."""

    agent_s: float = 0.0
    false: int = 0
    real: int = 0
    real_hit: int = 0
    real_ms: list[float] = field(default_factory=list)
    real_cut: int = 0
    # kind -> [events, not paused, resumed (transcripts), resumed (VAD span only)]
    recovery: dict[str, list[int]] = field(default_factory=dict)
    by_speaker: dict[str, list[float]] = field(default_factory=dict)
    # where the user spoke over the turn (start / middle / end) -> [lines, heard within 300 ms]
    by_where: dict[str, list[int]] = field(default_factory=dict)


def agent_only(s: Scene, tallies: list[Tally], makers: list[Make]) -> None:
    noise = s.mic.astype(np.float64) - s.echo - s.user
    mic = pcm(s.echo + noise)
    _, fires = listen(mic, s.played, makers)
    a, b = s.agent_span
    for t, f in zip(tallies, fires, strict=True):
        n = sum(a <= x <= b + WITHIN for x in f)
        t.false += n
        t.agent_s += (b - a) / RATE_HZ
        row = t.by_speaker.setdefault(s.meta["speaker"], [0.0, 0.0, 0.0, 0.0])
        row[0] += n
        row[1] += (b - a) / RATE_HZ


def real(s: Scene, tallies: list[Tally], makers: list[Make]) -> None:
    if s.user_span is None:
        return
    _, fires = listen(s.mic, s.played, makers)
    u0, _ = s.user_span
    line = np.abs(s.user[u0:])
    onset = u0 + int(np.argmax(line > 0.01 * line.max()))
    rest = s.mic.astype(np.float64) - s.echo
    for t, f in zip(tallies, fires, strict=True):
        t.real += 1
        row = t.by_speaker[s.meta["speaker"]]
        row[2] += 1
        where = t.by_where.setdefault(str(s.meta["double_talk"]), [0, 0])
        where[0] += 1
        hit = [x for x in f if onset <= x <= onset + WITHIN]
        if hit:
            t.real_hit += 1
            row[3] += 1
            where[1] += 1
            t.real_ms.append((hit[0] - onset) * 1000 / RATE_HZ)
            t.real_cut += decisions(s, rest, hit[0], str(s.meta["user_line"]))[0] == "cut"


def recovery(s: Scene, tallies: list[Tally], makers: list[Make]) -> None:
    """Two events over the agent's speech (see the module docs)."""
    rng = np.random.default_rng(s.seed + 7)
    rest = s.mic.astype(np.float64) - s.echo - s.user
    a, b = s.agent_span
    level = user_dbfs(s)
    placed: list[tuple[str, str | None, int, int]] = []
    at = a + int(rng.uniform(0.8, 1.6) * RATE_HZ)
    for k in range(2):
        kind = KINDS[(2 * s.seed + k) % len(KINDS)]
        sound, words = event_sound(kind, rng, level, s.meta.get("agent_voice", ""))
        if at + len(sound) > b:
            break
        rest[at : at + len(sound)] += sound
        placed.append((kind, words, at, at + len(sound)))
        at += len(sound) + int(rng.uniform(2.5, 3.5) * RATE_HZ)
    _, fires = listen(pcm(s.echo + rest), s.played, makers)
    for t, f in zip(tallies, fires, strict=True):
        for kind, words, e0, e1 in placed:
            row = t.recovery.setdefault(kind, [0, 0, 0, 0])
            row[0] += 1
            hit = [x for x in f if e0 <= x <= e1 + WITHIN]
            if not hit:
                row[1] += 1
                continue
            with_words, span_only = decisions(s, rest, hit[0], words or "")
            row[2] += with_words == "resume"
            row[3] += span_only == "resume"


def evaluate(seeds: list[int], makers: list[Make], progress: bool = True) -> list[Tally]:
    tallies = [Tally() for _ in makers]
    for k, seed in enumerate(seeds):
        s = scene(seed)
        agent_only(s, tallies, makers)
        real(s, tallies, makers)
        recovery(s, tallies, makers)
        if progress:
            print(f"  {k + 1}/{len(seeds)} seed {seed}", flush=True)
    return tallies


def summary(names: list[str], tallies: list[Tally]) -> list[str]:
    """Markdown: one row per detector, then per loudspeaker and per recovery event kind."""
    lines = [
        "| detector | false per 10 min of agent speech | real within 300 ms | median ms | real "
        "cut (transcripts) | recovered (transcripts) | recovered (VAD span only) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, t in zip(names, tallies, strict=True):
        rec = np.sum(list(t.recovery.values()), axis=0) if t.recovery else np.zeros(4)
        lines.append(
            f"| {name} | {t.false} in {t.agent_s / 60:.1f} min = "
            f"**{600 * t.false / max(t.agent_s, 1e-9):.1f}** | {t.real_hit}/{t.real} = "
            f"**{100 * t.real_hit / max(t.real, 1):.0f} %** | "
            f"{np.median(t.real_ms) if t.real_ms else math.nan:.0f} | "
            f"{t.real_cut}/{t.real_hit} | {_share(rec[1] + rec[2], rec[0])} | "
            f"{_share(rec[1] + rec[3], rec[0])} |"
        )
    lines += ["", "| detector | loudspeaker | false per 10 min | real within 300 ms |"]
    lines.append("|---|---|---|---|")
    for name, t in zip(names, tallies, strict=True):
        for spk, (false, secs, n, hit) in sorted(t.by_speaker.items()):
            rate = 600 * false / max(secs, 1e-9)
            lines.append(f"| {name} | {spk} | {int(false)} ({rate:.1f}) | {int(hit)}/{int(n)} |")
    lines += ["", "| detector | user's line over the turn | heard within 300 ms |", "|---|---|---|"]
    for name, t in zip(names, tallies, strict=True):
        for where in ("start", "middle", "end"):
            n, hit = t.by_where.get(where, [0, 0])
            lines.append(f"| {name} | {where} | {hit}/{n} |")
    lines += ["", "| detector | event | n | not paused | paused, resumed (transcripts) | "]
    lines[-1] += "paused, resumed (VAD span only) |"
    lines.append("|---|---|---|---|---|---|")
    for name, t in zip(names, tallies, strict=True):
        for kind in KINDS:
            n, quiet, res_t, res_v = t.recovery.get(kind, [0, 0, 0, 0])
            lines.append(f"| {name} | {kind} | {n} | {quiet} | {res_t} | {res_v} |")
    return lines


def _share(part: float, whole: float) -> str:
    return f"{int(part)}/{int(whole)} = **{100 * part / max(whole, 1):.0f} %**"


def sweep_makers() -> dict[str, Make]:
    """The "after" rule over a grid of its constants (for tuning on TUNE seeds)."""
    grid: dict[str, Make] = dict(list(DETECTORS.items())[:1])
    for vad in (2, 3):
        for margin in (6.0, 8.0, 10.0, 12.0, 15.0):
            for run_ms in (60, 80, 120):
                name = f"vad {vad}, margin {margin:g} dB, {run_ms} ms, gate -50"
                grid[name] = _maker(vad, margin, run_ms, -50.0)
    return grid


def _maker(vad: int, margin: float, run_ms: int, gate: float) -> Make:
    def make(c: EchoCanceller) -> BargeInDetector:
        return BargeInDetector(
            RATE_HZ,
            aggressiveness=vad,
            echo_gate_dbfs=gate,
            echo_min_speech_ms=run_ms,
            residual_echo=c,
            echo_margin_db=margin,
        )

    return make


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", choices=sorted(SEEDS), default="held_out")
    parser.add_argument("--rooms", type=int, default=None, help="at most this many rooms")
    parser.add_argument("--sweep", action="store_true", help="the after rule over a grid")
    args = parser.parse_args()
    seeds = rooms(args.set, args.rooms)
    chosen: dict[str, Any] = sweep_makers() if args.sweep else DETECTORS
    tallies = evaluate(seeds, list(chosen.values()))
    print(f"\n{len(seeds)} rooms of the {args.set} set (half distorting loudspeakers)\n")
    lines = summary(list(chosen), tallies)
    print("\n".join(lines[: len(chosen) + 2] if args.sweep else lines))


if __name__ == "__main__":
    main()
