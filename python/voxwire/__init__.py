"""voxwire: realtime voice agents on the OpenAI Realtime protocol, with a Rust audio core.

Layers (imports point down only; see docs/architecture.md):

* ``voxwire._core``  — the compiled Rust audio core (resampler, ring buffer, playback clock, G.711)
* ``voxwire.audio``  — its Python face
* ``voxwire.protocol`` — the sans-I/O Realtime protocol core
"""

from voxwire._core import __version__
from voxwire.exceptions import VoxwireError

__all__ = ["VoxwireError", "__version__"]
