"""``HostedMCPTool``: a remote MCP server the Realtime API calls for the agent.

The hosted service connects to the MCP server itself (``server_url``, or a built-in connector
``connector_id``), lists its tools, and calls them when the model asks; the session only sees
the items and events (:mod:`voxwire.asyncio.agents.mcp`) and answers approval requests. This module
is the declaration, checked at once, and its wire form
(:class:`voxwire.protocol.McpTool`, the GA ``session.tools[]`` entry of ``type: "mcp"``).

``require_approval`` is ``"always"`` (the service's default when left out), ``"never"``, or
which tools need it: ``{"always": [names], "never": [names]}`` — each side a list of tool names
or a GA filter ``{"tool_names": [...], "read_only": bool}``. ``allowed_tools`` is a list of names
or such a filter. Everything else goes to the server as given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import config as wire

__all__ = ["HostedMCPTool", "McpApproval", "McpToolFilter"]

McpToolFilter: TypeAlias = "Sequence[str] | Mapping[str, Any]"
"""Tool names, or a GA filter ``{"tool_names": [...], "read_only": bool}``."""

McpApproval: TypeAlias = "Literal['always', 'never'] | Mapping[str, McpToolFilter]"
"""``"always"``, ``"never"``, or ``{"always": filter, "never": filter}``."""

_FILTER_KEYS = frozenset({"tool_names", "read_only"})


@dataclass(frozen=True, kw_only=True)
class HostedMCPTool:
    """A hosted MCP server for an agent's ``tools`` (see the module docstring). Exactly one of
    ``server_url``, ``connector_id`` and ``tunnel_id`` says where it is; ``authorization`` (an
    OAuth token) and ``headers`` are sent to it by the service, never logged here."""

    server_label: str
    server_url: str | None = None
    connector_id: str | None = None
    tunnel_id: str | None = None
    authorization: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    allowed_tools: McpToolFilter | None = None
    require_approval: McpApproval | None = None
    server_description: str | None = None

    def __post_init__(self) -> None:
        where = f"HostedMCPTool server_label={self.server_label!r}"
        if not isinstance(self.server_label, str) or not self.server_label.strip():
            raise ConfigurationError(f"{where} is invalid: expected a non-empty label")
        places = [
            name
            for name in ("server_url", "connector_id", "tunnel_id")
            if getattr(self, name) is not None
        ]
        if len(places) != 1:
            raise ConfigurationError(
                f"{where}: give exactly one of server_url, connector_id, tunnel_id (got "
                f"{', '.join(places) or 'none'})"
            )
        if self.headers is not None and not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.headers.items()
        ):
            raise ConfigurationError(f"{where}: headers must map text to text")
        if self.allowed_tools is not None:
            _filter(where, "allowed_tools", self.allowed_tools)
        _approval(where, self.require_approval)

    def declaration(self) -> wire.McpTool:
        """The GA ``mcp`` tool the session sends (fields left ``None`` are left out)."""
        approval = self.require_approval
        if isinstance(approval, Mapping):
            # The wire takes filter objects here (a list of names is ours for short).
            approval = {side: _filter_object(value) for side, value in approval.items()}
        fields: dict[str, Any] = {
            "server_url": self.server_url,
            "connector_id": self.connector_id,
            "tunnel_id": self.tunnel_id,
            "authorization": self.authorization,
            "headers": dict(self.headers) if self.headers is not None else None,
            "allowed_tools": (
                _filter("", "allowed_tools", self.allowed_tools)
                if self.allowed_tools is not None
                else None
            ),
            "require_approval": approval,
            "server_description": self.server_description,
        }
        # Left out, not null: the service takes a missing field as "not given".
        given = {name: value for name, value in fields.items() if value is not None}
        return wire.McpTool(server_label=self.server_label, **given)


def _filter(where: str, name: str, value: object) -> list[str] | dict[str, Any]:
    """A filter in its wire shape: a list of names, or ``{"tool_names", "read_only"}``."""
    if isinstance(value, str):
        raise ConfigurationError(
            f"{where}: {name}={value!r} is invalid: expected a list of tool names or "
            '{"tool_names": [...], "read_only": bool}'
        )
    if isinstance(value, Mapping):
        unknown = set(value) - _FILTER_KEYS
        names = value.get("tool_names")
        read_only = value.get("read_only")
        if (
            unknown
            or (names is not None and not _names(names))
            or not isinstance(read_only, bool | None)
        ):
            raise ConfigurationError(
                f"{where}: {name}={dict(value)!r} is invalid: expected tool_names (a list of "
                "names) and/or read_only (true or false)"
            )
        return {key: (list(v) if key == "tool_names" else v) for key, v in value.items()}
    if not _names(value):
        raise ConfigurationError(
            f"{where}: {name}={value!r} is invalid: expected a list of tool names"
        )
    assert isinstance(value, Sequence)
    return list(value)


def _filter_object(value: McpToolFilter) -> dict[str, Any]:
    shaped = _filter("", "require_approval", value)
    return shaped if isinstance(shaped, dict) else {"tool_names": shaped}


def _names(value: object) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and all(isinstance(n, str) and n for n in value)
    )


def _approval(where: str, value: object) -> None:
    if value is None or value in ("always", "never"):
        return
    if isinstance(value, Mapping) and value and set(value) <= {"always", "never"}:
        for side, tools in value.items():
            _filter(where, f"require_approval[{side!r}]", tools)
        return
    raise ConfigurationError(
        f"{where}: require_approval={value!r} is invalid: expected 'always', 'never', or "
        '{"always": tools, "never": tools} (tool names or a filter)'
    )
