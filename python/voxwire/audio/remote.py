"""An output whose listener is at the far end of a connection: a phone line, a browser page.

A local :class:`~voxwire.audio.AudioOutput` learns what the listener heard from its device:
every pull hands samples to the speaker, and the heard position is what was pulled minus the
output latency. A remote listener is different: the application *sends* audio ahead (a Twilio
``media`` message, a websocket frame to a page) and learns only later, from an acknowledgement
(a Twilio ``mark`` echoed when its audio has played, an AudioWorklet's "frames played" report),
how far the far end has played. Audio sent and not yet acknowledged sits in a buffer that the
application cannot see (the carrier's jitter buffer, the page's queue) and has **not** been
heard.

:class:`RemoteOutput` is an :class:`~voxwire.audio.AudioOutput` (so ``RealtimeSession(
audio_output=...)`` uses it as it is: G.711 decode, resampling, the per-item playback clock)
whose consumer side is two calls instead of a device pull:

* :meth:`RemoteOutput.take` — the next chunk to send (PCM16 at ``rate_hz``); the ring position
  just after it is :attr:`RemoteOutput.sent_samples`;
* :meth:`RemoteOutput.acknowledge` — the far end has played the ring up to ``position`` (a value
  :attr:`sent_samples` had). Only this moves the playback clock, so
  ``clock.interrupt()`` — and with it the session's ``conversation.item.truncate`` — reports
  each item played up to the last acknowledged position: never ahead of the listener, and
  behind it by at most the audio played since that acknowledgement (one chunk plus the time an
  acknowledgement takes to arrive; docs/telephony.md).

How far behind the listener the clock may be is :attr:`RemoteOutput.heard_bound_samples`: the
audio sent and not acknowledged, but at most one acknowledgement's span — the far end acknowledges
at least every ``ack_every_samples`` played (a Web Audio render quantum, 128 frames, for a page
whose worklet reports each quantum), or else once per chunk taken (a Twilio ``mark`` after every
chunk: one chunk, the largest taken). The session reports it with each cut
(``InterruptionMetrics.clock_bound_ms``).

``on_audio`` is called (on the producer's thread, the session's event loop) whenever audio was
queued or a part ended, so the sender can :meth:`take`; ``on_interrupt`` after an interruption
dropped the unsent audio, so the sender can tell the far end to drop what it buffered (Twilio
``clear``). Positions acknowledged for audio sent before an interruption must not be reported:
that audio was dropped, not played (the sender knows which acknowledgements those are).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from voxwire._core import ItemPlayback
from voxwire.audio.output import AudioOutput
from voxwire.exceptions import ConfigurationError

__all__ = ["RemoteOutput"]


def _nothing() -> None:
    return None


class RemoteOutput(AudioOutput):
    """Ring + playback clock at ``rate_hz``, sent in chunks and acknowledged by the far end.

    ``capacity_ms``: the ring (audio queued and not yet taken; the session pushes faster than
    real time). ``now``: the clock for first-sample timings (``time.monotonic`` by default).
    """

    def __init__(
        self,
        rate_hz: int = 8_000,
        *,
        capacity_ms: float = 120_000,
        on_audio: Callable[[], None] = _nothing,
        on_interrupt: Callable[[], None] = _nothing,
        now: Callable[[], float] = time.monotonic,
        ack_every_samples: int | None = None,
    ) -> None:
        if ack_every_samples is not None and (
            not isinstance(ack_every_samples, int)
            or isinstance(ack_every_samples, bool)
            or ack_every_samples <= 0
        ):
            raise ConfigurationError(
                f"ack_every_samples={ack_every_samples!r} is invalid: expected a positive sample "
                "count (the most audio played between two acknowledgements), or None: one "
                "acknowledgement per chunk taken"
            )
        super().__init__(rate_hz, capacity_ms=capacity_ms, prebuffer_ms=0.0, fade_ms=0.0, now=now)
        self._ack_every = ack_every_samples
        self._largest_chunk = 0  # samples: the span of one acknowledgement, by default
        self.on_audio = on_audio
        self.on_interrupt = on_interrupt
        self._sent_end = 0  # ring position after the last sample taken (and not dropped)
        self.interruptions = 0
        """How many times :meth:`interrupt` dropped the audio (each one needs a far-end clear)."""

    # -- producer side (the session) --------------------------------------------------------

    def push(
        self,
        item_id: str,
        content_index: int,
        data: bytes,
        format: str = "audio/pcm",
        rate_hz: int | None = None,
    ) -> int:
        refused = super().push(item_id, content_index, data, format, rate_hz)
        self.on_audio()
        return refused

    def end(self, item_id: str, content_index: int) -> int:
        refused = super().end(item_id, content_index)
        self.on_audio()
        return refused

    def interrupt(self) -> list[ItemPlayback]:
        """Drop the audio not taken yet and forget what was sent and not acknowledged (the far
        end must drop it too: ``on_interrupt`` is called). Returns what each cut item had been
        heard, as acknowledged."""
        reports = super().interrupt()
        # Everything before the ring's consumed position is now heard or gone: later
        # acknowledgements of it would mean nothing, and the next item starts from here.
        self._sent_end = self.ring.consumed_samples
        self.ring.report_heard(self._sent_end)
        self.interruptions += 1
        self.on_interrupt()
        return reports

    # -- consumer side (the sender) ---------------------------------------------------------

    @property
    def sent_samples(self) -> int:
        """Ring position after the last sample :meth:`take` returned (a total count)."""
        return self._sent_end

    @property
    def heard_samples(self) -> int:
        """Ring position the far end has acknowledged as played."""
        return self.ring.heard_samples

    @property
    def heard_bound_samples(self) -> int:
        """How far past :attr:`heard_samples` the listener may be now: the audio sent and not
        acknowledged, at most one acknowledgement's span (``ack_every_samples``, else the largest
        chunk taken). The playback clock counts :attr:`heard_samples`; the listener heard
        between that and this much more."""
        span = self._ack_every if self._ack_every is not None else self._largest_chunk
        return min(max(0, self._sent_end - self.ring.heard_samples), span)

    @property
    def unheard_samples(self) -> int:
        """Queued, or sent and not acknowledged (0 once the far end played everything)."""
        return self.ring.readable_samples + max(0, self._sent_end - self.ring.heard_samples)

    def take(self, max_samples: int, *, partial: bool = False) -> npt.NDArray[np.int16]:
        """The next chunk to send: ``max_samples``, or fewer once every pushed part has ended
        (the tail) or with ``partial=True`` (a sender that waited long enough for more). Empty
        while less than a chunk is queued of a part still streaming, so that chunks stay whole
        and each acknowledgement stays within one chunk."""
        if not isinstance(max_samples, int) or max_samples <= 0:
            raise ConfigurationError(f"take({max_samples!r}): expected a positive sample count")
        readable = self.ring.readable_samples
        if readable == 0 or (readable < max_samples and self._open and not partial):
            return np.empty(0, dtype=np.int16)
        chunk = self.ring.pop(min(readable, max_samples))
        self._largest_chunk = max(self._largest_chunk, len(chunk))
        self._sent_end = self.ring.consumed_samples
        self._playing = True
        return chunk

    def acknowledge(self, position: int) -> None:
        """The far end has played the ring up to ``position`` (a :attr:`sent_samples` value).
        Positions only move forward; one beyond what was sent counts as what was sent."""
        position = min(max(0, int(position)), self._sent_end)
        if position <= self.ring.heard_samples:
            return
        self.ring.report_heard(position)
        if self._first_pending:
            self._note_heard_firsts(position)
        if self.unheard_samples == 0:
            self._playing = False

    def _note_heard_firsts(self, position: int) -> None:
        now = self._now()
        with self._lock:
            while self._first_pending and self._first_pending[0][0] < position:
                _, key = self._first_pending.popleft()
                timing = self._timings.get(key)
                if timing is not None and timing.first_sample_at is None:
                    timing.first_sample_at = now

    def pull_into(self, out: npt.NDArray[np.int16], now: float | None = None) -> int:
        raise TypeError(
            "RemoteOutput is not pulled by a device: send what take() returns and report what "
            "the far end played with acknowledge()"
        )
