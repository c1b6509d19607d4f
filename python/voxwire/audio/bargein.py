"""Local barge-in: notice the user starting to speak before the server says so.

Server VAD reports ``input_audio_buffer.speech_started`` only after the audio has crossed the
network and the server's own detector has decided; playback keeps running meanwhile. A local
detector on the microphone can stop playback a round trip earlier. Its risk is the echo: the
agent's own voice, played by the speaker and picked up by the microphone, looks like speech. The
echo gate makes the detector stricter while the agent speaks (the caller sets ``agent_speaking``):
a frame only counts as speech if it is also louder than ``echo_gate_dbfs``, and a longer run of
speech frames is needed. Behind an echo canceller the detector can also ask the canceller how
much echo it left in its output (``residual_echo``, :attr:`EchoCanceller.residual_echo_dbfs`):
a frame then counts as speech only if it stands ``echo_margin_db`` above that estimate, so the
residue of a distorting loudspeaker, which webrtcvad takes for speech, does not trigger.
See docs/audio-io.md for the trade-offs and the figures.

Pure and synchronous: webrtcvad judges 20 ms frames at 16 kHz (8 kHz input is judged as is),
resampled by the Rust resampler.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Protocol

import numpy as np
import numpy.typing as npt
import webrtcvad  # type: ignore[import-untyped]  # no stubs or py.typed

from voxwire._core import Resampler
from voxwire.audio._pcm import check_positive_ms, check_rate
from voxwire.exceptions import ConfigurationError

__all__ = ["BargeInDetector", "ResidualEcho"]

_VAD_FRAME_MS = 20
#: Residual-echo readings a frame is compared with (the highest of them): a 20 ms frame spans
#: two of the canceller's 10 ms blocks, and the reading can be a block ahead of the frame.
_ECHO_READINGS = 3
#: ``behind_echo_canceller(rate, canceller)``'s rule, chosen on the TUNE rooms of
#: benches/aec_eval (python -m benches.aec_eval.bargein --set tune --sweep).
BEHIND_CANCELLER_MARGIN_DB = 12.0
BEHIND_CANCELLER_GATE_DBFS = -50.0
BEHIND_CANCELLER_MIN_SPEECH_MS = 80
BEHIND_CANCELLER_AGGRESSIVENESS = 2


class ResidualEcho(Protocol):
    """What reports the echo left in the audio the detector is given: an
    :class:`~voxwire.audio.EchoCanceller` (or anything with its ``residual_echo_dbfs``)."""

    @property
    def residual_echo_dbfs(self) -> float: ...


class BargeInDetector:
    """Reports "user speech started" from input audio, with an echo gate while the agent speaks.

    ``rate_hz``: the rate of the PCM16 given to :meth:`process` (8000 is judged directly, any
    other rate is resampled to 16 kHz). ``aggressiveness``: webrtcvad's 0..=3 (3 rejects the most
    non-speech). ``min_speech_ms``: speech needed to trigger while the agent is silent;
    ``echo_min_speech_ms`` and ``echo_gate_dbfs``: the stricter rule while it speaks.
    ``hangover_ms``: non-speech that ends the user's speech, re-arming the detector.
    ``residual_echo``: the canceller whose output is given to :meth:`process`; its
    ``residual_echo_dbfs`` is read on each call, and a frame counts as speech only if it is at
    least ``echo_margin_db`` (0..=40) louder than the highest of the last readings.
    """

    def __init__(
        self,
        rate_hz: int = 24_000,
        *,
        aggressiveness: int = 3,
        min_speech_ms: int = 100,
        echo_min_speech_ms: int = 300,
        echo_gate_dbfs: float = -30.0,
        hangover_ms: int = 400,
        residual_echo: ResidualEcho | None = None,
        echo_margin_db: float = 10.0,
        on_speech_started: Callable[[], None] | None = None,
    ) -> None:
        self.rate_hz = check_rate("rate_hz", rate_hz)
        if aggressiveness not in (0, 1, 2, 3):
            raise ConfigurationError(
                f"aggressiveness={aggressiveness!r} is invalid: expected 0, 1, 2 or 3"
            )
        self.min_speech_ms = check_positive_ms("min_speech_ms", min_speech_ms)
        self.echo_min_speech_ms = check_positive_ms("echo_min_speech_ms", echo_min_speech_ms)
        self.hangover_ms = check_positive_ms("hangover_ms", hangover_ms)
        if not isinstance(echo_gate_dbfs, int | float) or not -96.0 <= echo_gate_dbfs <= 0.0:
            raise ConfigurationError(
                f"echo_gate_dbfs={echo_gate_dbfs!r} is invalid: expected -96.0 ..= 0.0 dBFS"
            )
        self.echo_gate_dbfs = float(echo_gate_dbfs)
        self.residual_echo = residual_echo
        self.echo_margin_db = _check_residual(residual_echo, echo_margin_db)
        self._echo_dbfs: deque[float] = deque([-120.0], maxlen=_ECHO_READINGS)
        self.on_speech_started = on_speech_started
        self.agent_speaking = False
        """Set by the caller while the agent's audio is playing: the echo gate applies."""
        self._vad = webrtcvad.Vad(aggressiveness)
        self._vad_rate_hz = 8_000 if self.rate_hz == 8_000 else 16_000
        self._resampler = (
            Resampler(self.rate_hz, self._vad_rate_hz)
            if self.rate_hz != self._vad_rate_hz
            else None
        )
        self._frame = np.zeros(self._vad_rate_hz * _VAD_FRAME_MS // 1000, dtype=np.int16)
        self._filled = 0
        self._judged_ms = 0
        self._run_ms = 0
        self._silence_ms = 0
        self.in_speech = False
        self.triggers = 0
        """How many times speech start was reported."""
        self.gated_frames = 0
        """Frames webrtcvad called speech that the echo gate refused (too quiet, agent speaking)."""
        self.residual_gated_frames = 0
        """Frames webrtcvad called speech that were not ``echo_margin_db`` above the residual."""
        self.last_start_ms: int | None = None
        """Where the last reported speech began: ms of audio judged since the detector was made."""

    @classmethod
    def behind_echo_canceller(
        cls, rate_hz: int = 24_000, canceller: ResidualEcho | None = None
    ) -> BargeInDetector:
        """The detector for a microphone whose echo is cancelled
        (:class:`~voxwire.audio.EchoCancelledInput`): the echo gate drops to -50 dBFS and
        120 ms of speech trigger while the agent speaks, since what is left of the agent is
        the canceller's residue, not the agent. Given the ``canceller`` (the input's
        ``canceller``), a frame must also stand ``BEHIND_CANCELLER_MARGIN_DB`` (12 dB) above
        the echo it estimates it left (see the class docs), and with that check webrtcvad runs
        at aggressiveness 2 and 80 ms of speech trigger (chosen on the tune rooms). The session
        passes it for ``local_barge_in=True`` with ``echo_cancellation=True``;
        benches/RESULTS.md ("Barge-in behind the canceller over unseen rooms") has the figures
        with and without it."""
        if canceller is None:
            return cls(rate_hz, echo_gate_dbfs=-50.0, echo_min_speech_ms=120)
        return cls(
            rate_hz,
            aggressiveness=BEHIND_CANCELLER_AGGRESSIVENESS,
            echo_gate_dbfs=BEHIND_CANCELLER_GATE_DBFS,
            echo_min_speech_ms=BEHIND_CANCELLER_MIN_SPEECH_MS,
            residual_echo=canceller,
            echo_margin_db=BEHIND_CANCELLER_MARGIN_DB,
        )

    def process(self, pcm: npt.NDArray[np.int16]) -> bool:
        """Judge PCM16 mono at ``rate_hz``; True if user speech started in it (``on_speech_started``
        is called then too, on this thread)."""
        if self.residual_echo is not None:
            self._echo_dbfs.append(float(self.residual_echo.residual_echo_dbfs))
        if self._resampler is not None:
            pcm = self._resampler.process(pcm)
        started = False
        pos = 0
        size = len(self._frame)
        while pos < len(pcm):
            take = min(size - self._filled, len(pcm) - pos)
            self._frame[self._filled : self._filled + take] = pcm[pos : pos + take]
            self._filled += take
            pos += take
            if self._filled == size:
                self._filled = 0
                started |= self._judge(self._frame)
        return started

    def reset(self) -> None:
        """Forget the current speech (for example after the session handled a barge-in)."""
        self.in_speech = False
        self._run_ms = 0
        self._silence_ms = 0

    def _judge(self, frame: npt.NDArray[np.int16]) -> bool:
        speech = bool(self._vad.is_speech(frame.tobytes(), self._vad_rate_hz))
        if speech and self.agent_speaking and _dbfs(frame) < self.echo_gate_dbfs:
            self.gated_frames += 1
            speech = False
        residue = max(self._echo_dbfs) if self.residual_echo is not None else None
        if speech and residue is not None and _dbfs(frame) < residue + self.echo_margin_db:
            self.residual_gated_frames += 1
            speech = False
        self._judged_ms += _VAD_FRAME_MS
        if self.in_speech:
            self._silence_ms = 0 if speech else self._silence_ms + _VAD_FRAME_MS
            if self._silence_ms >= self.hangover_ms:
                self.reset()
            return False
        self._run_ms = self._run_ms + _VAD_FRAME_MS if speech else 0
        needed = self.echo_min_speech_ms if self.agent_speaking else self.min_speech_ms
        if self._run_ms < needed:
            return False
        self.in_speech = True
        self.triggers += 1
        self.last_start_ms = self._judged_ms - self._run_ms
        if self.on_speech_started is not None:
            self.on_speech_started()
        return True


def _check_residual(residual_echo: object, echo_margin_db: object) -> float:
    if residual_echo is not None and not hasattr(residual_echo, "residual_echo_dbfs"):
        raise ConfigurationError(
            f"residual_echo={residual_echo!r} has no residual_echo_dbfs: pass the "
            "EchoCanceller whose output the detector hears (EchoCancelledInput.canceller)"
        )
    if (
        isinstance(echo_margin_db, bool)
        or not isinstance(echo_margin_db, int | float)
        or not 0.0 <= echo_margin_db <= 40.0
    ):
        raise ConfigurationError(
            f"echo_margin_db={echo_margin_db!r} is invalid: expected 0.0 ..= 40.0 dB"
        )
    return float(echo_margin_db)


def _dbfs(frame: npt.NDArray[np.int16]) -> float:
    rms = math.sqrt(float(np.mean(frame.astype(np.float64) ** 2)))
    return 20 * math.log10(max(rms, 1e-9) / 32768.0)
