"""Hosted MCP on the local server, without I/O.

The hosted service reaches real MCP servers; this one cannot (it is offline), so a scenario
declares each MCP server — its tools and what each call returns — under ``mcp_servers``::

    {"mcp_servers": {
      "docs": {"tools": [
        {"name": "search", "description": "Search the docs",
         "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
         "read_only": true, "output": "Three pages match."},
        {"name": "delete_page", "error": "permission denied"}
      ]},
      "broken": {"list_error": "connection refused"}
    }}

and the server does what the hosted one does with them:

* when a ``session.update`` configures an ``mcp`` tool (a ``server_label`` not listed before, or
  its settings changed), it lists the tools: ``conversation.item.added`` (an ``mcp_list_tools``
  item, no tools yet) → ``mcp_list_tools.in_progress`` → ``mcp_list_tools.completed`` →
  ``conversation.item.done`` with the tools ``allowed_tools`` lets through (names, or
  ``{"tool_names", "read_only"}``); an unknown label or a ``list_error`` gives
  ``mcp_list_tools.failed`` and an item without tools;
* a rule's ``"mcp": {"server_label", "name", "arguments"}`` calls a tool. If the tool needs
  approval (``require_approval``: ``"always"`` — the hosted default —, ``"never"``, or
  ``{"always": filter, "never": filter}``), the response ends with an ``mcp_approval_request``
  item and the server waits for the client's ``mcp_approval_response`` item; the server then
  starts a response by itself that makes the approved call (or, declined, lets the responder
  answer). Otherwise the call is made at once: an ``mcp_call`` item, its arguments streamed
  (``response.mcp_call_arguments.delta`` / ``.done``), ``response.mcp_call.in_progress``, then
  ``.completed`` with the tool's ``output`` or ``.failed`` with its ``error`` (a
  ``tool_execution_error``), and the response ends there — the client asks for the next one,
  whose responder sees the call's output (``after_tool`` rules match MCP tools too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import (
    ConversationItemAdded,
    ConversationItemDone,
    McpListToolsCompleted,
    McpListToolsFailed,
    McpListToolsInProgress,
    McpListToolsItem,
    McpToolInfo,
    ServerEvent,
)
from voxwire.server.core.conversation import ServerConversation
from voxwire.server.core.ids import ServerIds

__all__ = [
    "McpServerSpec",
    "McpServers",
    "McpToolSpec",
    "list_tools_events",
    "mcp_tool_configs",
    "needs_approval",
]

_EMPTY_SCHEMA: Final = {"type": "object", "properties": {}}
_TOOL_KEYS: Final = frozenset(
    {"name", "description", "input_schema", "read_only", "output", "error"}
)


@dataclass(frozen=True)
class McpToolSpec:
    """One tool of a declared MCP server and what calling it gives."""

    name: str
    description: str | None = None
    input_schema: Mapping[str, Any] = field(default_factory=lambda: dict(_EMPTY_SCHEMA))
    read_only: bool = False
    output: str = ""
    error: str | None = None  # set: every call fails with this message

    def info(self) -> McpToolInfo:
        annotations = {"readOnlyHint": True} if self.read_only else None
        return McpToolInfo(
            name=self.name,
            input_schema=dict(self.input_schema),
            description=self.description,
            annotations=annotations,
        )


@dataclass(frozen=True)
class McpServerSpec:
    """A declared MCP server: its tools, or the error listing them gives."""

    tools: tuple[McpToolSpec, ...] = ()
    list_error: str | None = None

    def tool(self, name: str) -> McpToolSpec | None:
        return next((tool for tool in self.tools if tool.name == name), None)


@dataclass(frozen=True)
class McpServers:
    """The MCP servers of a scenario, by ``server_label``."""

    servers: Mapping[str, McpServerSpec] = field(default_factory=dict)

    def get(self, label: str) -> McpServerSpec | None:
        return self.servers.get(label)

    @classmethod
    def from_mapping(cls, data: object) -> McpServers:
        if not isinstance(data, Mapping):
            raise ConfigurationError("scenario 'mcp_servers' must be an object: label -> server")
        return cls({str(label): _server(str(label), raw) for label, raw in data.items()})


def _server(label: str, raw: object) -> McpServerSpec:
    where = f"scenario mcp_servers[{label!r}]"
    if not isinstance(raw, Mapping) or set(raw) - {"tools", "list_error"}:
        raise ConfigurationError(f"{where} must be an object with 'tools' and/or 'list_error'")
    tools = raw.get("tools", [])
    if not isinstance(tools, list):
        raise ConfigurationError(f"{where}: 'tools' must be a list of objects")
    list_error = raw.get("list_error")
    if list_error is not None and not isinstance(list_error, str):
        raise ConfigurationError(f"{where}: 'list_error' must be a string")
    return McpServerSpec(tuple(_tool(where, t) for t in tools), list_error)


def _tool(where: str, raw: object) -> McpToolSpec:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise ConfigurationError(f"{where}: every tool needs a 'name'")
    unknown = set(raw) - _TOOL_KEYS
    if unknown:
        raise ConfigurationError(
            f"{where} tool {raw['name']!r} has unknown keys {sorted(unknown)}: expected "
            + ", ".join(sorted(_TOOL_KEYS))
        )
    schema = raw.get("input_schema", _EMPTY_SCHEMA)
    texts = {key: raw.get(key) for key in ("description", "output", "error")}
    if not isinstance(schema, Mapping) or any(
        v is not None and not isinstance(v, str) for v in texts.values()
    ):
        raise ConfigurationError(
            f"{where} tool {raw['name']!r}: 'input_schema' must be an object and "
            "'description', 'output', 'error' strings"
        )
    return McpToolSpec(
        name=raw["name"],
        description=texts["description"],
        input_schema=dict(schema),
        read_only=bool(raw.get("read_only", False)),
        output=texts["output"] or "",
        error=texts["error"],
    )


# --- the session's mcp tools ----------------------------------------------------------------------


def mcp_tool_configs(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The ``mcp`` tools among ``tools`` (session or response ``tools``), by ``server_label``."""
    return {t["server_label"]: t for t in tools if t.get("type") == "mcp"}


