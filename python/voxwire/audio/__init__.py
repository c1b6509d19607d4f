"""Python face of the Rust audio core.

* :class:`Resampler` — streaming PCM16 resampling between device rates and 24 kHz
* :func:`to_mono` — interleaved multi-channel PCM16 to mono

Every function here accepts PCM16 as ``bytes``, ``bytearray``, ``memoryview`` or a 1-D numpy
``int16`` array, and returns numpy ``int16`` arrays.
"""

from voxwire._core import Resampler, to_mono

__all__ = ["Resampler", "to_mono"]
