"""voxwire: realtime voice agents on the OpenAI Realtime protocol, with a Rust audio core.

Layers (imports point down only; see docs/architecture.md):

* ``voxwire._core``  — the compiled Rust audio core (resampler, ring buffer, playback clock, G.711)
* ``voxwire.audio``  — its Python face
* ``voxwire.protocol`` — the sans-I/O Realtime protocol core
* ``voxwire.agents`` — agents declared as data (:class:`RealtimeAgent`)
* ``voxwire.asyncio`` — the session over websockets (:class:`RealtimeSession`, docs/session.md)

``RealtimeSession``, ``RealtimeAgent`` and the agent helpers (``function_tool``, ``handoff``,
``output_guardrail``, ``FunctionTool``) are imported on first use, so ``import voxwire`` stays
light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from voxwire._core import __version__
from voxwire.exceptions import VoxwireError

if TYPE_CHECKING:
    from voxwire.agents import (
        FunctionTool,
        RealtimeAgent,
        function_tool,
        handoff,
        output_guardrail,
    )
    from voxwire.asyncio import RealtimeSession

__all__ = [
    "FunctionTool",
    "RealtimeAgent",
    "RealtimeSession",
    "VoxwireError",
    "__version__",
    "function_tool",
    "handoff",
    "output_guardrail",
]

_AGENT_NAMES = frozenset(
    {"FunctionTool", "RealtimeAgent", "function_tool", "handoff", "output_guardrail"}
)


def __getattr__(name: str) -> Any:
    if name == "RealtimeSession":
        from voxwire.asyncio import RealtimeSession

        return RealtimeSession
    if name in _AGENT_NAMES:
        import voxwire.agents

        return getattr(voxwire.agents, name)
    raise AttributeError(f"module 'voxwire' has no attribute {name!r}")
