"""Assistant audio straight into a :class:`~voxwire.audio.PlaybackClock` (and its ring).

The session hands each audio delta here instead of queueing it as an event: G.711 is decoded,
audio at another rate than the ring's is resampled (one streaming resampler per content part,
flushed when the part ends), and the clock tags every sample with its ``(item_id,
content_index)`` so an interruption knows exactly what was heard.

:class:`DrainWatcher` tells the session when the listener has heard the last queued sample, so
that ``agent_state`` follows what is heard rather than what the server has finished sending.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from voxwire.audio import ItemPlayback, PlaybackClock, Resampler, g711
from voxwire.protocol.audio_ledger import SegmentKey
from voxwire.protocol.config import AudioConfig, AudioFormat, AudioOutputConfig, SessionConfig

__all__ = ["DrainWatcher", "PlaybackSink", "output_format"]


def output_format(session: SessionConfig | None) -> tuple[str, int]:
    """``(format type, rate_hz)`` of the audio the server sends (``audio/pcm`` 24 kHz unless
    configured)."""
    if (
        session is not None
        and isinstance(session.audio, AudioConfig)
        and isinstance(session.audio.output, AudioOutputConfig)
        and isinstance(session.audio.output.format, AudioFormat)
    ):
        fmt = session.audio.output.format
        return fmt.type, fmt.sample_format.sample_rate_hz
    return "audio/pcm", 24_000


@dataclass
class _Segment:
    rate_hz: int
    resampler: Resampler | None


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
            segment = self._segments[key] = _Segment(rate_hz, resampler)
        if segment.resampler is not None:
            pcm = segment.resampler.process(pcm)
        return self._queue(key, pcm, segment.rate_hz)

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

    def _queue(self, key: SegmentKey, pcm: bytes | npt.NDArray[np.int16], rate_hz: int) -> int:
        n_samples = len(pcm) // 2 if isinstance(pcm, bytes) else len(pcm)
        accepted = self.clock.push(key[0], key[1], pcm, item_rate_hz=rate_hz)
        refused = n_samples - accepted
        self.dropped_samples += refused
        return refused


class DrainWatcher:
    """Calls ``on_drained()`` once the clock has nothing left to play.

    The clock has no callback (the device thread only pops samples), so while armed — from the
    end of a response until its audio has played out — a task polls ``buffered_samples`` every
    ``poll_s``; it ends as soon as the ring runs dry. ``arm()`` again for the next response.
    ``on_error`` gets an exception of the polling task. ``aclose()`` stops and awaits it.
    """

    def __init__(
        self,
        clock: PlaybackClock,
        on_drained: Callable[[], None],
        on_error: Callable[[BaseException], None],
        *,
        poll_s: float = 0.02,
    ) -> None:
        self._clock = clock
        self._on_drained = on_drained
        self._on_error = on_error
        self._poll_s = poll_s
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def arm(self) -> None:
        if self._closed or (self._task is not None and not self._task.done()):
            return
        self._task = asyncio.get_running_loop().create_task(
            self._poll(), name="voxwire-client-playback-drain"
        )

    async def _poll(self) -> None:
        try:
            # Polling, not an Event: the device thread that drains the ring cannot be asked to
            # call into the event loop.
            while self._clock.buffered_samples > 0:  # noqa: ASYNC110
                await asyncio.sleep(self._poll_s)
            self._on_drained()
        except Exception as exc:  # reported; CancelledError is not an Exception
            self._on_error(exc)

    async def aclose(self) -> None:
        self._closed = True
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await asyncio.wait([task])  # its CancelledError stays in the task; ours propagates
