"""16-bit PCM WAV files in and out, with the standard library's ``wave`` module."""

from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voxwire._core import to_mono
from voxwire.exceptions import ConfigurationError


@dataclass(frozen=True)
class WavAudio:
    """Mono PCM16 samples and their rate, as read from a WAV file."""

    pcm: npt.NDArray[np.int16]
    rate_hz: int
    #: Channels in the file before they were mixed down to mono.
    source_channels: int


_CONVERT = "convert it with e.g. `sox in.wav -b 16 -e signed-integer out.wav`"


def read_wav(path: str | Path) -> WavAudio:
    """Read a 16-bit PCM WAV file, mixing several channels down to mono.

    Raises :class:`~voxwire.exceptions.ConfigurationError` naming the file and what is wrong
    when it is missing, unreadable, not a WAV file, not PCM, or not 16-bit.
    """
    try:
        with wave.open(str(path), "rb") as w:
            if w.getsampwidth() != 2:
                raise ConfigurationError(
                    f"{path}: {8 * w.getsampwidth()}-bit samples are not supported: "
                    f"voxwire reads 16-bit PCM WAV ({_CONVERT})"
                )
            channels = w.getnchannels()
            rate_hz = w.getframerate()
            raw = w.readframes(w.getnframes())
    except FileNotFoundError as e:
        raise ConfigurationError(f"{path}: no such file") from e
    except OSError as e:
        raise ConfigurationError(f"{path}: cannot be read: {e.strerror or e}") from e
    except EOFError as e:
        raise ConfigurationError(f"{path}: not a WAV file (empty or cut short)") from e
    except wave.Error as e:
        raise ConfigurationError(
            f"{path}: not a 16-bit PCM WAV file ({_wave_problem(e)}); {_CONVERT}"
        ) from e
    if len(raw) % (2 * channels):
        raise ConfigurationError(
            f"{path}: the audio data is cut short (a partial frame at the end)"
        )
    pcm = np.frombuffer(raw, dtype="<i2").astype(np.int16)
    if channels > 1:
        pcm = to_mono(pcm, channels)
    return WavAudio(pcm=pcm, rate_hz=rate_hz, source_channels=channels)


def _wave_problem(error: wave.Error) -> str:
    text = str(error)
    if text.startswith("unknown format: 3"):
        return "the samples are floating point (WAVE format 3), not integer PCM"
    if text.startswith("unknown format"):
        return f"the WAVE format code is not PCM ({text})"
    return text


def write_wav(path: str | Path, pcm: npt.NDArray[np.int16], rate_hz: int) -> None:
    """Write mono PCM16 samples as a WAV file."""
    if pcm.dtype != np.int16 or pcm.ndim != 1:
        raise ConfigurationError(
            f"write_wav needs 1-D int16 samples, got dtype {pcm.dtype} with shape {pcm.shape}"
        )
    # The file is opened here, not by wave.open(path): when that open fails (no such directory,
    # no permission) wave's half-made writer prints an AttributeError from its __del__ after
    # the OSError.
    with open(path, "wb") as file, wave.open(file, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate_hz)
        w.writeframes(pcm.astype("<i2").tobytes())
