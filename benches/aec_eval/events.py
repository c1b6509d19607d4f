"""Sounds that should not take the turn, for the barge-in evaluation (benches/aec_eval/bargein.py):
backchannels spoken by a user voice and synthesised non-speech, each at the scene's user level.

* backchannels: "Mm-hmm.", "Yeah.", "Right.", "Okay." (espeak-ng voices other than the agent's,
  through the generator's renderer);
* cough: :func:`voxwire.audio.room.cough` (250 ms of low-passed noise, sharp attack);
* door: a thud (noise low-passed at 120-250 Hz, 5 ms attack, 60-140 ms decay) and a latch
  click (4 ms of high-passed noise) 60-180 ms later, 4 dB over the user's level;
* keyboard: 6-12 key clicks (3 ms high-passed noise bursts, 1.5 ms decay) 70-220 ms apart.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from benches.aec_eval.generator import ESPEAK_VOICES, RATE_HZ, Scene, voice_line
from scipy import signal

from voxwire.audio.room import cough

Signal = npt.NDArray[np.float64]
BACKCHANNELS = {"mm-hmm": "Mm-hmm.", "yeah": "Yeah.", "right": "Right.", "okay": "Okay."}
KINDS = (*BACKCHANNELS, "cough", "door", "keyboard")


def user_dbfs(s: Scene) -> float:
    """The user's level in the capture (active speech, dBFS): the echo's over the agent's
    sentences less the generator's echo-over-user ratio."""
    active = np.zeros(len(s.echo), dtype=bool)
    for a, b in s.agent:
        active[a:b] = True
    rms = math.sqrt(float(np.mean(s.echo[active] ** 2)))
    return 20 * math.log10(rms / 32768) - float(s.meta["echo_over_user_db"])


def _at_level(x: Signal, dbfs: float) -> Signal:
    """``x`` with its active samples (above 1 % of the peak) at ``dbfs`` RMS."""
    active = np.abs(x) > 0.01 * np.max(np.abs(x))
    rms = math.sqrt(float(np.mean(x[active] ** 2)))
    out: Signal = x * (32768 * 10 ** (dbfs / 20) / rms)
    return out


def _burst(rng: np.random.Generator, ms: float, decay_ms: float, band: tuple[str, float]) -> Signal:
    n = int(ms * RATE_HZ / 1000)
    t = np.arange(n) / RATE_HZ
    kind, hz = band
    sos = signal.butter(2, hz, kind, fs=RATE_HZ, output="sos")
    noise = signal.sosfilt(sos, rng.standard_normal(n))
    out: Signal = noise * (1 - np.exp(-t / 0.0005)) * np.exp(-t / (decay_ms / 1000))
    return out


def door(rng: np.random.Generator) -> Signal:
    thud = _burst(rng, 450, rng.uniform(60, 140), ("low", rng.uniform(120, 250)))
    click = _burst(rng, 4, 1.0, ("high", 1500.0))
    at = int(rng.uniform(0.06, 0.18) * RATE_HZ)
    thud[at : at + len(click)] += click * 2 * np.max(np.abs(thud)) / np.max(np.abs(click))
    return thud


def keyboard(rng: np.random.Generator) -> Signal:
    gaps = rng.uniform(0.07, 0.22, size=int(rng.integers(6, 13)))
    out = np.zeros(int((gaps.sum() + 0.05) * RATE_HZ))
    at = 0
    for gap in gaps:
        click = _burst(rng, 3, 1.5, ("high", rng.uniform(1000, 3000)))
        out[at : at + len(click)] += click * rng.uniform(0.6, 1.0) / np.max(np.abs(click))
        at += int(gap * RATE_HZ)
    return out


def event_sound(
    kind: str, rng: np.random.Generator, level_dbfs: float, agent_voice: str
) -> tuple[Signal, str | None]:
    """The sound of ``kind`` at ``level_dbfs`` and its words (``None`` for a noise)."""
    if kind in BACKCHANNELS:
        voice = str(rng.choice([v for v in ESPEAK_VOICES if v != agent_voice]))
        text = BACKCHANNELS[kind]
        x = voice_line(text, voice, float(rng.uniform(0.9, 1.15)), float(rng.uniform(0.9, 1.1)))
        return _at_level(x, level_dbfs), text
    if kind == "cough":
        return _at_level(cough(RATE_HZ, seed=int(rng.integers(1 << 30))), level_dbfs + 3), None
    if kind == "door":
        return _at_level(door(rng), level_dbfs + 4), None
    return _at_level(keyboard(rng), level_dbfs), None
