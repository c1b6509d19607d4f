"""The local server's real voice, and the same voice held back until a test lets it speak.

:class:`HeldEngine` wraps a real :class:`~voxwire.server.engines.tts.SpeechEngine` (the seam
``RealtimeServer(tts=...)`` and ``Voice`` take): its synthesis waits for :attr:`release`, so a test
can make something happen — a cancel, a barge-in — while an answer is announced but has no audio
yet, whatever the machine's speed.
"""

from __future__ import annotations

import threading

from voxwire.server.engines.tts import (
    EspeakEngine,
    HibariEngine,
    NoVoiceError,
    Speech,
    SpeechEngine,
)

#: The longest a held synthesis waits (a failing test must not hang the voice's thread).
HOLD_LIMIT_S = 20.0


def real_engine() -> SpeechEngine:
    """The voice ``tts="auto"`` picks: espeak-ng if installed, else hibari."""
    try:
        return EspeakEngine.shared()
    except NoVoiceError:
        return HibariEngine.shared()


class HeldEngine:
    """A real engine whose every synthesis waits until :attr:`release` is set."""

    def __init__(self, engine: SpeechEngine | None = None) -> None:
        self._engine = engine if engine is not None else real_engine()
        self.name = self._engine.name
        self.release = threading.Event()
        self.started = threading.Event()
        """A synthesis is waiting (or ran)."""

    def synthesize(self, text: str, voice: str, speed: float = 1.0) -> Speech:
        self.started.set()
        self.release.wait(HOLD_LIMIT_S)
        return self._engine.synthesize(text, voice, speed)
