"""Sources and speakers without a sound card: memory and WAV files, real-time or virtual clock.

Inputs (:class:`MemoryInput`, :class:`WavFileInput`) cut their audio into blocks of
``block_ms`` and deliver them to a callback, like a microphone would: on their own thread at
real-time pace (:meth:`~MemoryInput.start`), on it as fast as possible (``realtime=False``), or
synchronously on the caller's thread, one block at a time, for a test or a demo that steps its
own virtual clock (:meth:`~MemoryInput.blocks`). :class:`SteppedInput` is a microphone whose
blocks the caller makes up as it goes (a simulated room: the speaker's echo plus the user) and
hands over with :meth:`~SteppedInput.feed`, on the caller's thread.

Outputs (:class:`MemoryOutput`, :class:`WavFileOutput`) are virtual speakers: each owns an
:class:`AudioOutput` and pulls from it one period at a time, exactly like a device callback,
through a simulated device buffer of ``latency_ms`` (what is handed over is heard that much
later). What they keep / write is exactly what a listener would have heard, silence included.
Step them with :meth:`~MemoryOutput.advance` (deterministic) or run them in real time with
:meth:`~MemoryOutput.start`.
"""

from __future__ import annotations

import threading
import time
import wave
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voxwire.audio._pcm import Closing, check_positive_ms, check_rate, ms_to_samples
from voxwire.audio.output import AudioOutput
from voxwire.audio.wav import read_wav
from voxwire.exceptions import ConfigurationError, InvalidState

__all__ = ["MemoryInput", "MemoryOutput", "SteppedInput", "WavFileInput", "WavFileOutput"]

BlockCallback = Callable[[npt.NDArray[np.int16]], None]


