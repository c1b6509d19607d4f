"""Shared checks and conversions for the audio I/O classes (numpy + the Rust core only)."""

from __future__ import annotations

from typing import TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

from voxwire._core import to_mono
from voxwire.exceptions import ConfigurationError

__all__ = [
    "FORMAT_RATES_HZ",
    "MAX_CHANNELS",
    "MAX_RATE_HZ",
    "Closing",
    "SourceFrames",
    "check_channels",
    "check_positive_ms",
    "check_rate",
    "format_rate_hz",
    "ms_to_samples",
    "to_mono_int16",
]

#: Raw audio as a source delivers it: interleaved bytes (little-endian PCM16), a 1-D interleaved
#: array or a 2-D ``(frames, channels)`` array, of int16 or float32 (-1.0 ..= 1.0).
SourceFrames: TypeAlias = (
    bytes | bytearray | memoryview | npt.NDArray[np.int16] | npt.NDArray[np.float32]
)

#: The Realtime protocol's audio formats and their fixed rates (``audio/pcm`` is 24 kHz in GA).
FORMAT_RATES_HZ = {"audio/pcm": 24_000, "audio/pcmu": 8_000, "audio/pcma": 8_000}
MAX_RATE_HZ = 768_000  # the Rust resampler's limit
MAX_CHANNELS = 64
_C = TypeVar("_C", bound="Closing")


def _as_int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        return None
    return int(value)


def _check_int(name: str, value: object, maximum: int, unit: str) -> int:
    v = _as_int(value)
    if v is None or not 1 <= v <= maximum:
        raise ConfigurationError(
            f"{name}={value!r} is invalid: expected an integer in 1..={maximum}{unit}"
        )
    return v


def check_rate(name: str, value: object) -> int:
    """``value`` as a sample rate in Hz, or a ConfigurationError saying what is allowed."""
    if type(value) is int and 1 <= value <= MAX_RATE_HZ:  # the common case, once per delta
        return value
    return _check_int(name, value, MAX_RATE_HZ, " Hz")


def check_channels(name: str, value: object) -> int:
    """``value`` as a channel count."""
    return _check_int(name, value, MAX_CHANNELS, "")


class Closing:
    """``with`` support for classes with an idempotent ``close()``."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def check_positive_ms(
    name: str, value: object, maximum: float = 10_000.0, allow_zero: bool = False
) -> float:
    """A duration in ms within ``(0 or >0) ..= maximum``."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok:
        v = float(value)  # type: ignore[arg-type]
        ok = (v >= 0 if allow_zero else v > 0) and v <= maximum
    if not ok:
        low = ">= 0" if allow_zero else "> 0"
        raise ConfigurationError(
            f"{name}={value!r} is invalid: expected milliseconds {low} and <= {maximum:g}"
        )
    return float(value)  # type: ignore[arg-type]


def format_rate_hz(format_type: object) -> int:
    """The rate of a session audio format, or a ConfigurationError naming the formats."""
    rate = FORMAT_RATES_HZ.get(format_type) if isinstance(format_type, str) else None
    if rate is None:
        names = ", ".join(FORMAT_RATES_HZ)
        raise ConfigurationError(
            f"format={format_type!r} is not a Realtime audio format: expected one of {names}"
        )
    return rate


def ms_to_samples(ms: float, rate_hz: int) -> int:
    """``ms`` at ``rate_hz`` in whole samples, rounded to nearest (the one ms -> samples helper)."""
    return round(ms * rate_hz / 1000)


def to_mono_int16(data: SourceFrames, channels: int) -> npt.NDArray[np.int16]:
    """Source frames as mono PCM16: float32 is scaled and clipped, channels are averaged (Rust).

    ``ValueError`` for a wrong shape, a channel count that does not match, a partial frame or a
    non-finite float sample (NaN, inf); ``TypeError`` for any other type or dtype."""
    if isinstance(data, bytes | bytearray | memoryview):
        if len(data) % (2 * channels):
            raise ValueError(
                f"got {len(data)} bytes of PCM16, not a whole number of {channels}-channel frames "
                f"({2 * channels} bytes each)"
            )
        arr: np.ndarray = np.frombuffer(data, dtype="<i2")
    elif isinstance(data, np.ndarray):
        arr = data
    else:
        raise TypeError(
            f"audio must be bytes or a numpy int16/float32 array, got {type(data).__name__}"
        )
    if arr.ndim == 2:
        if arr.shape[1] != channels:
            raise ValueError(
                f"got {arr.shape[1]}-channel frames, expected {channels} (shape {arr.shape})"
            )
        arr = arr.reshape(-1)
    elif arr.ndim != 1:
        raise ValueError(
            f"audio must be 1-D (interleaved) or 2-D (frames, channels), got shape {arr.shape}"
        )
    if arr.dtype == np.float32:
        finite = np.isfinite(arr)
        if not finite.all():
            index = int(np.argmin(finite))
            raise ValueError(
                f"float32 audio holds a non-finite sample ({arr[index]} at index {index}): a "
                "source must deliver numbers in -1.0 ..= 1.0 (check the device or the DSP "
                "before it); nothing of this block was used"
            )
        arr = np.clip(np.rint(arr * 32767.0), -32768, 32767).astype(np.int16)
    elif arr.dtype != np.int16:
        raise TypeError(f"audio samples must be int16 or float32, got {arr.dtype}")
    if channels == 1:
        return np.ascontiguousarray(arr, dtype=np.int16)
    if len(arr) % channels:
        raise ValueError(f"got {len(arr)} samples, not a whole number of {channels}-channel frames")
    return to_mono(np.ascontiguousarray(arr), channels)
