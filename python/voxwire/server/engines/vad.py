"""Server VAD: turn detection on the input stream with WebRTC's voice activity detector.

The input audio (PCM16 24 kHz, or G.711 8 kHz decoded by the Rust core) is resampled to 16 kHz by
the Rust :class:`~voxwire.audio.Resampler` — the rate ``webrtcvad`` works best at — and judged in
20 ms frames. Positions are on the session's input timeline (all audio ever appended), as the GA
events define them:

* ``speech_started.audio_start_ms``: where speech began, less ``prefix_padding_ms`` (GA: "includes
  the prefix_padding_ms configured in the Session");
* ``speech_stopped.audio_end_ms``: where ``silence_duration_ms`` of silence after speech ended
  (GA: "includes the min_silence_duration_ms").

Speech starts after three speech frames in a row (60 ms) and stops after ``silence_duration_ms``
without one. ``threshold`` (0 to 1) picks the aggressiveness of webrtcvad (0 to 3).
``idle_timeout_ms`` is measured on the input timeline since the last speech (or the session
start): the real service measures it from the end of the assistant's playback, which a server
cannot see.

``semantic_vad`` decides whether the user has finished from how the speech before a pause
*sounds*, with no language model: when a pause begins, :func:`completeness` scores the last
300 ms of speech (0: sounds unfinished, 1: sounds finished) from two prosodic cues —

* energy: an utterance that ends trails off, below the turn's typical loudness; one cut off
  mid-word (or a held "uhh") ends loud;
* pitch: a statement ends falling and a question rising; a flat ending is what a list or a
  hesitation sounds like ("and then…").

The pause needed to end the turn is then between a minimum (sounds finished) and the
eagerness's maximum (sounds unfinished). The GA reference gives those maxima: "low, medium, and
high have max timeouts of 8s, 4s, and 2s respectively", ``auto`` being ``medium`` (the
``eagerness`` docstring of the official ``openai`` types, ``RealtimeAudioInputTurnDetection``).
The minima (1000, 500, 250 ms) are ours. It works on audio alone: the server has no transcript
of a turn before the turn is committed, so there is no lexical cue.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import webrtcvad  # type: ignore[import-untyped]  # no stubs or py.typed

from voxwire.audio import Resampler, g711
from voxwire.protocol.units import G711_8K, PCM16_24K
from voxwire.server.core.ids import ServerIds
from voxwire.server.core.turn_detection import Signal, SpeechStarted, SpeechStopped, VadTimeout

__all__ = ["TurnDetector", "completeness"]

VAD_RATE_HZ: Final = 16_000
FRAME_MS: Final = 20
FRAME_SAMPLES: Final = VAD_RATE_HZ * FRAME_MS // 1000
START_FRAMES: Final = 3
#: eagerness -> (pause when the speech sounds finished, the GA maximum) in ms.
SEMANTIC_WAIT_MS: Final = {
    "low": (1000, 8000),
    "medium": (500, 4000),
    "auto": (500, 4000),
    "high": (250, 2000),
}
TAIL_FRAMES: Final = 15  # the 300 ms of speech before a pause that completeness() judges
_MIN_PITCH_HZ: Final = 70
_MAX_PITCH_HZ: Final = 400
_VOICED_CORRELATION: Final = 0.5
_SILENT_DB: Final = -70.0
_HANGOVER_DB: Final = 30.0  # frames this far below the turn's median carry no voice
_EDGE_DB: Final = 9.0
_TREND_FRAMES: Final = 5


@dataclass(frozen=True)
class _Settings:
    enabled: bool = False
    aggressiveness: int = 2
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 200
    idle_timeout_ms: int | None = None
    create_response: bool = True
    interrupt_response: bool = True
    max_silence_ms: int | None = None  # semantic_vad: the pause when the speech sounds unfinished

    @classmethod
    def from_session(cls, session: Mapping[str, Any]) -> _Settings:
        td = session["audio"]["input"]["turn_detection"]
        if td is None:
            return cls(enabled=False)
        create = td.get("create_response")
        interrupt = td.get("interrupt_response")
        common = {
            "enabled": True,
            "create_response": True if create is None else bool(create),
            "interrupt_response": True if interrupt is None else bool(interrupt),
        }
        if td["type"] == "semantic_vad":
            least, most = SEMANTIC_WAIT_MS[td.get("eagerness") or "auto"]
            return cls(silence_duration_ms=least, max_silence_ms=most, **common)
        threshold = td.get("threshold")
        threshold = 0.5 if threshold is None else float(threshold)
        return cls(
            aggressiveness=min(3, int(threshold * 4)),
            prefix_padding_ms=_int_or(td.get("prefix_padding_ms"), 300),
            silence_duration_ms=_int_or(td.get("silence_duration_ms"), 200),
            idle_timeout_ms=td.get("idle_timeout_ms"),
            **common,
        )


def _int_or(value: object, default: int) -> int:
    return int(value) if isinstance(value, int | float) else default


class TurnDetector:
    """Feeds input audio to webrtcvad and reports speech start / stop / idle timeout."""

    def __init__(self, settings: _Settings, ids: ServerIds) -> None:
        self._settings = settings
        self._ids = ids
        self._vad = webrtcvad.Vad(settings.aggressiveness)
        self._resampler: Resampler | None = None
        self._format: str | None = None
        self._pending = np.zeros(0, dtype=np.int16)
        self._frames_seen = 0  # 16 kHz frames judged since the timeline's start
        self._origin_ms = 0  # timeline position of the first sample fed
        self._speech_run = 0
        self._silence_ms = 0
        self._item_id: str | None = None
        self._idle_since_ms = 0
        # semantic_vad: the turn's speech-frame loudness, its last frames, this pause's length
        self._turn_db: list[float] = []
        self._tail: deque[npt.NDArray[np.int16]] = deque(maxlen=TAIL_FRAMES)
        self._pause_ms: int | None = None

    @classmethod
    def from_session(cls, session: Mapping[str, Any], ids: ServerIds) -> TurnDetector:
        return cls(_Settings.from_session(session), ids)

    def reconfigured(self, session: Mapping[str, Any]) -> TurnDetector:
        """This detector, or a new one if the session's turn detection changed."""
        settings = _Settings.from_session(session)
        if settings == self._settings:
            return self
        return TurnDetector(settings, self._ids)

    @property
    def enabled(self) -> bool:
        return self._settings.enabled

    @property
    def in_speech(self) -> bool:
        return self._item_id is not None

    @property
    def prefix_padding_ms(self) -> int:
        return self._settings.prefix_padding_ms

    @property
    def create_response(self) -> bool:
        return self._settings.create_response

    @property
    def interrupt_response(self) -> bool:
        return self._settings.interrupt_response

    def reset(self) -> None:
        """The input buffer was cleared: forget a turn in progress."""
        self._item_id = None
        self._speech_run = 0
        self._silence_ms = 0
        self._forget_turn()

    def _forget_turn(self) -> None:
        self._turn_db.clear()
        self._tail.clear()
        self._pause_ms = None

    def feed(self, audio: bytes, format_type: str, timeline_ms: int) -> list[Signal]:
        """Judge ``audio`` (wire format ``audio/pcm``, ``audio/pcmu`` or ``audio/pcma``), which
        starts at ``timeline_ms`` on the input timeline."""
        pcm16k = self._to_16k(audio, format_type, timeline_ms)
        if len(self._pending):
            pcm16k = np.concatenate([self._pending, pcm16k])
        whole = len(pcm16k) // FRAME_SAMPLES * FRAME_SAMPLES
        self._pending = pcm16k[whole:].copy()
        signals: list[Signal] = []
        for start in range(0, whole, FRAME_SAMPLES):
            frame = pcm16k[start : start + FRAME_SAMPLES]
            speech = self._vad.is_speech(frame.tobytes(), VAD_RATE_HZ)
            self._frames_seen += 1
            signal = self._step(speech, frame)
            if signal is not None:
                signals.append(signal)
        return signals

    def _to_16k(self, audio: bytes, format_type: str, timeline_ms: int) -> npt.NDArray[np.int16]:
        if self._format != format_type or self._resampler is None:
            self._format = format_type
            rate_hz = (
                PCM16_24K.sample_rate_hz if format_type == "audio/pcm" else G711_8K.sample_rate_hz
            )
            self._resampler = Resampler(rate_hz, VAD_RATE_HZ, "fast")
            self._pending = np.zeros(0, dtype=np.int16)
            # The filter delays its output; start the frame clock that much earlier.
            delay_ms = self._resampler.output_delay() * 1000 / VAD_RATE_HZ
            self._origin_ms = timeline_ms - round(delay_ms)
            self._frames_seen = 0
        if format_type == "audio/pcma":
            pcm = g711.alaw_decode(audio)
        elif format_type == "audio/pcmu":
            pcm = g711.ulaw_decode(audio)
        else:
            pcm = np.frombuffer(audio[: len(audio) // 2 * 2], dtype="<i2").astype(np.int16)
        return self._resampler.process(pcm)

    def _now_ms(self) -> int:
        return max(0, self._origin_ms + self._frames_seen * FRAME_MS)

    def _step(self, speech: bool, frame: npt.NDArray[np.int16]) -> Signal | None:
        settings = self._settings
        now_ms = self._now_ms()
        if self._item_id is None:
            self._speech_run = self._speech_run + 1 if speech else 0
            if settings.max_silence_ms is not None:
                if speech:
                    self._tail.append(frame)
                else:
                    self._tail.clear()
            if self._speech_run >= START_FRAMES:
                onset_ms = now_ms - START_FRAMES * FRAME_MS
                self._item_id = self._ids.item()
                self._silence_ms = 0
                self._turn_db = [_db(f) for f in self._tail]
                start_ms = max(0, onset_ms - settings.prefix_padding_ms)
                return SpeechStarted(self._item_id, start_ms)
            idle = settings.idle_timeout_ms
            if idle is not None and now_ms - self._idle_since_ms >= idle:
                start_ms, self._idle_since_ms = self._idle_since_ms, now_ms
                return VadTimeout(self._ids.item(), start_ms, now_ms)
            return None
        if speech:
            self._silence_ms = 0
            if settings.max_silence_ms is not None:
                self._pause_ms = None
                self._tail.append(frame)
                self._turn_db.append(_db(frame))
            return None
        self._silence_ms += FRAME_MS
        needed_ms = settings.silence_duration_ms
        if settings.max_silence_ms is not None:
            if self._pause_ms is None:  # a pause begins: how long must it be to end the turn?
                score = completeness(list(self._tail), self._turn_db)
                span = settings.max_silence_ms - settings.silence_duration_ms
                self._pause_ms = settings.silence_duration_ms + round(span * (1 - score) ** 2)
            needed_ms = self._pause_ms
        if self._silence_ms < needed_ms:
            return None
        item_id, self._item_id = self._item_id, None
        self._speech_run = 0
        self._idle_since_ms = now_ms
        self._forget_turn()
        return SpeechStopped(item_id, now_ms)


def _db(frame: npt.NDArray[np.int16]) -> float:
    """The frame's loudness in dB relative to full scale."""
    power = float(np.mean(frame.astype(np.float64) ** 2)) / 32768.0**2
    return max(_SILENT_DB, 10.0 * float(np.log10(power))) if power > 0 else _SILENT_DB


def _pitch_hz(samples: npt.NDArray[np.float64]) -> float | None:
    """The fundamental frequency of voiced ``samples`` (16 kHz) from their autocorrelation
    (unbiased, normalised by the energy), or ``None`` if they are not clearly voiced."""
    samples = samples - samples.mean()
    n = len(samples)
    energy = float(np.dot(samples, samples))
    if energy <= 0:
        return None
    shortest = VAD_RATE_HZ // _MAX_PITCH_HZ
    longest = min(VAD_RATE_HZ // _MIN_PITCH_HZ, n // 2)
    full = np.correlate(samples, samples, mode="full")[n - 1 :]
    lags = np.arange(shortest, longest + 1)
    correlation = full[lags] / energy * n / (n - lags)
    best = int(np.argmax(correlation))
    if float(correlation[best]) < _VOICED_CORRELATION:
        return None
    return float(VAD_RATE_HZ / lags[best])


def completeness(tail: Sequence[npt.NDArray[np.int16]], turn_db: Sequence[float]) -> float:
    """How finished the speech before a pause sounds, 0 to 1 (semantic_vad; module docstring).

    ``tail``: the last speech frames (20 ms at 16 kHz) before the pause, oldest first;
    ``turn_db``: the loudness of every speech frame of the turn. Three fifths of the score is
    the energy cue — the trend of the last 100 ms of voice, full when it falls by 1.5 dB a frame
    or more, none when it rises as much —, two fifths the pitch cue — how much the pitch moves
    over the tail, full at 15 %, falling or rising. A cue that cannot be measured counts 0.5.
    """
    if not tail or not turn_db:
        return 0.5
    median_db = float(np.median(turn_db))
    # webrtcvad keeps calling frames speech for a while after the voice stops (its hangover):
    # judge the speech up to the last frame that still carries the voice; a last frame far
    # below the one before it is the edge of a cut, only partly voiced.
    levels = [_db(frame) for frame in tail]
    voiced = len(levels)
    while voiced > 0 and levels[voiced - 1] < median_db - _HANGOVER_DB:
        voiced -= 1
    if voiced >= 2 and levels[voiced - 1] < levels[voiced - 2] - _EDGE_DB:
        voiced -= 1
    if voiced < _TREND_FRAMES:
        return 0.5
    trend = float(
        np.polyfit(np.arange(_TREND_FRAMES), levels[voiced - _TREND_FRAMES : voiced], 1)[0]
    )
    energy = min(1.0, max(0.0, 0.5 - trend / 3.0))
    # Pitch in 40 ms windows (two frames: enough periods of a low voice), one per frame.
    pitches: list[tuple[int, float]] = []
    for index in range(1, voiced):
        window = np.concatenate([tail[index - 1], tail[index]]).astype(np.float64)
        pitch = _pitch_hz(window)
        if pitch is not None:
            pitches.append((index, pitch))
    if pitches:  # octave errors of the estimate are not intonation
        typical = float(np.median([pitch for _, pitch in pitches]))
        pitches = [(i, pitch) for i, pitch in pitches if 0.7 < pitch / typical < 1.4]
    prosody = 0.5
    if len(pitches) >= 4:
        positions = np.array([index for index, _ in pitches], dtype=np.float64)
        values = np.log2(np.array([pitch for _, pitch in pitches]))
        slope = float(np.polyfit(positions, values, 1)[0])  # octaves per frame
        change = abs(2.0 ** (slope * float(positions[-1] - positions[0])) - 1.0)
        prosody = min(1.0, change / 0.15)
    return 0.6 * energy + 0.4 * prosody