class MemoryInput(Closing):
    """Mono PCM16 samples at ``rate_hz`` delivered in blocks of ``block_ms``."""

    def __init__(self, pcm: npt.NDArray[np.int16], rate_hz: int, *, block_ms: float = 20.0) -> None:
        if not isinstance(pcm, np.ndarray) or pcm.dtype != np.int16 or pcm.ndim != 1:
            raise ConfigurationError("MemoryInput needs a 1-D numpy int16 array of mono samples")
        self.rate_hz = check_rate("rate_hz", rate_hz)
        self.channels = 1
        self.block_ms = check_positive_ms("block_ms", block_ms, 1000)
        self.block_samples = max(1, ms_to_samples(self.block_ms, self.rate_hz))
        self._pcm = pcm
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.error: BaseException | None = None
        """What the callback raised on the delivery thread, if it did (delivery then stopped)."""

    @property
    def duration_ms(self) -> float:
        return len(self._pcm) * 1000 / self.rate_hz

    def blocks(self) -> Iterator[npt.NDArray[np.int16]]:
        """The blocks in order (the last one may be shorter), for a caller-driven clock."""
        for start in range(0, len(self._pcm), self.block_samples):
            yield self._pcm[start : start + self.block_samples]

    def start(
        self,
        callback: BlockCallback,
        *,
        realtime: bool = True,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        """Deliver every block to ``callback`` on a new thread, paced like a microphone
        (``realtime``) or as fast as the callback takes them; ``on_end`` runs after the last."""
        if self._thread is not None:
            raise InvalidState("this input was already started: make a new one to play it again")
        self._thread = threading.Thread(
            target=self._run, args=(callback, realtime, on_end), name="voxwire-input", daemon=True
        )
        self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for delivery to finish; True if it did (raises what the callback raised)."""
        if self._thread is None:
            raise InvalidState("this input was not started")
        self._thread.join(timeout)
        if self.error is not None:
            raise self.error
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Stop delivering (idempotent); returns once the thread has ended."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(
        self, callback: BlockCallback, realtime: bool, on_end: Callable[[], None] | None
    ) -> None:
        start = time.monotonic()
        delivered = 0
        try:
            for block in self.blocks():
                if self._stop.is_set():
                    return
                if realtime:  # block k is due once k blocks of audio have been captured
                    delay = start + (delivered + len(block)) / self.rate_hz - time.monotonic()
                    if delay > 0 and self._stop.wait(delay):
                        return
                callback(block)
                delivered += len(block)
            if on_end is not None:
                on_end()
        except BaseException as e:
            self.error = e


class SteppedInput:
    """A source (``rate_hz``, ``channels``, ``start(callback)``, ``stop()``) whose blocks the
    caller feeds one by one (:meth:`feed`, on the caller's thread); blocks fed while stopped
    are dropped, as a microphone nobody listens to drops them."""

    def __init__(self, rate_hz: int, channels: int = 1) -> None:
        self.rate_hz = check_rate("rate_hz", rate_hz)
        if channels not in (1, 2):
            raise ConfigurationError(f"channels={channels!r} is invalid: expected 1 or 2")
        self.channels = channels
        self._callback: Callable[[npt.NDArray[np.int16]], None] | None = None

    def start(self, callback: Callable[[npt.NDArray[np.int16]], None]) -> None:
        self._callback = callback

    def stop(self) -> None:
        self._callback = None

    def feed(self, block: npt.NDArray[np.int16]) -> None:
        """Hand ``block`` (int16, ``(frames,)`` or ``(frames, channels)``) to the listener."""
        callback = self._callback
        if callback is not None:
            callback(block)


class WavFileInput(MemoryInput):
    """A WAV file (16-bit PCM, mixed down to mono) delivered in blocks: see :class:`MemoryInput`."""

    def __init__(self, path: str | Path, *, block_ms: float = 20.0) -> None:
        audio = read_wav(path)
        self.path = Path(path)
        super().__init__(audio.pcm, audio.rate_hz, block_ms=block_ms)


class MemoryOutput(Closing):
    """A virtual speaker pulling from its own :class:`AudioOutput`; keeps what it played.

    ``rate_hz`` is the device rate (the ring's); ``period_ms`` the device buffer pulled each time;
    ``latency_ms`` the simulated output latency (reported to the output, so the playback clock
    excludes it). The other keywords configure the :class:`AudioOutput` (``output``), whose
    timings use this speaker's sample clock (:meth:`now`, seconds).
    """

    def __init__(
        self,
        rate_hz: int = 24_000,
        *,
        period_ms: float = 20.0,
        latency_ms: float = 0.0,
        prebuffer_ms: float = 40.0,
        fade_ms: float = 4.0,
        capacity_ms: float = 120_000,
    ) -> None:
        self.rate_hz = check_rate("rate_hz", rate_hz)
        self.period_ms = check_positive_ms("period_ms", period_ms, 1000)
        self.period_samples = max(1, ms_to_samples(self.period_ms, self.rate_hz))
        latency_ms = check_positive_ms("latency_ms", latency_ms, 10_000, allow_zero=True)
        self.output = AudioOutput(
            self.rate_hz,
            capacity_ms=capacity_ms,
            prebuffer_ms=prebuffer_ms,
            fade_ms=fade_ms,
            output_latency_ms=latency_ms,
            now=self.now,
        )
        # The device buffer: handed-over samples wait here for the latency before being heard.
        self._in_device = np.zeros(self.output.output_latency_samples, dtype=np.int16)
        self._played_samples = 0
        self._t0 = 0.0
        self._buffer = np.empty(self.period_samples, dtype=np.int16)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._chunks: list[npt.NDArray[np.int16]] = []
        self.error: BaseException | None = None

    @property
    def played_samples(self) -> int:
        """Samples the speaker has played (heard), silence included."""
        return self._played_samples

    def now(self) -> float:
        """The speaker's clock: seconds of audio played (plus the real start time when running)."""
        return self._t0 + self._played_samples / self.rate_hz

    def advance(self, n_periods: int = 1) -> npt.NDArray[np.int16]:
        """Play ``n_periods`` device periods synchronously; returns what was heard in them."""
        if self._thread is not None:
            raise InvalidState(
                "the speaker is running in real time: stop() it before advancing it by hand"
            )
        return self._advance(n_periods)

    def advance_ms(self, ms: float) -> npt.NDArray[np.int16]:
        """Play whole periods covering at least ``ms``."""
        return self.advance(max(0, -(-ms_to_samples(ms, self.rate_hz) // self.period_samples)))

    def played(self) -> npt.NDArray[np.int16]:
        """Everything played so far (MemoryOutput keeps it all)."""
        return np.concatenate(self._chunks) if self._chunks else np.zeros(0, dtype=np.int16)

    def start(self) -> None:
        """Play in real time on a new thread (one period per period of wall-clock time)."""
        if self._thread is not None:
            raise InvalidState("the speaker is already running")
        self._stop.clear()
        self._t0 = time.monotonic() - self._played_samples / self.rate_hz
        self._thread = threading.Thread(target=self._run, name="voxwire-speaker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the real-time thread (idempotent); raises what it failed with, if it did."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """Same as :meth:`stop`."""
        self.stop()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._advance(1)
                due = self._t0 + self._played_samples / self.rate_hz
                delay = due - time.monotonic()
                if delay > 0:
                    self._stop.wait(delay)
        except BaseException as e:
            self.error = e

    def _advance(self, n_periods: int) -> npt.NDArray[np.int16]:
        if not isinstance(n_periods, int) or n_periods < 0:
            raise ConfigurationError(
                f"n_periods={n_periods!r} is invalid: expected an integer >= 0"
            )
        heard = []
        for _ in range(n_periods):
            self.output.pull_into(self._buffer, now=self.now())
            if len(self._in_device):
                stream = np.concatenate([self._in_device, self._buffer])
                out, self._in_device = stream[: self.period_samples], stream[self.period_samples :]
            else:
                out = self._buffer.copy()
            self._played_samples += len(out)
            self._emit(out)
            heard.append(out)
        return np.concatenate(heard) if heard else np.zeros(0, dtype=np.int16)

    def _emit(self, pcm: npt.NDArray[np.int16]) -> None:
        self._chunks.append(pcm)


class WavFileOutput(MemoryOutput):
    """A virtual speaker writing what it plays to a mono PCM16 WAV file at ``rate_hz``.

    Use as a context manager or call :meth:`close` to finish the file. Keywords as for
    :class:`MemoryOutput`; nothing is kept in memory.
    """

    def __init__(self, path: str | Path, rate_hz: int = 24_000, **options: float) -> None:
        super().__init__(rate_hz, **options)
        self.path = Path(path)
        try:
            self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        except OSError as e:
            raise ConfigurationError(f"{path}: cannot be written: {e.strerror or e}") from e
        self._wav: wave.Wave_write | None = wave.open(self._file, "wb")  # noqa: SIM115
        self._wav.setnchannels(1)
        self._wav.setsampwidth(2)
        self._wav.setframerate(self.rate_hz)

    def played(self) -> npt.NDArray[np.int16]:
        raise InvalidState(f"WavFileOutput keeps nothing in memory: read {self.path} after close()")

    def close(self) -> None:
        """Stop if running and finish the file (idempotent)."""
        try:
            self.stop()
        finally:
            if self._wav is not None:
                self._wav.close()
                self._wav = None
                self._file.close()

    def _emit(self, pcm: npt.NDArray[np.int16]) -> None:
        if self._wav is None:
            raise InvalidState(f"{self.path} is closed")
        self._wav.writeframes(pcm.astype("<i2", copy=False).tobytes())
