"""Signal generation and measurement helpers for the audio quality tests (numpy only), and
:func:`until` for the tests that wait on a real-time thread."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

RATES_HZ = (8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000)
FULL_SCALE = 32767.0


def sine(
    freq_hz: float, rate_hz: int, n_samples: int, amplitude: float, phase: float = 0.0
) -> npt.NDArray[np.float64]:
    t = np.arange(n_samples) / rate_hz
    return amplitude * np.sin(2 * np.pi * freq_hz * t + phase)


def to_int16(x: npt.NDArray[np.float64]) -> npt.NDArray[np.int16]:
    return np.clip(np.round(x), -32768, 32767).astype(np.int16)


def fit_sine(
    y: npt.NDArray[np.floating] | npt.NDArray[np.integer], freq_hz: float, rate_hz: int, start: int
) -> tuple[float, float, npt.NDArray[np.float64]]:
    """Least-squares fit of ``a*sin + b*cos + c`` at a known frequency to ``y[start:]``.

    Returns (amplitude, phase in radians at sample 0, residual).
    """
    n = np.arange(start, len(y))
    w = 2 * np.pi * freq_hz / rate_hz * n
    basis = np.stack([np.sin(w), np.cos(w), np.ones_like(w)], axis=1)
    coef, *_ = np.linalg.lstsq(basis, y[start:].astype(np.float64), rcond=None)
    resid = y[start:].astype(np.float64) - basis @ coef
    return float(np.hypot(coef[0], coef[1])), float(np.arctan2(coef[1], coef[0])), resid


def spectrum_db(y: npt.NDArray[np.float64], reference: float) -> npt.NDArray[np.float64]:
    """Magnitude spectrum in dB relative to a sine of amplitude ``reference``.

    A Kaiser window with beta 24 keeps sidelobes near -190 dB, far below what is measured.
    """
    win = np.kaiser(len(y), 24.0)
    mag = np.abs(np.fft.rfft(y * win)) * 2 / win.sum()
    return 20 * np.log10(np.maximum(mag, 1e-30) / reference)


def until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Poll ``condition`` (another thread makes it true) until it holds: a test waits for what
    it needs to have happened, not for a time it hopes is enough on a loaded machine."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s"
        time.sleep(0.005)
