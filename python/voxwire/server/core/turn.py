"""A responder's input and outputs: :class:`Turn` in; :class:`Say` and :class:`CallTool` out.

Plain data shared by the pure core (which builds a turn from the conversation and a
``response.create``), the pump (which streams the outputs) and the engines that decide them
(:mod:`voxwire.server.engines.responder`, :mod:`voxwire.server.engines.chat`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from voxwire.protocol import (
    FunctionCallItem,
    FunctionCallOutputItem,
    InputAudio,
    InputText,
    Item,
    MessageItem,
)

__all__ = ["CallTool", "Output", "Say", "Turn"]


@dataclass(frozen=True)
class Say:
    """An assistant message (spoken or written, as the response's modality says)."""

    text: str


@dataclass(frozen=True)
class CallTool:
    """A function call; ``arguments`` is JSON text."""

    name: str
    arguments: str


Output = Say | CallTool


@dataclass(frozen=True)
class Turn:
    """What a responder decides from."""

    items: Sequence[Item]
    instructions: str
    tools: Sequence[str]
    tool_choice: str
    #: The declared function tools as the client sent them (``name``, ``description``,
    #: ``parameters``), for responders that pass them on to a model.
    tool_specs: Sequence[Mapping[str, Any]] = ()

    @property
    def user_text(self) -> str:
        """The user's last message: its text parts and audio transcripts, joined."""
        for item in reversed(self.items):
            if isinstance(item, MessageItem) and item.role == "user":
                parts = []
                for part in item.content:
                    if isinstance(part, InputText):
                        parts.append(part.text)
                    elif isinstance(part, InputAudio) and part.transcript:
                        parts.append(part.transcript)
                return " ".join(parts)
        return ""

    @property
    def system_note(self) -> str | None:
        """The text of the last item if it is a system message (a tool's progress note, a
        guardrail's feedback), else ``None``."""
        last = self.items[-1] if self.items else None
        if not isinstance(last, MessageItem) or last.role != "system":
            return None
        return " ".join(p.text for p in last.content if isinstance(p, InputText))

    @property
    def tool_output(self) -> tuple[str, str] | None:
        """``(tool name, output)`` if the last item is a function call's output."""
        if not self.items or not isinstance(self.items[-1], FunctionCallOutputItem):
            return None
        output = self.items[-1]
        for item in reversed(self.items):
            if isinstance(item, FunctionCallItem) and item.call_id == output.call_id:
                return item.name, output.output
        return None
