"""Echo scenes for the canceller's tests: synthesised speech (espeak-ng) through simulated rooms."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

from tests.audio.speech import spoken
from voxwire.audio import EchoCanceller, Resampler
from voxwire.audio.room import RoomPath, cough, level_dbfs, room_impulse_response, scale_to_dbfs

RATE_HZ = 24_000
AGENT_LINES = (
    "Thanks for calling. Your booking for two nights is confirmed, and breakfast is included "
    "every morning from seven.",
    "Is there anything else I can help you with today, perhaps a table at the restaurant?",
)
USER_LINE = "Actually, could you move it to Friday instead?"


@cache
def speech(text: str, voice: str) -> npt.NDArray[np.float64]:
    """The line as a fresh engine speaks it (tests/audio/speech.py: never what the process's
    shared engine happens to make of it after whatever it said before)."""
    pcm, rate_hz = spoken(text, voice)
    return Resampler(rate_hz, RATE_HZ).process(pcm).astype(np.float64)


@dataclass
class Scene:
    """A speakerphone recording: ``mic = echo + user + noise``, ``reference`` what was played."""

    reference: npt.NDArray[np.int16]
    mic: npt.NDArray[np.int16]
    echo: npt.NDArray[np.float64]
    user: npt.NDArray[np.float64]
    user_start: int  # sample where the user's line (or the cough) begins
    user_len: int


@cache
def scene(
    rt60_s: float,
    *,
    echo_over_user_db: float = 6.0,
    user_at_s: float | None = 7.0,
    use_cough: bool = False,
    seed: int = 1,
    agent_voice: str = "alloy",
    user_voice: str = "echo",
) -> Scene:
    far = np.concatenate(
        [
            speech(AGENT_LINES[0], agent_voice),
            np.zeros(RATE_HZ // 4),
            speech(AGENT_LINES[1], agent_voice),
        ]
    )
    far = scale_to_dbfs(far, -24.0)
    echo = RoomPath(room_impulse_response(RATE_HZ, rt60_s, seed=seed)).process(far)
    # Levels are compared on active speech: the echo (while the agent talks) is
    # echo_over_user_db louder than the user's line.
    active = np.abs(far) > 30
    user_level = -30.0
    echo = echo * 10 ** ((user_level + echo_over_user_db - level_dbfs(echo[active])) / 20)
    user = np.zeros(len(far))
    start = length = 0
    if user_at_s is not None:
        line = cough(RATE_HZ, seed=seed) * 8000.0 if use_cough else speech(USER_LINE, user_voice)
        line = scale_to_dbfs(line, user_level) if not use_cough else line
        start = int(user_at_s * RATE_HZ)
        length = min(len(line), len(far) - start)
        user[start : start + length] = line[:length]
    noise = np.random.default_rng(seed).standard_normal(len(far)) * 32768 * 10 ** (-70 / 20)
    mic = np.clip(np.round(echo + user + noise), -32768, 32767).astype(np.int16)
    return Scene(np.round(far).astype(np.int16), mic, echo, user, start, length)


def cancel(s: Scene, block: int = 480, **options: object) -> npt.NDArray[np.float64]:
    """Run the canceller over the scene in device-sized blocks; output aligned with the input."""
    aec = EchoCanceller(RATE_HZ, **options)  # type: ignore[arg-type]
    out = np.concatenate(
        [
            aec.process(s.mic[i : i + block], s.reference[i : i + block])
            for i in range(0, len(s.mic), block)
        ]
    )
    lag = aec.latency_samples
    return np.concatenate([out[lag:], np.zeros(lag, dtype=np.int16)]).astype(np.float64)
