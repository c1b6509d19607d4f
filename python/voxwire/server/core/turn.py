"""A responder's input and outputs: :class:`Turn` in; :class:`Say`, :class:`CallTool` and
:class:`CallMcp` out.

Plain data shared by the pure core (which builds a turn from the conversation and a
``response.create``), the pump (which streams the outputs) and the engines that decide them
(:mod:`voxwire.server.engines.responder`, :mod:`voxwire.server.engines.chat`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from voxwire.protocol import (
    FunctionCallItem,
    FunctionCallOutputItem,
    InputAudio,
    InputText,
    Item,
    McpApprovalRequestItem,
    McpApprovalResponseItem,
    McpCallItem,
    MessageItem,
)

__all__ = ["DECLINED", "CallMcp", "CallTool", "Output", "Say", "Turn"]

#: What a responder sees as the output of an MCP call the client declined.
DECLINED = "The user declined this tool call; it was not run."


@dataclass(frozen=True)
class Say:
    """An assistant message (spoken or written, as the response's modality says)."""

    text: str


@dataclass(frozen=True)
class CallTool:
    """A function call; ``arguments`` is JSON text."""

    name: str
    arguments: str


@dataclass(frozen=True)
class CallMcp:
    """A call of a tool of the hosted MCP server ``server_label`` (the server makes it);
    ``approval_request_id``: the approved request it carries out."""

    server_label: str
    name: str
    arguments: str
    approval_request_id: str | None = None


Output = Say | CallTool | CallMcp


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
    #: The declared ``mcp`` tools as the client sent them, by ``server_label``.
    mcp_tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

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
    def approved_mcp_call(self) -> CallMcp | None:
        """The call to make if the last item approves an MCP approval request."""
        request = self._answered_request()
        if request is None or not request[1].approve:
            return None
        asked = request[0]
        return CallMcp(
            asked.server_label, asked.name, asked.arguments, approval_request_id=asked.id
        )

    def _answered_request(self) -> tuple[McpApprovalRequestItem, McpApprovalResponseItem] | None:
        last = self.items[-1] if self.items else None
        if not isinstance(last, McpApprovalResponseItem):
            return None
        for item in self.items:
            if isinstance(item, McpApprovalRequestItem) and item.id == last.approval_request_id:
                return item, last
        return None

    @property
    def tool_output(self) -> tuple[str, str] | None:
        """``(tool name, output)`` if the last item is a function call's output, an MCP call
        (its output, or its error message) or a declined MCP approval (:data:`DECLINED`)."""
        last = self.items[-1] if self.items else None
        if isinstance(last, McpCallItem):
            if last.error is not None:
                return last.name, last.error.message
            return last.name, last.output or ""
        answered = self._answered_request()
        if answered is not None and not answered[1].approve:
            return answered[0].name, DECLINED
        if not isinstance(last, FunctionCallOutputItem):
            return None
        output = last
        for item in reversed(self.items):
            if isinstance(item, FunctionCallItem) and item.call_id == output.call_id:
                return item.name, output.output
        return None
