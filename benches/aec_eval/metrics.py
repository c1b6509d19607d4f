"""The figures of one canceller's output on one scene (see :func:`measure`).

All figures are on the output aligned with the microphone (the canceller's latency removed).
"Agent-only" is the agent's turn (first sentence's start to 0.3 s after the last one's end,
the echo's tail) without the user's line and the 0.5 s after it.

* ``erle_db``: echo reduction of the whole output from 1 s after the agent starts: the echo's
  power over the output's, the microphone's own noise power (known) subtracted from the
  output's first; capped at 60 dB.
* ``erle_2s_db``: the same over 1.5-2.5 s after the agent starts (convergence), ``nan`` when
  the user speaks then.
* ``worst_half_s_db``: the lowest of the same over half-second windows after 1 s.
* ``speech_frames``: share of agent-only 20 ms frames the session's detector would call speech
  (webrtcvad at aggressiveness 3 on 16 kHz, and at least -50 dBFS: the echo gate of
  ``BargeInDetector.behind_echo_canceller``).
* ``false_barge_ins``: times ``BargeInDetector.behind_echo_canceller`` fires on the agent-only
  output (the user's line and what follows it silenced), and ``agent_only_s`` its duration.
* ``barge_in_ms``: how long after the user's onset the same detector fires on the output
  (``nan``: not within 1 s, or no user).
* ``stoi``: STOI of the user's line in the output against the user alone (``nan`` without one,
  or for a line too short for STOI's 384 ms of speech, such as "Stop.").
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import numpy.typing as npt
import webrtcvad  # type: ignore[import-untyped]
from benches.aec_eval.generator import RATE_HZ, Scene

from voxwire.audio import BargeInDetector, Resampler

Signal = npt.NDArray[np.float64]
HALF = RATE_HZ // 2


def agent_only(s: Scene) -> npt.NDArray[np.bool_]:
    mask = np.zeros(len(s.mic), dtype=bool)
    start, end = s.agent_span
    mask[start : min(end + int(0.3 * RATE_HZ), len(mask))] = True
    if s.user_span is not None:
        u0, u1 = s.user_span
        mask[max(u0 - RATE_HZ // 20, 0) : u1 + HALF] = False
    return mask


def _erle(s: Scene, out: Signal, mask: npt.NDArray[np.bool_]) -> float:
    if not mask.any():
        return math.nan
    echo = float(np.sum(s.echo[mask] ** 2))
    noise = float(np.sum((s.mic[mask] - s.echo[mask] - s.user[mask]) ** 2))
    left = float(np.sum(out[mask] ** 2)) - noise
    return min(10 * math.log10(echo / max(left, echo * 1e-6)), 60.0)


def _erles(s: Scene, out: Signal, mask: npt.NDArray[np.bool_]) -> dict[str, float]:
    start = s.agent_span[0]
    after = mask.copy()
    after[: start + RATE_HZ] = False
    conv = np.zeros_like(mask)
    conv[start + 3 * HALF : start + 5 * HALF] = True
    conv_user = s.user_span is not None and s.user_span[0] < start + 5 * HALF + HALF
    worst = math.inf
    for a in range(start + RATE_HZ, s.agent_span[1] - HALF + 1, HALF):
        win = np.zeros_like(mask)
        win[a : a + HALF] = True
        win &= mask
        # Windows where the echo is audible at all (the agent's pauses are not measured).
        if win.sum() > HALF // 2 and np.mean(s.echo[win] ** 2) > 10 ** (-70 / 10) * 32768**2:
            worst = min(worst, _erle(s, out, win))
    return {
        "erle_db": _erle(s, out, after),
        "erle_2s_db": math.nan if conv_user else _erle(s, out, conv & mask),
        "worst_half_s_db": worst if worst < math.inf else math.nan,
    }


def _frames16(out: Signal) -> npt.NDArray[np.int16]:
    pcm = np.clip(np.round(out), -32768, 32767).astype(np.int16)
    return Resampler(RATE_HZ, 16_000).process(pcm)


def _speech_frames(out: Signal, mask: npt.NDArray[np.bool_]) -> float:
    pcm16 = _frames16(out)
    vad = webrtcvad.Vad(3)
    step, step24 = 320, 480
    judged = speech = 0
    for k in range(min(len(pcm16) // step, len(mask) // step24)):
        if not mask[k * step24 : (k + 1) * step24].all():
            continue
        frame = pcm16[k * step : (k + 1) * step]
        judged += 1
        rms = math.sqrt(float(np.mean(frame.astype(np.float64) ** 2)))
        loud = 20 * math.log10(max(rms, 1e-9) / 32768) >= -50.0
        speech += loud and vad.is_speech(frame.tobytes(), 16_000)
    return speech / judged if judged else math.nan


def _fires(pcm: npt.NDArray[np.int16]) -> list[int]:
    """Samples at which the session's detector behind the canceller fires."""
    d = BargeInDetector.behind_echo_canceller(RATE_HZ)
    d.agent_speaking = True
    step = RATE_HZ // 50
    return [i + step for i in range(0, len(pcm) - step + 1, step) if d.process(pcm[i : i + step])]


def _barge_ins(s: Scene, out: Signal, mask: npt.NDArray[np.bool_]) -> dict[str, float]:
    pcm = np.clip(np.round(out), -32768, 32767).astype(np.int16)
    start, end = s.agent_span
    silenced = np.where(mask, pcm, 0).astype(np.int16)[start : end + int(0.3 * RATE_HZ)]
    figures = {
        "false_barge_ins": float(len(_fires(silenced))),
        "agent_only_s": mask.sum() / RATE_HZ,
    }
    figures["barge_in_ms"] = math.nan
    if s.user_span is not None:
        u0, _ = s.user_span
        line = np.abs(s.user[u0:])
        onset = u0 + int(np.argmax(line > 0.01 * line.max()))
        late = [f - onset for f in _fires(pcm) if f >= onset]
        if late and late[0] <= RATE_HZ:
            figures["barge_in_ms"] = late[0] * 1000 / RATE_HZ
    return figures


def stoi(s: Scene, out: Signal) -> float:
    from pystoi import stoi as _stoi  # type: ignore[import-untyped]

    if s.user_span is None:
        return math.nan
    u0, u1 = s.user_span
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # too short a line: pystoi warns and returns 1e-5
        value = float(_stoi(s.user[u0:u1], out[u0:u1], RATE_HZ))
    return value if value > 1e-4 else math.nan


def measure(s: Scene, out: Signal) -> dict[str, Any]:
    mask = agent_only(s)
    return {
        **_erles(s, out, mask),
        "speech_frames": _speech_frames(out, mask),
        **_barge_ins(s, out, mask),
        "stoi": stoi(s, out),
    }
