"""False-interruption recovery: decide whether a local barge-in was the user taking the turn.

Sans-I/O and pure: feed it what happened (a local onset, the server VAD's
``input_audio_buffer.speech_started`` / ``speech_stopped``, the user's transcript), with the time
as an argument, and poll it; it answers :class:`Decision` ``"resume"`` or ``"cut"`` once it can.
The caller pauses the output on the onset (:meth:`AudioOutput.pause`), then either resumes it
(:meth:`AudioOutput.resume`: nothing truncated) or cuts it at the pause point
(:meth:`AudioOutput.interrupt` then ``conversation.item.truncate`` as today).

The rules, in order:

1. The server VAD does not confirm speech within ``window_ms`` of the onset: a cough, a door, a
   click — resume (reason ``"unconfirmed"``).
2. The user's transcript is empty or only words from ``fillers`` ("mm-hmm", "yeah", "okay"):
   a backchannel — resume (reason ``"filler"``).
3. The transcript has other words — cut (reason ``"transcript"``).
4. No transcript is coming (``wait_for_transcript=False``) or it is late
   (``transcript_timeout_ms`` after the server's ``speech_stopped``): the server's speech span
   decides — at least ``min_turn_ms`` cuts (reason ``"speech"``), shorter resumes (``"short"``).
   Without a transcript to wait for, speech cuts as soon as it has lasted ``min_turn_ms``.
   ``vad_silence_ms``: the silence the VAD waits for before ``speech_stopped`` (the server's
   ``silence_duration_ms``), taken off the measured span so a cough is measured as a cough.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from voxwire.exceptions import ConfigurationError, InvalidState

__all__ = ["DEFAULT_FILLERS", "Decision", "FalseInterruptionFilter"]

#: Backchannels and hesitations that do not take the turn (lower case, without punctuation).
DEFAULT_FILLERS = frozenset(
    {
        "mm", "mmm", "mhm", "mm-hmm", "mmhmm", "hmm", "hm", "uh-huh", "uhhuh", "uh", "um",
        "erm", "ah", "oh", "yeah", "yep", "yes", "ok", "okay", "right", "sure", "alright",
        "i see", "got it", "cool",
    }
)  # fmt: skip

_WORD = re.compile(r"[a-z0-9']+(?:-[a-z0-9']+)*")


@dataclass(frozen=True)
class Decision:
    """What to do with the paused output, why, and when it was decided."""

    action: Literal["resume", "cut"]
    reason: Literal["unconfirmed", "filler", "transcript", "speech", "short"]
    at_ms: float
    transcript: str | None = None


def _check_ms(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 60_000:
        raise ConfigurationError(f"{name}={value!r} is invalid: expected ms in (0, 60000]")
    return float(value)


class FalseInterruptionFilter:
    """One decision per local onset; see the module docs for the rules."""

    def __init__(
        self,
        *,
        window_ms: float = 800.0,
        min_turn_ms: float = 600.0,
        wait_for_transcript: bool = True,
        transcript_timeout_ms: float = 1500.0,
        fillers: Iterable[str] = DEFAULT_FILLERS,
        vad_silence_ms: float = 0.0,
    ) -> None:
        self.window_ms = _check_ms("window_ms", window_ms)
        self.min_turn_ms = _check_ms("min_turn_ms", min_turn_ms)
        self.transcript_timeout_ms = _check_ms("transcript_timeout_ms", transcript_timeout_ms)
        self.wait_for_transcript = bool(wait_for_transcript)
        if isinstance(vad_silence_ms, bool) or not isinstance(vad_silence_ms, int | float):
            raise ConfigurationError(f"vad_silence_ms={vad_silence_ms!r} is invalid: expected ms")
        if not 0 <= vad_silence_ms <= 10_000:
            raise ConfigurationError(f"vad_silence_ms={vad_silence_ms!r} is invalid: 0..=10000")
        self.vad_silence_ms = float(vad_silence_ms)
        if isinstance(fillers, str):
            raise ConfigurationError("fillers must be a collection of words, not one string")
        self.fillers = frozenset(" ".join(_WORD.findall(f.lower())) for f in fillers)
        self._onset_ms: float | None = None
        self._started_ms: float | None = None
        self._stopped_ms: float | None = None
        self.decisions: list[Decision] = []
        """Every decision made, in order (for metrics: resumed vs cut)."""

    @property
    def pending(self) -> bool:
        """Whether an onset is waiting for its decision (the output should be paused)."""
        return self._onset_ms is not None

    def onset(self, now_ms: float) -> None:
        """The local detector heard the user start while the agent spoke (pause the output)."""
        if self._onset_ms is None:
            self._onset_ms = now_ms
            self._started_ms = self._stopped_ms = None

    def speech_started(self, now_ms: float) -> Decision | None:
        """The server VAD confirmed speech (``input_audio_buffer.speech_started``)."""
        if self._onset_ms is not None and self._started_ms is None:
            self._started_ms = now_ms
        return self.poll(now_ms)

    def speech_stopped(self, now_ms: float) -> Decision | None:
        """The server VAD saw the speech end (``input_audio_buffer.speech_stopped``)."""
        if self._started_ms is not None and self._stopped_ms is None:
            self._stopped_ms = now_ms
        return self.poll(now_ms)

    def transcript(self, text: str, now_ms: float) -> Decision | None:
        """The user's transcript of the confirmed speech (may be empty)."""
        if self._onset_ms is None or self._started_ms is None:
            return None
        words = " ".join(_WORD.findall(text.lower()))
        if not words or words in self.fillers or all(w in self.fillers for w in words.split()):
            return self._decide("resume", "filler", now_ms, text)
        return self._decide("cut", "transcript", now_ms, text)

    def poll(self, now_ms: float) -> Decision | None:
        """The decision due at ``now_ms``, if one is (call it on a timer while pending)."""
        onset, started, stopped = self._onset_ms, self._started_ms, self._stopped_ms
        if onset is None:
            return None
        if started is None:
            if now_ms - onset >= self.window_ms:
                return self._decide("resume", "unconfirmed", now_ms)
            return None
        # The VAD's span ends with its trailing silence (or may still be in it): not speech.
        end = (stopped if stopped is not None else now_ms) - self.vad_silence_ms
        if end - started >= self.min_turn_ms and not self.wait_for_transcript:
            return self._decide("cut", "speech", now_ms)
        if stopped is None:
            return None
        late = now_ms - stopped >= self.transcript_timeout_ms
        if self.wait_for_transcript and not late:
            return None
        if end - started >= self.min_turn_ms:
            return self._decide("cut", "speech", now_ms)
        return self._decide("resume", "short", now_ms)

    def cancel(self) -> None:
        """Forget the pending onset (the response ended or was cut for another reason)."""
        self._onset_ms = self._started_ms = self._stopped_ms = None

    def _decide(
        self,
        action: Literal["resume", "cut"],
        reason: Literal["unconfirmed", "filler", "transcript", "speech", "short"],
        now_ms: float,
        text: str | None = None,
    ) -> Decision:
        if self._onset_ms is None:
            raise InvalidState("no onset is pending")
        decision = Decision(action, reason, now_ms, text)
        self.decisions.append(decision)
        self.cancel()
        return decision
