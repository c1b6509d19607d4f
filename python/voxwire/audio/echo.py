"""Echo cancellation around a microphone: the speaker's own output, tapped where the device
pulls it, removed from what the microphone captures.

* :class:`EchoReference` is an :class:`~voxwire.audio.output.OutputTap`: every buffer an
  :class:`AudioOutput` hands to its device is resampled to the canceller's rate (Rust) and
  queued in a lock-free ring (Rust), with the time it was handed over and the device's output
  latency, so the capture side knows *when each reference sample was heard*.
* :class:`EchoCancelledInput` wraps a source (anything with ``rate_hz``, ``channels``,
  ``start(callback)``, ``stop()``: :class:`SoundDeviceInput`, :class:`MemoryInput`, ...) and is
  one itself, delivering mono PCM16 at ``rate_hz`` (24 kHz by default, the session's rate, so the
  session's own resampler has nothing to do). On the source's thread, each captured block is
  mixed down, resampled, paired with the reference samples heard while it was captured and run
  through the Rust :class:`~voxwire._core.EchoCanceller` before the callback gets it.

Alignment comes from the clocks, not from a search: a block captured at ``t`` (the callback's
time minus the block's duration and the input latency) pairs with the reference heard at ``t``,
taken ``margin_ms`` ahead (as far as the speaker has been handed audio) so that timing jitter
never makes the reference arrive after its echo (the canceller's ``tail_ms`` covers the margin
and the room). After the first block the
reference is read continuously, sample for sample; only when the clocks disagree with the count
by more than ``resync_ms`` (the two devices' clocks drift apart, or a device glitch) is the
read position moved.

Clocks can be wrong: a device that reports more output latency than it has makes the echo
arrive before the reference that was paired with it, which no canceller can remove. With
``delay_search=True`` the reference is taken ``search_lead_ms`` further ahead and the canceller's
own delay search (Rust, a matched filter on decimated signals) finds where the echo really is
and delays the reference to it; it keeps following it if the clocks drift. docs/audio-io.md has
the knobs and their trade-offs.

``input.canceller.residual_echo_dbfs`` is the canceller's estimate of the echo left in its latest
10 ms block (-120 for none): what a barge-in detector can compare the cleaned microphone with.

"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from voxwire._core import EchoCanceller, PcmRing, Resampler
from voxwire.audio._pcm import check_positive_ms, check_rate, ms_to_samples, to_mono_int16
from voxwire.audio.output import AudioOutput
from voxwire.exceptions import ConfigurationError, InvalidState

__all__ = ["EchoCancelledInput", "EchoReference"]

BlockCallback = Callable[[npt.NDArray[np.int16]], None]


class Source(Protocol):
    """What :class:`EchoCancelledInput` wraps (and is): a microphone-like source."""

    @property
    def rate_hz(self) -> int: ...

    @property
    def channels(self) -> int: ...

    def start(self, callback: BlockCallback) -> None: ...

    def stop(self) -> None: ...


class EchoReference:
    """The far-end reference: what ``output`` handed to its device, at ``rate_hz``.

    Attach it with ``output.set_tap(reference)`` (:class:`EchoCancelledInput` does). The ring
    holds ``capacity_ms`` of reference; a capture side that falls further behind loses the
    oldest (and cancels against silence for that stretch).
    """

    def __init__(self, output: AudioOutput, rate_hz: int, *, capacity_ms: float = 2_000) -> None:
        self.rate_hz = check_rate("rate_hz", rate_hz)
        self.output = output
        capacity = ms_to_samples(check_positive_ms("capacity_ms", capacity_ms, 60_000), rate_hz)
        self.ring = PcmRing(max(capacity, 1))
        device_rate = output.device_rate_hz
        self._resampler = (
            Resampler(device_rate, self.rate_hz) if device_rate != self.rate_hz else None
        )
        delay = self._resampler.output_delay() if self._resampler is not None else 0.0
        self._delay_s = delay / self.rate_hz
        self._anchor: tuple[int, float] | None = None
        """(ring position, time that sample is heard): replaced whole, read by the other side."""

    def played(self, pcm: npt.NDArray[np.int16], handed_at: float, latency_samples: int) -> None:
        """The output's tap (device thread): queue ``pcm`` and note when it is heard."""
        block = self._resampler.process(pcm) if self._resampler is not None else pcm
        position = self.ring.pushed_samples
        # The resampler's output lags its input: a ring sample stands for device audio heard
        # that much earlier.
        heard_at = handed_at + latency_samples / self.output.device_rate_hz - self._delay_s
        self.ring.push(block)
        self._anchor = (position, heard_at)

    def position_heard_at(self, t: float) -> int | None:
        """Ring position of the reference sample heard at ``t`` (``None`` before any pull)."""
        anchor = self._anchor
        if anchor is None:
            return None
        position, heard_at = anchor
        return position + round((t - heard_at) * self.rate_hz)

    def read(self, start: int, out: npt.NDArray[np.int16]) -> None:
        """Fill ``out`` with the reference from ring position ``start`` (capture thread):
        positions already dropped or not yet played are silence."""
        consumed = self.ring.consumed_samples
        if start > consumed:
            skip = min(start - consumed, self.ring.readable_samples)
            if skip:
                self.ring.pop_into(np.empty(skip, dtype=np.int16))
            consumed = self.ring.consumed_samples
        if consumed < start:  # not played yet (the capture is ahead of the speaker)
            out.fill(0)
            return
        missing = min(consumed - start, len(out))
        out[:missing] = 0
        if missing < len(out):
            self.ring.pop_into(out[missing:], fill_silence=True)


