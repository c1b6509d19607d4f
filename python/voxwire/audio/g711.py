"""G.711 µ-law and A-law (ITU-T G.711), bit-exact with the ITU reference.

The Realtime protocol's ``g711_ulaw`` / ``g711_alaw`` audio formats carry one 8-bit code per
sample at 8 kHz. These functions convert between those codes and PCM16:

* ``ulaw_encode(pcm)`` / ``alaw_encode(pcm)`` — PCM16 (``bytes``, ``bytearray``, ``memoryview``
  of little-endian samples, or a 1-D numpy ``int16`` array) to ``bytes``, one code per sample.
* ``ulaw_decode(data)`` / ``alaw_decode(data)`` — codes (``bytes``, ``bytearray``,
  ``memoryview`` or a 1-D numpy ``uint8`` array) to a numpy ``int16`` array.

Encoding keeps the top 14 (µ-law) or 13 (A-law) bits of each sample; a negative sample ``x`` is
treated like ``-x - 1`` (its one's complement), as the ITU-T G.191 reference implementation does,
so ``x`` and ``~x`` encode to codes differing only in the sign bit. Decoding returns the middle of
each quantisation interval (µ-law: 0 to ±32124, A-law: ±8 to ±32256). Rates are not changed:
resample 8 kHz to the device rate with :class:`voxwire.audio.Resampler`.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from voxwire import _core

__all__ = ["alaw_decode", "alaw_encode", "ulaw_decode", "ulaw_encode"]

_PcmLike: TypeAlias = bytes | bytearray | memoryview | npt.NDArray[np.int16]
_G711Like: TypeAlias = bytes | bytearray | memoryview | npt.NDArray[np.uint8]


def ulaw_encode(pcm: _PcmLike) -> bytes:
    """Encode PCM16 mono samples to G.711 µ-law bytes (one byte per sample).

    Raises ``ValueError`` for an odd number of bytes and ``TypeError`` for anything that is not
    PCM16 (for example a float array).
    """
    return _core.ulaw_encode(pcm)


def ulaw_decode(data: _G711Like) -> npt.NDArray[np.int16]:
    """Decode G.711 µ-law bytes to PCM16 samples (a new numpy ``int16`` array)."""
    return _core.ulaw_decode(data)


def alaw_encode(pcm: _PcmLike) -> bytes:
    """Encode PCM16 mono samples to G.711 A-law bytes (one byte per sample).

    Raises ``ValueError`` for an odd number of bytes and ``TypeError`` for anything that is not
    PCM16 (for example a float array).
    """
    return _core.alaw_encode(pcm)


def alaw_decode(data: _G711Like) -> npt.NDArray[np.int16]:
    """Decode G.711 A-law bytes to PCM16 samples (a new numpy ``int16`` array)."""
    return _core.alaw_decode(data)
