"""What turn detection tells the session, and what the session asks of a detector.

The session (:class:`~voxwire.server.core.session.ServerSession`) feeds appended input audio to a
:class:`TurnDetection` and turns its signals into ``input_audio_buffer.speech_started`` /
``speech_stopped`` / ``timeout_triggered``, commits and responses. The detector itself is an
engine (:class:`voxwire.server.engines.vad.TurnDetector`, webrtcvad and prosody), handed to the
session as a factory so that the pure core imports no engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from voxwire.protocol import (
    InputAudioBufferSpeechStarted,
    InputAudioBufferSpeechStopped,
    InputAudioBufferTimeoutTriggered,
)
from voxwire.server.core.ids import ServerIds

__all__ = [
    "Signal",
    "SpeechStarted",
    "SpeechStopped",
    "TurnDetection",
    "TurnDetectionFactory",
    "VadTimeout",
]


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


class TurnDetection(Protocol):
    """A turn detector configured from the session's ``audio.input.turn_detection``."""

    @property
    def enabled(self) -> bool: ...

    @property
    def in_speech(self) -> bool: ...

    @property
    def prefix_padding_ms(self) -> int: ...

    @property
    def create_response(self) -> bool: ...

    @property
    def interrupt_response(self) -> bool: ...

    def reconfigured(self, session: Mapping[str, Any]) -> TurnDetection:
        """This detector, or a new one if the session's turn detection changed."""
        ...

    def reset(self) -> None:
        """The input buffer was cleared: forget a turn in progress."""
        ...

    def feed(self, audio: bytes, format_type: str, timeline_ms: int) -> list[Signal]:
        """Judge ``audio`` (in the wire format ``format_type``) starting at ``timeline_ms``."""
        ...


#: Makes the detector of a session (its settings dictionary) with the connection's ids.
TurnDetectionFactory = Callable[[Mapping[str, Any], ServerIds], TurnDetection]
