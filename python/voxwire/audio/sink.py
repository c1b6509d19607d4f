"""Assistant audio into a :class:`~voxwire.audio.PlaybackClock` (and its ring): the output path.

Pure and synchronous (no event loop): each delta of one ``(item_id, content_index)`` content
part is decoded from G.711 when the session's output format says so, resampled to the ring's
rate by one streaming resampler per part (flushed when the part ends), and pushed into the
clock, which tags every sample with its part so an interruption knows exactly what was heard.

A part's resampler starts with its delay of warm-up before the sound (76.25 ring samples from
24 to 44.1 kHz, 82 to 48 kHz: 1.7 ms): the clock is told with the part's first push
(``warmup_samples``), so it counts as heard only the sound after it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from voxwire._core import ItemPlayback, PlaybackClock, Resampler
from voxwire.audio import g711

__all__ = ["PlaybackSink", "SegmentKey"]

SegmentKey = tuple[str, int]
"""``(item_id, content_index)``: one content part of one assistant item."""


@dataclass
class _Segment:
    rate_hz: int
    resampler: Resampler | None
    warmup: float  # ring samples before the sound, given to the clock with the first push
    sound_start: float  # ring position where the part's sound (its first sample) starts


class PlaybackSink:
    """Feeds a playback clock; counts what did not fit in its ring."""

    def __init__(self, clock: PlaybackClock) -> None:
        self.clock = clock
        self._segments: dict[SegmentKey, _Segment] = {}
        self.dropped_samples = 0
        """Samples refused because the ring was full (size the ring for the longest reply)."""

    def push(self, key: SegmentKey, data: bytes, format_type: str, rate_hz: int) -> int:
        """Queue one delta; returns the samples that did not fit (0 normally)."""
        pcm: bytes | npt.NDArray[np.int16]
        if format_type == "audio/pcmu":
            pcm = g711.ulaw_decode(data)
        elif format_type == "audio/pcma":
            pcm = g711.alaw_decode(data)
        else:
            pcm = data
        segment = self._segments.get(key)
        if segment is None:
            ring_rate_hz = self.clock.ring_rate_hz
            resampler = Resampler(rate_hz, ring_rate_hz) if rate_hz != ring_rate_hz else None
            warmup = resampler.output_delay() if resampler is not None else 0.0
            start = self.clock.ring.pushed_samples + warmup
            segment = self._segments[key] = _Segment(rate_hz, resampler, warmup, start)
        if segment.resampler is not None:
            pcm = segment.resampler.process(pcm)
        refused = self._queue(key, pcm, segment.rate_hz, segment.warmup)
        segment.warmup = 0.0
        return refused

    def sound_start(self, key: SegmentKey) -> float | None:
        """Ring position (possibly fractional) where the sound of the part ``key`` starts:
        its first ring sample plus its resampler's warm-up (``None`` once it ended or was cut)."""
        segment = self._segments.get(key)
        return segment.sound_start if segment is not None else None

    def end(self, key: SegmentKey) -> int:
        """The content part ended: flush its resampler. Returns samples that did not fit."""
        segment = self._segments.pop(key, None)
        if segment is None or segment.resampler is None:
            return 0
        return self._queue(key, segment.resampler.flush(), segment.rate_hz)

    def interrupt(self) -> list[ItemPlayback]:
        """Drop everything not yet played; what each item had played (see PlaybackClock)."""
        self._segments.clear()
        return self.clock.interrupt()

    def _queue(
        self,
        key: SegmentKey,
        pcm: bytes | npt.NDArray[np.int16],
        rate_hz: int,
        warmup: float = 0.0,
    ) -> int:
        n_samples = len(pcm) // 2 if isinstance(pcm, bytes) else len(pcm)
        accepted = self.clock.push(key[0], key[1], pcm, item_rate_hz=rate_hz, warmup_samples=warmup)
        refused = n_samples - accepted
        self.dropped_samples += refused
        return refused