def _lead_samples(
    margin_ms: float, tail_ms: int, search_lead_ms: float | None, rate_hz: int
) -> int:
    """How far ahead of the clocks the reference is read: the margin, plus the delay search's
    lead when it is on (the search, not the tail, covers that part)."""
    margin = check_positive_ms("margin_ms", margin_ms, 200, allow_zero=True)
    if margin >= tail_ms:
        raise ConfigurationError(
            f"margin_ms={margin_ms} must be shorter than tail_ms={tail_ms}: the canceller's "
            "tail has to cover the margin and the room's echo"
        )
    if search_lead_ms is not None:
        margin += check_positive_ms("search_lead_ms", search_lead_ms, 400)
    return ms_to_samples(margin, rate_hz)


class EchoCancelledInput:
    """A source whose blocks have the echo of ``output`` removed; see the module docs.

    ``rate_hz``: what it delivers (and where the canceller runs; 8000..=48000). ``tail_ms``,
    ``suppression_db``, ``noise_suppression``: the canceller's (:class:`EchoCanceller`).
    ``delay_search``: let the canceller find the echo's delay itself (see the module docs), the
    reference taken ``search_lead_ms`` earlier than the clocks say (covers latencies over-reported
    by up to that much; at most 400 ms).
    ``input_latency_ms``: the source's capture latency (default: its ``input_latency_ms``
    attribute once started, else 0). ``margin_ms``: how far ahead of the computed position the
    reference is taken. ``resync_ms``: disagreement between clock and count that moves the read
    position. ``now``: the clock shared with the output (``time.monotonic``; virtual devices pass
    theirs).
    """

    def __init__(
        self,
        source: Source,
        output: AudioOutput,
        *,
        rate_hz: int = 24_000,
        tail_ms: int = 300,
        suppression_db: float = 40.0,
        noise_suppression: bool = False,
        delay_search: bool = False,
        search_lead_ms: float = 100.0,
        input_latency_ms: float | None = None,
        margin_ms: float = 20.0,
        resync_ms: float = 4.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = source
        self.output = output
        self.rate_hz = check_rate("rate_hz", rate_hz)
        self.channels = 1
        if not isinstance(tail_ms, int) or isinstance(tail_ms, bool):
            raise ConfigurationError(f"tail_ms={tail_ms!r} is invalid: expected an int, in ms")
        try:
            self.canceller = EchoCanceller(
                self.rate_hz,
                tail_ms=tail_ms,
                suppression_db=suppression_db,
                noise_suppression=noise_suppression,
                delay_search=delay_search,
            )
        except (ValueError, TypeError) as e:
            raise ConfigurationError(f"echo canceller: {e}") from None
        self._input_latency_ms = (
            None
            if input_latency_ms is None
            else check_positive_ms("input_latency_ms", input_latency_ms, 10_000, allow_zero=True)
        )
        lead = search_lead_ms if delay_search else None
        self._margin = _lead_samples(margin_ms, tail_ms, lead, self.rate_hz)
        self._resync = ms_to_samples(check_positive_ms("resync_ms", resync_ms, 1000), self.rate_hz)
        self._now = now
        self.reference = EchoReference(output, self.rate_hz)
        self._resampler = (
            Resampler(source.rate_hz, self.rate_hz) if source.rate_hz != self.rate_hz else None
        )
        delay = self._resampler.output_delay() if self._resampler is not None else 0.0
        self._mic_delay_s = delay / self.rate_hz
        self._read_at: int | None = None
        self._drift = 0.0
        self._ref = np.zeros(0, dtype=np.int16)
        self._lock = threading.Lock()
        self._callback: BlockCallback | None = None
        self.resyncs = 0
        """Times the reference read position was moved to follow the clocks."""

    @property
    def input_latency_ms(self) -> float:
        if self._input_latency_ms is not None:
            return self._input_latency_ms
        return float(getattr(self.source, "input_latency_ms", 0.0))

    def start(self, callback: BlockCallback) -> None:
        """Tap the output and start the source; ``callback`` gets cleaned mono PCM16 blocks."""
        if self._callback is not None:
            raise InvalidState("this input is already started")
        self._callback = callback
        self.output.set_tap(self.reference)
        self.source.start(self._on_block)

    def stop(self) -> None:
        """Stop the source and remove the tap (idempotent)."""
        self.source.stop()
        if self._callback is not None:
            self.output.set_tap(None)
            self._callback = None

    def close(self) -> None:
        self.stop()

    def _on_block(self, block: Any) -> None:
        cleaned = self.process(block)
        if self._callback is not None and len(cleaned):
            self._callback(cleaned)

    def process(self, block: Any, captured_at: float | None = None) -> npt.NDArray[np.int16]:
        """Cancel the echo in one block of the source (any shape the source gives); returns mono
        PCM16 at ``rate_hz``. ``captured_at``: when its first sample was captured (default: now
        minus the block's duration and the input latency)."""
        mono = to_mono_int16(block, self.source.channels)
        mic = self._resampler.process(mono) if self._resampler is not None else mono
        n = len(mic)
        if not n:
            return mic
        if captured_at is None:
            duration = len(mono) / self.source.rate_hz
            captured_at = self._now() - duration - self.input_latency_ms / 1000
        captured_at -= self._mic_delay_s  # the resampled block starts that much earlier
        with self._lock:
            if len(self._ref) != n:
                self._ref = np.zeros(n, dtype=np.int16)
            start = self._align(captured_at, n)
            if start is None:
                self._ref.fill(0)
            else:
                self.reference.read(start, self._ref)
            return self.canceller.process(mic, self._ref)

    def _align(self, captured_at: float, n: int) -> int | None:
        heard = self.reference.position_heard_at(captured_at)
        if heard is None:
            return None
        # The reference leads the capture by the margin (so the echo, which comes later, is
        # inside the filter's tail even when the clocks are a little off), as far as the
        # speaker has been handed audio: what it has not been handed yet cannot be heard yet.
        target = min(heard + self._margin, self.reference.ring.pushed_samples - n)
        if self._read_at is None:
            self._read_at = target
        else:
            # Smooth the disagreement over about ten blocks: callback times jitter, clock drift
            # does not.
            self._drift += 0.1 * ((target - self._read_at) - self._drift)
            if abs(self._drift) >= self._resync:
                self._read_at += round(self._drift)
                self._drift = 0.0
                self.resyncs += 1
        start = self._read_at
        self._read_at += n
        return start
