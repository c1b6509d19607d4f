"""Type stubs for the compiled Rust audio core (checked with ``python -m mypy.stubtest``)."""

from typing import Literal, TypeAlias, final

import numpy as np
import numpy.typing as npt

__version__: str

# Names are appended here by each section below.
__all__ = ["Resampler", "__version__", "to_mono"]

#: PCM16 as accepted by every function of the core: little-endian bytes or numpy int16.
_PcmLike: TypeAlias = bytes | bytearray | memoryview | npt.NDArray[np.int16]

# --- resampler ---------------------------------------------------------------------------------

@final
class Resampler:
    def __new__(
        cls,
        in_rate_hz: int,
        out_rate_hz: int,
        quality: Literal["fast", "hq", "vhq"] = "hq",
    ) -> Resampler: ...
    def process(self, pcm: _PcmLike) -> npt.NDArray[np.int16]: ...
    def flush(self) -> npt.NDArray[np.int16]: ...
    def reset(self) -> None: ...
    def output_delay(self) -> float: ...
    def output_len(self, n_samples: int) -> int: ...
    @property
    def in_rate_hz(self) -> int: ...
    @property
    def out_rate_hz(self) -> int: ...
    @property
    def quality(self) -> str: ...
    @property
    def taps_per_phase(self) -> int: ...

def to_mono(pcm: _PcmLike, channels: int) -> npt.NDArray[np.int16]: ...
