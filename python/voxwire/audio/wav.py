"""16-bit PCM WAV files in and out.

Reading parses the RIFF container itself (rather than the standard library's ``wave``, which
reads what a header claims without checking it against the file): every size field is checked
against the bytes that are really there, so a file cut short, a data-size field larger than the
file, a partial frame, a zero sample rate or a block size that does not match the channels fails
with a :class:`~voxwire.exceptions.ConfigurationError` naming the file and the field, instead of
returning fewer samples than the header promised, a sample rate of 0, or misaligned frames.
Writing uses ``wave``.
"""

from __future__ import annotations

import struct
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voxwire._core import to_mono
from voxwire.audio._pcm import MAX_CHANNELS, MAX_RATE_HZ, check_rate
from voxwire.exceptions import ConfigurationError

__all__ = ["WavAudio", "read_wav", "write_wav"]


@dataclass(frozen=True)
class WavAudio:
    """Mono PCM16 samples and their rate, as read from a WAV file."""

    pcm: npt.NDArray[np.int16]
    rate_hz: int
    #: Channels in the file before they were mixed down to mono.
    source_channels: int


_CONVERT = "convert it with e.g. `sox in.wav -b 16 -e signed-integer out.wav`"
_PCM = 1
_EXTENSIBLE = 0xFFFE
#: WAVE_FORMAT_EXTENSIBLE's sub-format GUID for integer PCM (KSDATAFORMAT_SUBTYPE_PCM).
_PCM_GUID = bytes.fromhex("0100000000001000800000aa00389b71")


@dataclass(frozen=True)
class _Format:
    channels: int
    rate_hz: int
    block_align: int


def read_wav(path: str | Path) -> WavAudio:
    """Read a 16-bit PCM WAV file, mixing several channels down to mono.

    Raises :class:`~voxwire.exceptions.ConfigurationError` naming the file and what is wrong
    when it is missing, unreadable, not a WAV file, not PCM, not 16-bit, or when its header does
    not match the file (see the module docstring) — and no other exception, whatever the bytes.
    """
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError as e:
        raise ConfigurationError(f"{path}: no such file") from e
    except OSError as e:
        raise ConfigurationError(f"{path}: cannot be read: {e.strerror or e}") from e
    fmt, samples = _parse(str(path), data)
    pcm = np.frombuffer(samples, dtype="<i2").astype(np.int16)
    if fmt.channels > 1:
        pcm = to_mono(pcm, fmt.channels)
    return WavAudio(pcm=pcm, rate_hz=fmt.rate_hz, source_channels=fmt.channels)


def _parse(name: str, data: bytes) -> tuple[_Format, bytes]:
    """The format and the sample bytes of a RIFF/WAVE file, every size checked."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        what = "empty" if not data else "it does not start with RIFF....WAVE"
        raise ConfigurationError(f"{name}: not a WAV file ({what}); {_CONVERT}")
    (riff_size,) = struct.unpack_from("<I", data, 4)
    if riff_size + 8 > len(data):
        raise ConfigurationError(
            f"{name}: the RIFF header says {riff_size + 8} bytes but the file has {len(data)}: "
            "it is cut short (an interrupted copy or recording?)"
        )
    fmt: _Format | None = None
    offset = 12
    end = riff_size + 8
    while offset + 8 <= end:
        chunk_id = data[offset : offset + 4]
        (size,) = struct.unpack_from("<I", data, offset + 4)
        body = offset + 8
        if body + size > end:
            raise ConfigurationError(
                f"{name}: the {_chunk_name(chunk_id)} chunk at byte {offset} says {size} bytes but "
                f"only {max(0, end - body)} follow it: the file is cut short or the size field is "
                "wrong"
            )
        if chunk_id == b"fmt ":
            if fmt is not None:
                raise ConfigurationError(f"{name}: two 'fmt ' chunks; not a valid WAV file")
            fmt = _read_format(name, data[body : body + size])
        elif chunk_id == b"data":
            if fmt is None:
                raise ConfigurationError(
                    f"{name}: the 'data' chunk comes before the 'fmt ' chunk; not a valid WAV file"
                )
            if size % fmt.block_align:
                raise ConfigurationError(
                    f"{name}: the 'data' chunk holds {size} bytes, not a whole number of "
                    f"{fmt.channels}-channel frames ({fmt.block_align} bytes each): a partial "
                    "frame at the end"
                )
            return fmt, data[body : body + size]
        offset = body + size + (size & 1)  # chunks are padded to an even length
    missing = "'fmt ' and 'data' chunks" if fmt is None else "'data' chunk"
    raise ConfigurationError(f"{name}: no {missing}; not a complete WAV file")


def _read_format(name: str, body: bytes) -> _Format:
    if len(body) < 16:
        raise ConfigurationError(
            f"{name}: the 'fmt ' chunk has {len(body)} bytes, fewer than the 16 of PCM"
        )
    tag, channels, rate_hz, byte_rate, block_align, bits = struct.unpack_from("<HHIIHH", body)
    if tag == _EXTENSIBLE and len(body) >= 40 and body[24:40] == _PCM_GUID:
        tag = _PCM
    if tag != _PCM:
        kind = "floating point (format 3)" if tag == 3 else f"format code {tag:#x}"
        raise ConfigurationError(
            f"{name}: the samples are {kind}, not integer PCM; voxwire reads 16-bit PCM WAV "
            f"({_CONVERT})"
        )
    if bits != 16:
        raise ConfigurationError(
            f"{name}: {bits}-bit samples are not supported: voxwire reads 16-bit PCM WAV "
            f"({_CONVERT})"
        )
    if not 1 <= channels <= MAX_CHANNELS:
        raise ConfigurationError(
            f"{name}: the header says {channels} channels; expected 1..={MAX_CHANNELS}"
        )
    if not 1 <= rate_hz <= MAX_RATE_HZ:
        raise ConfigurationError(
            f"{name}: the header says a sample rate of {rate_hz} Hz; expected 1..={MAX_RATE_HZ}"
        )
    if block_align != 2 * channels:
        raise ConfigurationError(
            f"{name}: the header's block size is {block_align} bytes but {channels} channel(s) "
            f"of 16-bit samples take {2 * channels}: the header is inconsistent"
        )
    if byte_rate != rate_hz * block_align:
        raise ConfigurationError(
            f"{name}: the header's byte rate is {byte_rate} but {rate_hz} Hz x {block_align} "
            f"bytes per frame is {rate_hz * block_align}: the header is inconsistent"
        )
    return _Format(channels=channels, rate_hz=rate_hz, block_align=block_align)


def _chunk_name(chunk_id: bytes) -> str:
    return repr(chunk_id.decode("latin-1"))


def write_wav(path: str | Path, pcm: npt.NDArray[np.int16], rate_hz: int) -> None:
    """Write mono PCM16 samples as a WAV file."""
    if pcm.dtype != np.int16 or pcm.ndim != 1:
        raise ConfigurationError(
            f"write_wav needs 1-D int16 samples, got dtype {pcm.dtype} with shape {pcm.shape}"
        )
    rate_hz = check_rate("rate_hz", rate_hz)
    # The file is opened here, not by wave.open(path): when that open fails (no such directory,
    # no permission) wave's half-made writer prints an AttributeError from its __del__ after
    # the OSError.
    with open(path, "wb") as file, wave.open(file, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate_hz)
        w.writeframes(pcm.astype("<i2").tobytes())
