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
``semantic_vad`` is approximated by silence durations from its eagerness (low 1000 ms,
auto/medium 500 ms, high 250 ms): there is no semantic model here. ``idle_timeout_ms`` is
measured on the input timeline since the last speech (or the session start): the real service
measures it from the end of the assistant's playback, which a server cannot see.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import webrtcvad  # type: ignore[import-untyped]  # no stubs or py.typed

from voxwire.audio import Resampler, g711
from voxwire.protocol import (
    InputAudioBufferSpeechStarted,
    InputAudioBufferSpeechStopped,
    InputAudioBufferTimeoutTriggered,
)
from voxwire.protocol.units import G711_8K, PCM16_24K
from voxwire.server.ids import ServerIds

__all__ = ["SpeechStarted", "SpeechStopped", "TurnDetector", "VadTimeout"]

VAD_RATE_HZ: Final = 16_000
FRAME_MS: Final = 20
FRAME_SAMPLES: Final = VAD_RATE_HZ * FRAME_MS // 1000
START_FRAMES: Final = 3
_SEMANTIC_SILENCE_MS: Final = {"low": 1000, "medium": 500, "auto": 500, "high": 250}


@dataclass(frozen=True)
class SpeechStarted:
    item_id: str
    audio_start_ms: int

    def event(self, ids: ServerIds) -> InputAudioBufferSpeechStarted:
        return InputAudioBufferSpeechStarted(
            event_id=ids.event(), item_id=self.item_id, audio_start_ms=self.audio_start_ms
        )


@dataclass(frozen=True)
class SpeechStopped:
    item_id: str
    audio_end_ms: int

    def event(self, ids: ServerIds) -> InputAudioBufferSpeechStopped:
        return InputAudioBufferSpeechStopped(
            event_id=ids.event(), item_id=self.item_id, audio_end_ms=self.audio_end_ms
        )


@dataclass(frozen=True)
class VadTimeout:
    item_id: str
    audio_start_ms: int
    audio_end_ms: int

    def event(self, ids: ServerIds) -> InputAudioBufferTimeoutTriggered:
        return InputAudioBufferTimeoutTriggered(
            event_id=ids.event(),
            item_id=self.item_id,
            audio_start_ms=self.audio_start_ms,
            audio_end_ms=self.audio_end_ms,
        )


Signal = SpeechStarted | SpeechStopped | VadTimeout


@dataclass(frozen=True)
class _Settings:
    enabled: bool = False
    aggressiveness: int = 2
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 200
    idle_timeout_ms: int | None = None
    create_response: bool = True
    interrupt_response: bool = True

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
            silence = _SEMANTIC_SILENCE_MS.get(td.get("eagerness") or "auto", 500)
            return cls(silence_duration_ms=silence, **common)
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
            signal = self._step(speech)
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

    def _step(self, speech: bool) -> Signal | None:
        settings = self._settings
        now_ms = self._now_ms()
        if self._item_id is None:
            self._speech_run = self._speech_run + 1 if speech else 0
            if self._speech_run >= START_FRAMES:
                onset_ms = now_ms - START_FRAMES * FRAME_MS
                self._item_id = self._ids.item()
                self._silence_ms = 0
                start_ms = max(0, onset_ms - settings.prefix_padding_ms)
                return SpeechStarted(self._item_id, start_ms)
            idle = settings.idle_timeout_ms
            if idle is not None and now_ms - self._idle_since_ms >= idle:
                start_ms, self._idle_since_ms = self._idle_since_ms, now_ms
                return VadTimeout(self._ids.item(), start_ms, now_ms)
            return None
        if speech:
            self._silence_ms = 0
            return None
        self._silence_ms += FRAME_MS
        if self._silence_ms < settings.silence_duration_ms:
            return None
        item_id, self._item_id = self._item_id, None
        self._speech_run = 0
        self._idle_since_ms = now_ms
        return SpeechStopped(item_id, now_ms)
