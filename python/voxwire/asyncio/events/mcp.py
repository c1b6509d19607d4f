"""The session events of hosted MCP tools (:mod:`voxwire.asyncio.agents.mcp`); part of
:data:`voxwire.asyncio.events.SessionEvent`, kept here so that ``events.py`` stays small."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "McpApprovalRequestedEvent",
    "McpCallDoneEvent",
    "McpCallStartedEvent",
    "McpToolListing",
    "McpToolsChangedEvent",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class McpToolListing:
    """One tool of a hosted MCP server, as the server listed it (``mcp_list_tools``)."""

    server_label: str
    name: str
    description: str | None = None
    input_schema: object = None
    annotations: object = None


@dataclass(frozen=True, kw_only=True, slots=True)
class McpToolsChangedEvent:
    """The hosted MCP tools available changed (a server's tools listed, a server added or
    removed by a ``session.update`` or an agent switch); ``tools`` is the whole set, as
    ``session.available_mcp_tools`` has it now."""

    type: Literal["mcp_tools_changed"] = field(default="mcp_tools_changed", init=False)
    tools: tuple[McpToolListing, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class McpApprovalRequestedEvent:
    """The service asks before calling ``name`` on the MCP server ``server_label``: answer with
    ``session.approve_tool_call(call_id)`` or ``session.reject_tool_call(call_id, ...)``
    (``call_id`` is the ``mcp_approval_request`` item's id)."""

    type: Literal["mcp_approval_requested"] = field(default="mcp_approval_requested", init=False)
    call_id: str
    server_label: str
    name: str
    arguments: str


@dataclass(frozen=True, kw_only=True, slots=True)
class McpCallStartedEvent:
    """The service is calling an MCP tool (``response.mcp_call.in_progress``)."""

    type: Literal["mcp_call_started"] = field(default="mcp_call_started", init=False)
    item_id: str
    response_id: str
    server_label: str
    name: str
    arguments: str


@dataclass(frozen=True, kw_only=True, slots=True)
class McpCallDoneEvent:
    """An MCP call ended: ``output``, or ``error`` (the message of its protocol, execution or
    HTTP error) when it failed. The model sees the same in the conversation."""

    type: Literal["mcp_call_done"] = field(default="mcp_call_done", init=False)
    item_id: str
    response_id: str
    server_label: str
    name: str
    arguments: str
    output: str | None = None
    error: str | None = None
