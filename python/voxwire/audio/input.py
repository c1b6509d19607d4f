"""The input pipeline: source frames to the session's input audio format, in fixed frames.

Pure and synchronous: :meth:`AudioInput.process` takes whatever a source delivered (any rate,
any channel count, int16 or float32), mixes it down to mono, resamples it with the Rust
resampler to the session's input rate (24 kHz for ``audio/pcm``, 8 kHz for G.711), encodes
G.711 with the Rust codec when the format is ``audio/pcmu`` / ``audio/pcma``, and cuts the result
into frames of ``frame_ms``. Each frame goes to ``on_frame`` (if given) and is returned.

Threads: an :class:`AudioInput` belongs to the thread that feeds it (a device callback or a file
reader); ``on_frame`` runs on that thread, so a session bridges it to its event loop (for
example with ``loop.call_soon_threadsafe``). ``muted`` may be set from any thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import numpy.typing as npt

from voxwire._core import Resampler
from voxwire.audio import g711
from voxwire.audio._pcm import (
    SourceFrames,
    check_channels,
    check_rate,
    format_rate_hz,
    to_mono_int16,
)
from voxwire.audio.bargein import BargeInDetector
from voxwire.exceptions import ConfigurationError

__all__ = ["AudioInput"]

_QUALITIES = ("fast", "hq", "vhq")


class AudioInput:
    """Source audio to fixed frames of the session's input format.

    ``source_rate_hz`` / ``source_channels`` describe what :meth:`process` will be given;
    ``format`` is the session's ``audio.input.format`` type; ``frame_ms`` the frame duration (an
    integer number of ms that gives whole samples at the format's rate). ``barge_in`` is an
    optional :class:`BargeInDetector` fed with every frame (as PCM16, before any G.711 encoding).
    """

    def __init__(
        self,
        source_rate_hz: int,
        source_channels: int = 1,
        *,
        format: str = "audio/pcm",
        frame_ms: int = 20,
        on_frame: Callable[[bytes], None] | None = None,
        barge_in: BargeInDetector | None = None,
        quality: Literal["fast", "hq", "vhq"] = "hq",
    ) -> None:
        self.source_rate_hz = check_rate("source_rate_hz", source_rate_hz)
        self.source_channels = check_channels("source_channels", source_channels)
        self.rate_hz = format_rate_hz(format)
        self.format = format
        if not isinstance(frame_ms, int) or isinstance(frame_ms, bool) or not 1 <= frame_ms <= 1000:
            raise ConfigurationError(
                f"frame_ms={frame_ms!r} is invalid: expected an integer in 1..=1000"
            )
        if (self.rate_hz * frame_ms) % 1000:
            raise ConfigurationError(
                f"frame_ms={frame_ms} is not a whole number of samples at {self.rate_hz} Hz: "
                "pick a multiple of 1 ms that is (any integer works at 8 and 24 kHz)"
            )
        if quality not in _QUALITIES:
            raise ConfigurationError(
                f"quality={quality!r} is invalid: expected one of {', '.join(_QUALITIES)}"
            )
        if barge_in is not None and barge_in.rate_hz != self.rate_hz:
            raise ConfigurationError(
                f"the barge-in detector runs at {barge_in.rate_hz} Hz but {format} frames are "
                f"{self.rate_hz} Hz: make it with BargeInDetector(rate_hz={self.rate_hz})"
            )
        self.frame_ms = frame_ms
        self.frame_samples = self.rate_hz * frame_ms // 1000
        self.on_frame = on_frame
        self.barge_in = barge_in
        self._resampler = (
            Resampler(self.source_rate_hz, self.rate_hz, quality)
            if self.source_rate_hz != self.rate_hz
            else None
        )
        self._pending = np.zeros(self.frame_samples, dtype=np.int16)
        self._filled = 0
        self.muted = False
        """While set, frames are made (the resampler keeps its state) but dropped, and counted."""
        self.frames_sent = 0
        self.frames_muted = 0

    @property
    def frame_bytes(self) -> int:
        """Bytes per frame in the session format (2 per sample for PCM16, 1 for G.711)."""
        return self.frame_samples * (2 if self.format == "audio/pcm" else 1)

    @property
    def buffered_samples(self) -> int:
        """Samples (at the format's rate) waiting for the next frame to fill."""
        return self._filled

    def process(self, data: SourceFrames) -> list[bytes]:
        """Feed source frames; returns the session frames completed (also given to ``on_frame``).

        ``data`` is interleaved bytes (PCM16 LE), a 1-D interleaved array, or a 2-D
        ``(frames, channels)`` array, of int16 or float32 in -1.0 ..= 1.0.
        """
        pcm = to_mono_int16(data, self.source_channels)
        if self._resampler is not None:
            pcm = self._resampler.process(pcm)
        return self._cut(pcm)

    def flush(self) -> list[bytes]:
        """The source ended: drain the resampler and send the last partial frame padded with
        silence. The pipeline can be fed again afterwards (a new stream)."""
        tail = (
            self._resampler.flush() if self._resampler is not None else np.zeros(0, dtype=np.int16)
        )
        frames = self._cut(tail)
        if self._filled:
            self._pending[self._filled :] = 0
            self._filled = self.frame_samples
            frames.extend(self._cut(np.zeros(0, dtype=np.int16)))
        return frames

    def _cut(self, pcm: npt.NDArray[np.int16]) -> list[bytes]:
        frames: list[bytes] = []
        pos = 0
        while True:
            take = min(self.frame_samples - self._filled, len(pcm) - pos)
            self._pending[self._filled : self._filled + take] = pcm[pos : pos + take]
            self._filled += take
            pos += take
            if self._filled < self.frame_samples:
                return frames
            self._filled = 0
            frame = self._emit(self._pending)
            if frame is not None:
                frames.append(frame)

    def _emit(self, pcm: npt.NDArray[np.int16]) -> bytes | None:
        if self.muted:
            self.frames_muted += 1
            return None
        if self.barge_in is not None:
            self.barge_in.process(pcm)
        if self.format == "audio/pcmu":
            frame = g711.ulaw_encode(pcm)
        elif self.format == "audio/pcma":
            frame = g711.alaw_encode(pcm)
        else:
            frame = pcm.astype("<i2", copy=False).tobytes()
        self.frames_sent += 1
        if self.on_frame is not None:
            self.on_frame(frame)
        return frame