def _matches(spec: McpToolSpec, tool_filter: Any) -> bool:
    """A GA tool filter (``{"tool_names": [...], "read_only": bool}``) or a list of names."""
    if isinstance(tool_filter, list):
        return spec.name in tool_filter
    if not isinstance(tool_filter, Mapping):
        return False
    names = tool_filter.get("tool_names")
    read_only = tool_filter.get("read_only")
    if names is None and read_only is None:
        return False
    return (names is None or spec.name in names) and (
        read_only is None or read_only == spec.read_only
    )


def allowed(config: Mapping[str, Any], spec: McpToolSpec) -> bool:
    """``allowed_tools`` lets the tool through (unset or null: every tool)."""
    allowed_tools = config.get("allowed_tools")
    return allowed_tools is None or _matches(spec, allowed_tools)


def needs_approval(config: Mapping[str, Any], spec: McpToolSpec) -> bool:
    """Whether calling the tool needs the client's approval (``require_approval``; unset:
    ``"always"``, as on the hosted service). With filters, ``never`` wins over ``always``; a
    tool neither names needs approval."""
    policy = config.get("require_approval")
    if policy is None or policy == "always":
        return True
    if policy == "never":
        return False
    never = policy.get("never") if isinstance(policy, Mapping) else None
    return never is None or not _matches(spec, never)


def list_tools_events(
    ids: ServerIds,
    conversation: ServerConversation,
    config: Mapping[str, Any],
    servers: McpServers,
) -> list[ServerEvent]:
    """The events of listing one configured MCP server's tools; the item joins the
    conversation (at its end)."""
    label = config["server_label"]
    item_id = ids.item()
    item = McpListToolsItem(id=item_id, server_label=label, tools=[])
    previous = conversation.insert(item, None)
    events: list[ServerEvent] = [
        ConversationItemAdded(event_id=ids.event(), previous_item_id=previous, item=item),
        McpListToolsInProgress(event_id=ids.event(), item_id=item_id),
    ]
    server = servers.get(label)
    if server is None or server.list_error is not None:
        events.append(McpListToolsFailed(event_id=ids.event(), item_id=item_id))
    else:
        listed = [spec.info() for spec in server.tools if allowed(config, spec)]
        item = McpListToolsItem(id=item_id, server_label=label, tools=listed)
        conversation.replace(item)
        events.append(McpListToolsCompleted(event_id=ids.event(), item_id=item_id))
    events.append(ConversationItemDone(event_id=ids.event(), previous_item_id=previous, item=item))
    return events


def tools_to_list(
    before: list[dict[str, Any]], after: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The mcp tool configs of ``after`` that are new or changed against ``before``."""
    old = mcp_tool_configs(before)
    return [config for label, config in mcp_tool_configs(after).items() if old.get(label) != config]
