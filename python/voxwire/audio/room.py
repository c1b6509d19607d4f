"""A simulated room between a speaker and a microphone, for tests, benchmarks and the demo.

:func:`room_impulse_response` draws an impulse response from the exponential-decay model: the
direct path after the distance's travel time, a handful of early reflections, then a diffuse
tail of Gaussian noise whose energy falls 60 dB in ``rt60_s`` (Polack's model; what the
image-source method converges to once reflections are dense). The direct-to-reverberant
energy ratio is ``drr_db`` (0 dB is a speakerphone on a table at about a metre). It is a
model, not a measurement: real rooms add colouration, loudspeaker non-linearity and noise,
which make real echo cancellation harder than here (docs/audio-io.md says what that means for
the figures).

:class:`RoomPath` convolves a stream with such a response block by block (overlap-add with
numpy's FFT), so a virtual speaker's output can reach a virtual microphone as it plays.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from voxwire.audio._pcm import check_rate
from voxwire.exceptions import ConfigurationError

__all__ = ["RoomPath", "level_dbfs", "room_impulse_response", "scale_to_dbfs"]

SPEED_OF_SOUND_M_S = 343.0


def room_impulse_response(
    rate_hz: int,
    rt60_s: float,
    *,
    distance_m: float = 0.5,
    drr_db: float = 0.0,
    seed: int = 0,
) -> npt.NDArray[np.float64]:
    """An impulse response at ``rate_hz`` lasting ``rt60_s`` (the tail is then 60 dB down),
    with unit energy."""
    rate_hz = check_rate("rate_hz", rate_hz)
    if not isinstance(rt60_s, int | float) or not 0.05 <= rt60_s <= 3.0:
        raise ConfigurationError(f"rt60_s={rt60_s!r} is invalid: expected 0.05 ..= 3.0 s")
    if not isinstance(distance_m, int | float) or not 0.05 <= distance_m <= 20.0:
        raise ConfigurationError(f"distance_m={distance_m!r} is invalid: expected 0.05 ..= 20 m")
    if not isinstance(drr_db, int | float) or not -20.0 <= drr_db <= 30.0:
        raise ConfigurationError(f"drr_db={drr_db!r} is invalid: expected -20 ..= 30 dB")
    rng = np.random.default_rng(seed)
    n = int(rt60_s * rate_hz)
    direct = round(distance_m / SPEED_OF_SOUND_M_S * rate_hz)
    h = np.zeros(direct + n, dtype=np.float64)
    h[direct] = 1.0
    # Early reflections: floor, table, walls within the first 20 ms, each weaker than the last.
    for k, at_ms in enumerate(np.sort(rng.uniform(1.0, 20.0, 8))):
        h[direct + int(at_ms * rate_hz / 1000)] += rng.choice((-1.0, 1.0)) * 0.6 * 0.85**k
    t = np.arange(n) / rate_hz
    tail = rng.standard_normal(n) * np.exp(-3.0 * np.log(10.0) * t / rt60_s)
    tail[: int(0.002 * rate_hz)] = 0.0  # the diffuse field builds up after the first reflections
    direct_energy = float(np.sum(h**2))
    tail *= np.sqrt(direct_energy / float(np.sum(tail**2)) / 10 ** (drr_db / 10))
    h[direct:] += tail
    out: npt.NDArray[np.float64] = h / np.sqrt(np.sum(h**2))
    return out


def level_dbfs(pcm: npt.NDArray[np.int16] | npt.NDArray[np.float64]) -> float:
    """RMS level in dBFS (-inf for silence)."""
    ms = float(np.mean(np.asarray(pcm, dtype=np.float64) ** 2)) if len(pcm) else 0.0
    return 10 * math.log10(ms / 32768.0**2) if ms > 0 else float("-inf")


def scale_to_dbfs(x: npt.NDArray[np.float64], dbfs: float) -> npt.NDArray[np.float64]:
    """``x`` scaled so its RMS level is ``dbfs``."""
    now = level_dbfs(x)
    out: npt.NDArray[np.float64] = x * 10 ** ((dbfs - now) / 20)
    return out


class RoomPath:
    """Streaming convolution with ``response`` (float64): :meth:`process` returns, for each
    block of input, the same number of output samples (float64, not clipped)."""

    def __init__(self, response: npt.NDArray[np.float64], gain: float = 1.0) -> None:
        if not isinstance(response, np.ndarray) or response.ndim != 1 or not len(response):
            raise ConfigurationError("response must be a non-empty 1-D numpy array")
        self.response = np.asarray(response, dtype=np.float64) * gain
        self._tail = np.zeros(len(self.response) - 1, dtype=np.float64)
        self._spectra: dict[int, npt.NDArray[np.complex128]] = {}

    def process(
        self, block: npt.NDArray[np.int16] | npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        x = np.asarray(block, dtype=np.float64)
        if not len(x):
            return np.zeros(0, dtype=np.float64)
        size = 1 << int(np.ceil(np.log2(len(x) + len(self.response) - 1)))
        full = np.fft.irfft(np.fft.rfft(x, size) * np.fft.rfft(self.response, size), size)
        full = full[: len(x) + len(self._tail)]
        full[: len(self._tail)] += self._tail
        out: npt.NDArray[np.float64] = full[: len(x)].copy()
        rest = full[len(x) :]
        self._tail = np.concatenate([rest, np.zeros(len(self._tail) - len(rest))])
        return out


def cough(rate_hz: int, *, seed: int = 0) -> npt.NDArray[np.float64]:
    """A cough-like burst (about 250 ms of shaped noise with a sharp attack), unit peak."""
    rng = np.random.default_rng(seed)
    n = int(0.25 * rate_hz)
    t = np.arange(n) / rate_hz
    envelope = (1 - np.exp(-t / 0.005)) * np.exp(-t / 0.06)
    noise = rng.standard_normal(n)
    # Emphasise the low-mid band a chest and throat produce: a crude one-pole low-pass.
    shaped = np.empty(n)
    acc = 0.0
    for i, v in enumerate(noise):
        acc = 0.7 * acc + 0.3 * v
        shaped[i] = acc
    burst = shaped * envelope
    out: npt.NDArray[np.float64] = burst / np.max(np.abs(burst))
    return out


def erle_db(echo: npt.NDArray[np.float64], residual: npt.NDArray[np.float64]) -> float:
    """Echo return loss enhancement: echo power over what is left of it, in dB."""
    left = float(np.mean(np.asarray(residual, dtype=np.float64) ** 2))
    return 10 * math.log10(float(np.mean(echo**2)) / max(left, 1e-12))


def si_sdr_db(reference: npt.NDArray[np.float64], estimate: npt.NDArray[np.float64]) -> float:
    """Scale-invariant signal-to-distortion ratio of ``estimate`` against ``reference`` (dB)."""
    ref = np.asarray(reference, dtype=np.float64)
    est = np.asarray(estimate, dtype=np.float64)
    alpha = float(np.dot(est, ref) / max(float(np.dot(ref, ref)), 1e-12))
    target = alpha * ref
    distortion = max(float(np.sum((est - target) ** 2)), 1e-12)
    return 10 * math.log10(float(np.sum(target**2)) / distortion)
