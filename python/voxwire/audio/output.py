"""The output pipeline: assistant audio into a ring at the device rate, pulled by a device.

Two sides, two threads:

* the **producer** (the session): :meth:`AudioOutput.push` each delta of an assistant content
  part, :meth:`AudioOutput.end` when the part is complete, :meth:`AudioOutput.interrupt` to cut.
  Deltas are decoded (G.711) and resampled to the device rate by a :class:`PlaybackSink`, so the
  ring, the :class:`PlaybackClock` and the device all count the same samples;
* the **consumer** (the device's thread): :meth:`AudioOutput.pull_into` fills each device buffer.
  It holds playback back until ``prebuffer_ms`` is queued (absorbing network jitter), fades out
  over ``fade_ms`` whenever the audio stops (ring dry, or interrupted) instead of stepping to
  zero, counts underruns, and tells the ring how far the listener has *heard*: what it handed to
  the device minus the device's output latency. The clock reports played lengths at that
  position, so ``clock.interrupt()`` gives truncation points that exclude audio still sitting in
  the device buffer (docs/audio-io.md).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from voxwire._core import ItemPlayback, PcmRing, PlaybackClock
from voxwire.audio._pcm import check_positive_ms, check_rate, format_rate_hz, ms_to_samples
from voxwire.audio.sink import PlaybackSink, SegmentKey
from voxwire.exceptions import ConfigurationError

__all__ = ["TIMINGS_KEPT", "AudioOutput", "ItemTiming", "OutputTap"]

#: :class:`ItemTiming` records kept of parts that are over (ended or cut, first sample heard or
#: never to be), the most recent ones: a session of many hours pushes a part per answer.
TIMINGS_KEPT: Final = 64


class OutputTap(Protocol):
    """Sees each device buffer as handed over (on the device thread; must not block)."""

    def played(self, pcm: npt.NDArray[np.int16], handed_at: float, latency_samples: int) -> None:
        """``pcm`` (device rate) was handed to the device at ``handed_at`` (``now()`` seconds)
        and is heard ``latency_samples`` later."""


@dataclass
class ItemTiming:
    """When a content part's first delta arrived and when its first sample was heard
    (``now()`` seconds; ``first_sample_at`` is ``None`` until it plays), and where its sound
    starts in the ring: ``sound_start``, in device samples (fractional when resampled: its
    first ring sample plus the resampler's warm-up, 76.25 samples from 24 to 44.1 kHz)."""

    item_id: str
    content_index: int
    first_delta_at: float
    first_sample_at: float | None = None
    sound_start: float | None = None

    @property
    def first_sample_delay_ms(self) -> float | None:
        """First delta received -> first sample heard, in ms."""
        if self.first_sample_at is None:
            return None
        return (self.first_sample_at - self.first_delta_at) * 1000


@dataclass(frozen=True)
class _Pull:
    device_start: int  # device position of the pull's first sample
    ring_start: int  # ring position of its first ring sample
    ring_count: int  # ring samples at the front of the pull; the rest is fade or silence


class AudioOutput:
    """Ring + playback clock + sink at ``device_rate_hz``, pulled by a device.

    ``capacity_ms``: ring size (audio arrives faster than real time; size it for the longest
    reply). ``prebuffer_ms``: audio queued before playback starts or resumes after running dry
    (it also starts once a part has ended, or after waiting ``prebuffer_ms`` of device time).
    ``fade_ms``: length of the fade-out when audio stops. ``output_latency_ms``: the device's
    output latency (devices set it with :meth:`set_output_latency`). ``now``: the clock for
    :class:`ItemTiming` (``time.monotonic`` by default; virtual outputs pass their own).
    """

    def __init__(
        self,
        device_rate_hz: int = 24_000,
        *,
        capacity_ms: float = 120_000,
        prebuffer_ms: float = 40.0,
        fade_ms: float = 4.0,
        output_latency_ms: float = 0.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.device_rate_hz = check_rate("device_rate_hz", device_rate_hz)
        capacity = ms_to_samples(
            check_positive_ms("capacity_ms", capacity_ms, 3_600_000), self.device_rate_hz
        )
        self.prebuffer_ms = check_positive_ms("prebuffer_ms", prebuffer_ms, 10_000, allow_zero=True)
        self.fade_ms = check_positive_ms("fade_ms", fade_ms, 100, allow_zero=True)
        self._prebuffer = ms_to_samples(self.prebuffer_ms, self.device_rate_hz)
        self._fade = ms_to_samples(self.fade_ms, self.device_rate_hz)
        self._latency = 0
        self.set_output_latency(
            check_positive_ms("output_latency_ms", output_latency_ms, 10_000, True) / 1000
        )
        self._now = now
        self.ring = PcmRing(max(capacity, 1))
        self.clock = PlaybackClock(self.ring, self.device_rate_hz)
        """The clock to give a session (``RealtimeSession(audio_output=output.clock)``)."""
        self.sink = PlaybackSink(self.clock)
        # From now on the clock counts what the listener heard, which starts at nothing (without
        # a report the ring would take everything popped as heard).
        self.ring.report_heard(0)
        # producer side
        self._open: set[SegmentKey] = set()
        self._tracks_parts = False
        self._lock = threading.Lock()  # guards _timings and _first_pending (both sides)
        self._timings: dict[SegmentKey, ItemTiming] = {}
        self._first_pending: deque[tuple[int, SegmentKey]] = deque()
        # consumer side
        self._playing = False
        self._waited = 0
        self._starved = False
        self._fade_from, self._fade_left, self._last, self._device_samples = 0.0, 0, 0, 0
        self._handed_end = 0  # ring position after the last ring sample handed to the device
        self._history: deque[_Pull] = deque()
        self._scratch = np.empty(0, dtype=np.int16)  # mono frames of a multi-channel pull
        self.underruns = 0
        """Times the ring ran dry while a content part was still open (more audio was due)."""
        self.underrun_samples = 0
        """Device samples of silence played during underruns, until audio resumed."""
        self._tap: OutputTap | None = None
        # pause / resume: requested by the producer side, applied by the next pull
        self._control: str | None = None  # "pause" | "resume" | "cut", under _lock
        self._want_paused = False
        self._paused = False  # consumer side: holding playback
        self._pause_point: int | None = None  # ring position of the first sample not played
        self._held = np.zeros(max(self._fade, 1), dtype=np.int16)  # faded-out samples, kept
        self._held_count = 0
        self._replay = -1  # next held sample to hand over on resume (-1: not resuming)
        self._fade_in_left = 0

    # -- configuration ----------------------------------------------------------------------

    @property
    def output_latency_ms(self) -> float:
        return self._latency * 1000 / self.device_rate_hz

    @property
    def output_latency_samples(self) -> int:
        """The output latency in device samples (what the heard position lags behind)."""
        return self._latency

    def set_output_latency(self, seconds: float) -> None:
        """The device's output latency (sounddevice: ``stream.latency``): samples handed over
        this long ago are only now being heard."""
        if not isinstance(seconds, int | float) or not 0 <= seconds <= 10:
            raise ConfigurationError(
                f"output latency {seconds!r} s is invalid: expected 0 ..= 10 s"
            )
        self._latency = ms_to_samples(seconds * 1000, self.device_rate_hz)

    # -- producer side (the session) --------------------------------------------------------

    def push(
        self,
        item_id: str,
        content_index: int,
        data: bytes,
        format: str = "audio/pcm",
        rate_hz: int | None = None,
    ) -> int:
        """Queue one delta of ``(item_id, content_index)`` in the session's output ``format``;
        returns samples refused because the ring was full (0 normally)."""
        rate = format_rate_hz(format) if rate_hz is None else check_rate("rate_hz", rate_hz)
        key = (item_id, content_index)
        self._tracks_parts = True
        new: ItemTiming | None = None
        if key not in self._open:
            self._open.add(key)
            with self._lock:
                if key not in self._timings:
                    new = self._timings[key] = ItemTiming(item_id, content_index, self._now())
                    if len(self._timings) > 2 * TIMINGS_KEPT:
                        self._forget_old_timings()
        refused = self.sink.push(key, data, format, rate)
        if new is not None:
            start = new.sound_start = self.sink.sound_start(key)
            if start is not None:  # its first sample is heard once the warm-up has played
                with self._lock:
                    self._first_pending.append((math.ceil(start), key))
        return refused

    def _forget_old_timings(self) -> None:
        """Keep the :data:`TIMINGS_KEPT` most recent timings of parts that are over, and every
        part still open or waiting for its first sample to be heard (under ``_lock``)."""
        waiting = self._open | {key for _, key in self._first_pending}
        over = [key for key in self._timings if key not in waiting]
        for key in over[: len(over) - TIMINGS_KEPT]:
            del self._timings[key]

    def end(self, item_id: str, content_index: int) -> int:
        """The content part is complete (``response.output_audio.done``): flush its resampler
        and let a tail shorter than the prebuffer play. Returns samples refused."""
        key = (item_id, content_index)
        refused = self.sink.end(key)
        self._open.discard(key)
        return refused

    def interrupt(self) -> list[ItemPlayback]:
        """Stop: drop all unplayed audio; the device fades out within its next buffer. Returns
        what each cut item had been *heard* (see :meth:`PlaybackClock.interrupt`)."""
        handed = self.ring.consumed_samples
        self._open.clear()
        with self._lock:
            if self._want_paused and self._pause_point is not None:
                # Everything before the pause point has been handed to the device and will be
                # heard; nothing after it will: the cut is exactly there.
                self.ring.report_heard(self._pause_point)
            self._want_paused = False
            self._control = "cut"
        reports = self.sink.interrupt()
        with self._lock:
            self._first_pending = deque(p for p in self._first_pending if p[0] < handed)
        return reports

    @property
    def paused(self) -> bool:
        """Whether :meth:`pause` was called and not yet undone by :meth:`resume` or
        :meth:`interrupt`."""
        return self._want_paused

    @property
    def pause_point(self) -> int | None:
        """Ring position (samples) where the current pause took effect, once the device has
        pulled since :meth:`pause` (``None`` otherwise)."""
        with self._lock:
            return self._pause_point if self._want_paused else None

    def pause(self) -> None:
        """Hold playback: from the device's next buffer, fade out over ``fade_ms`` and then play
        silence; nothing queued is dropped. Idempotent."""
        with self._lock:
            if not self._want_paused:
                self._want_paused = True
                self._control = "pause"

    def resume(self) -> None:
        """Continue after :meth:`pause` at exactly the first sample not fully played (fading
        in over ``fade_ms``). Does nothing if not paused."""
        with self._lock:
            if self._want_paused:
                self._want_paused = False
                self._control = "resume"

    def set_tap(self, tap: OutputTap | None) -> None:
        """Give every device buffer, as handed over, to ``tap`` (``None`` removes it)."""
        self._tap = tap

    def timing(self, item_id: str, content_index: int) -> ItemTiming | None:
        """First delta / first sample times of a content part pushed here (``None`` for one
        never pushed, or over and older than the :data:`TIMINGS_KEPT` most recent)."""
        with self._lock:
            return self._timings.get((item_id, content_index))

    def forget_timings(self) -> None:
        """Drop the timings of parts no longer open (for example on ``response.done``, once
        reported), so the record does not grow over a long session."""
        with self._lock:
            self._timings = {k: t for k, t in self._timings.items() if k in self._open}

    # -- consumer side (the device thread) --------------------------------------------------

    @property
    def playing(self) -> bool:
        """Whether the device is playing queued audio (not prebuffering or idle)."""
        return self._playing

    @property
    def unheard_samples(self) -> int:
        """Ring samples the listener has not heard yet: queued, or handed to the device and
        still in its buffer (0 once everything pushed and not dropped has been heard)."""
        in_device = max(0, self._handed_end - self.ring.heard_samples)
        return self.ring.readable_samples + in_device

    @property
    def device_samples(self) -> int:
        """Samples handed to the device so far, silence included."""
        return self._device_samples

    def pull(self, n_samples: int, now: float | None = None) -> npt.NDArray[np.int16]:
        """A new buffer of ``n_samples`` at the device rate (see :meth:`pull_into`)."""
        out = np.empty(n_samples, dtype=np.int16)
        self.pull_into(out, now)
        return out

    def pull_into(self, out: npt.NDArray[np.int16], now: float | None = None) -> int:
        """Fill a device buffer of int16 frames; returns the ring samples (frames) in it.

        ``out`` is ``(n,)`` or ``(n, channels)``: every channel of a frame gets the same (mono)
        sample, and ``n`` frames count as ``n`` samples played, whatever the channel count. Any
        other dtype, a read-only or 0-/3-D buffer raises ``TypeError`` / ``ValueError`` before
        anything is consumed. ``now`` is when its first sample is handed over (default:
        ``now()``)."""
        buf, spread = self._mono_view(out)
        n = len(buf)
        self._apply_control()
        if self._paused:
            ring_start, got = self._pull_paused(buf)
        elif self._replay >= 0:
            ring_start, got = self._pull_resumed(buf)
        else:
            ring_start, got = self._pull_playing(buf)
        if n:
            self._last = int(buf[n - 1])
        self._history.append(_Pull(self._device_samples, ring_start, got))
        self._device_samples += n
        self._report_heard()
        if self._tap is not None or (got and self._first_pending):
            handed_at = self._now() if now is None else now
            if got and self._first_pending:
                self._note_first_samples(ring_start, got, handed_at)
            if self._tap is not None:
                self._tap.played(buf, handed_at, self._latency)
        if spread:
            out[...] = buf.reshape(-1, 1) if out.ndim == 2 else buf
        return got

    def _pull_playing(self, buf: npt.NDArray[np.int16]) -> tuple[int, int]:
        n = len(buf)
        if not self._playing:
            self._maybe_start(n)
        ring_start = self.ring.consumed_samples
        got = self.ring.pop_into(buf) if self._playing else 0
        if got:
            self._fade_left = 0
            self._handed_end = ring_start + got
        if self._fade_in_left and got:
            self._ramp_in(buf[:got])
        if got < n:
            self._fill_silence(buf, got)
        return ring_start, got

    def _apply_control(self) -> None:
        if self._control is None:  # the common case: no lock taken on the device's thread
            return  # (a request made meanwhile is applied by the next pull)
        with self._lock:
            control, self._control = self._control, None
            if control == "pause" and not self._paused:
                self._paused = True
                self._pause_point = self.ring.consumed_samples
                self._held_count = 0
                # A buffer that was playing fades out; one that was idle has nothing to fade.
                self._fade_left = self._fade if self._playing else 0
                self._replay = -1
            elif control == "resume" and self._paused:
                self._paused = False
                # Paused while idle: nothing was held, the ordinary path (prebuffer) goes on.
                self._replay = 0 if self._held_count else -1
                self._fade_in_left = self._fade if self._held_count else 0
            elif control == "cut":
                self._paused, self._replay, self._held_count = False, -1, 0
                self._fade_in_left = 0
                # What was due is dropped: the silence from here on is no longer an underrun.
                self._starved, self._waited = False, 0
                if self._playing:  # the cut buffer fades out as any interruption does
                    self._playing = False
                    self._fade_from, self._fade_left = float(self._last), self._fade

    def _pull_paused(self, buf: npt.NDArray[np.int16]) -> tuple[int, int]:
        """Fade out the first ``fade_ms`` after the pause point, keeping the samples faded for
        the resume; then silence. No sample counts as played."""
        k = min(self._fade_left, len(buf))
        got = self.ring.pop_into(buf[:k]) if k else 0
        if got:
            self._held[self._held_count : self._held_count + got] = buf[:got]
            done = self._held_count
            steps = np.arange(done + 1, done + got + 1, dtype=np.float64)
            buf[:got] = np.rint(buf[:got] * (1.0 - steps / self._fade)).astype(np.int16)
            self._held_count += got
        self._fade_left = 0 if got < k else self._fade_left - k
        buf[got:] = 0
        self._playing = False
        assert self._pause_point is not None
        return self._pause_point, 0

    def _pull_resumed(self, buf: npt.NDArray[np.int16]) -> tuple[int, int]:
        """Hand over the held samples again, then the ring, fading in from the pause point."""
        assert self._pause_point is not None
        ring_start = self._pause_point + self._replay
        k = min(self._held_count - self._replay, len(buf))
        buf[:k] = self._held[self._replay : self._replay + k]
        self._replay += k
        got = k
        if self._replay >= self._held_count:
            self._replay = -1
            self._playing = True
            got += self.ring.pop_into(buf[k:])
        if got:
            self._handed_end = ring_start + got
            self._fade_left = 0
        self._ramp_in(buf[:got])
        if got < len(buf):
            self._fill_silence(buf, got)
        return ring_start, got

    def _ramp_in(self, pcm: npt.NDArray[np.int16]) -> None:
        k = min(self._fade_in_left, len(pcm))
        if k:
            done = self._fade - self._fade_in_left
            steps = np.arange(done + 1, done + k + 1, dtype=np.float64) / self._fade
            pcm[:k] = np.rint(pcm[:k] * steps).astype(np.int16)
            self._fade_in_left -= k

    def _mono_view(self, out: npt.NDArray[np.int16]) -> tuple[npt.NDArray[np.int16], bool]:
        """One int16 sample per frame of ``out``: a view of it when it is mono and contiguous,
        else a scratch buffer that :meth:`pull_into` copies to every channel afterwards."""
        if not isinstance(out, np.ndarray):
            raise TypeError(f"pull_into needs a numpy int16 array, got {type(out).__name__}")
        if out.dtype != np.int16:
            raise TypeError(
                f"pull_into needs an int16 buffer, got {out.dtype}: open the device stream with "
                "dtype='int16' (AudioOutput produces PCM16)"
            )
        if out.ndim not in (1, 2) or (out.ndim == 2 and out.shape[1] < 1):
            raise ValueError(
                f"pull_into needs a buffer of shape (frames,) or (frames, channels), got shape "
                f"{out.shape}"
            )
        if not out.flags.writeable:
            raise ValueError("pull_into needs a writable buffer, got a read-only array")
        if out.flags.c_contiguous and (out.ndim == 1 or out.shape[1] == 1):
            return out.reshape(-1), False
        frames = out.shape[0]
        if len(self._scratch) < frames:
            self._scratch = np.empty(frames, dtype=np.int16)
        return self._scratch[:frames], True

    def _maybe_start(self, n: int) -> None:
        readable = self.ring.readable_samples
        if not readable:
            self._waited = 0
            if self._starved:
                self.underrun_samples += n
            return
        all_in = self._tracks_parts and not self._open
        if readable >= self._prebuffer or all_in or self._waited >= self._prebuffer:
            self._playing, self._waited, self._starved = True, 0, False
        else:
            self._waited += n
            if self._starved:
                self.underrun_samples += n

    def _fill_silence(self, buf: npt.NDArray[np.int16], got: int) -> None:
        if self._playing:  # the audio stopped in this buffer: fade from where it was
            self._playing = False
            self._fade_from = float(buf[got - 1] if got else self._last)
            self._fade_left = self._fade
            if self._open:
                self.underruns += 1
                self._starved = True
                self.underrun_samples += len(buf) - got
        rest = buf[got:]
        k = min(self._fade_left, len(rest))
        if k:
            done = self._fade - self._fade_left
            steps = np.arange(done + 1, done + k + 1, dtype=np.float64)
            rest[:k] = np.rint(self._fade_from * (1.0 - steps / self._fade)).astype(np.int16)
            self._fade_left -= k
        rest[k:] = 0

    def _report_heard(self) -> None:
        heard_device = self._device_samples - self._latency
        history = self._history
        while len(history) > 1 and history[1].device_start <= heard_device:
            history.popleft()
        first = history[0]
        if first.device_start <= heard_device:
            self.ring.report_heard(
                first.ring_start + min(first.ring_count, heard_device - first.device_start)
            )

    def _note_first_samples(self, ring_start: int, got: int, now: float) -> None:
        with self._lock:
            while self._first_pending and self._first_pending[0][0] < ring_start + got:
                position, key = self._first_pending.popleft()
                offset = max(position - ring_start, 0) + self._latency
                timing = self._timings.get(key)
                if timing is not None and timing.first_sample_at is None:
                    timing.first_sample_at = now + offset / self.device_rate_hz
