"""Assistant transcripts released in step with what the listener heard.

Live places audio and transcript deltas on one session timeline (``start_ms``/``end_ms``). The
audio goes into an :class:`~voxwire.audio.AudioOutput`; its ring counts the samples the
listener has heard (device latency excluded). :class:`HeardClock` remembers, per audio delta,
the ring position after it and the timeline span it covers, and turns the heard ring position
back into a timeline position; :class:`TranscriptRelease` holds each transcript delta until that
position reaches its ``start_ms``. Pure: the session calls :meth:`TranscriptRelease.due` on a
tick and after each event.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["HeardClock", "TranscriptRelease"]


@dataclass(frozen=True, slots=True)
class _Span:
    ring_start: int
    ring_end: int
    start_ms: int
    end_ms: int


class HeardClock:
    """Ring samples <-> session timeline, for the audio pushed so far."""

    def __init__(self) -> None:
        self._spans: deque[_Span] = deque()
        self._heard_ms = 0

    def pushed(self, ring_start: int, ring_end: int, start_ms: int, end_ms: int) -> None:
        """An audio delta for ``start_ms``..``end_ms`` now fills ring ``ring_start..ring_end``."""
        if ring_end > ring_start:
            self._spans.append(_Span(ring_start, ring_end, start_ms, end_ms))

    def heard_ms(self, heard_samples: int) -> int:
        """The timeline position the listener has heard up to (it never goes back)."""
        while self._spans and self._spans[0].ring_end <= heard_samples:
            self._heard_ms = max(self._heard_ms, self._spans.popleft().end_ms)
        if self._spans and self._spans[0].ring_start < heard_samples:
            span = self._spans[0]
            part = (heard_samples - span.ring_start) / (span.ring_end - span.ring_start)
            self._heard_ms = max(
                self._heard_ms, span.start_ms + int(part * (span.end_ms - span.start_ms))
            )
        return self._heard_ms

    def dropped(self) -> None:
        """The output was interrupted: nothing queued will be heard."""
        self._spans.clear()


@dataclass(frozen=True, slots=True)
class HeldDelta:
    delta: str
    start_ms: int
    end_ms: int


class TranscriptRelease:
    """Assistant transcript deltas waiting for their audio to be heard."""

    def __init__(self) -> None:
        self._held: deque[HeldDelta] = deque()

    def hold(self, delta: str, start_ms: int, end_ms: int) -> None:
        self._held.append(HeldDelta(delta, start_ms, end_ms))

    def due(self, heard_ms: int) -> list[HeldDelta]:
        """The held deltas whose audio has started to be heard, in order."""
        ready: list[HeldDelta] = []
        while self._held and self._held[0].start_ms <= heard_ms:
            ready.append(self._held.popleft())
        return ready

    def drop(self) -> list[HeldDelta]:
        """The audio was cut: these deltas will never be heard."""
        dropped = list(self._held)
        self._held.clear()
        return dropped

    def __len__(self) -> int:
        return len(self._held)
