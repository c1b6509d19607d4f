"""Local MCP servers as the agent's tools: the declarations (no I/O here).

:class:`MCPServerStdio` (a process the session starts, speaking MCP over its stdin/stdout) and
:class:`MCPServerHTTP` (a streamable-HTTP endpoint) name a server; the session connects it
(voxwire/asyncio/agents/mcp_local.py, with the official ``mcp`` SDK: the ``mcp`` extra), lists
its tools, and offers each one to the model as a function tool running through the same
machinery as ``@function_tool`` ones: approvals, tool guardrails, timeouts, error messages,
tracing spans, persistence.

Names are settled by :func:`exposed_names`, one rule for every case (docs/agents.md, *Local MCP
servers*): a tool keeps its own name when no function tool, handoff or other server's tool
has it; otherwise every MCP tool with that name is offered as ``<server>__<tool>``. Characters
a function name cannot hold become ``_``; a name longer than 64 characters is cut.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from voxwire.agents.tool import ApprovalPolicy
from voxwire.agents.tool_guardrail import ToolInputGuardrail, ToolOutputGuardrail, freeze_guardrails
from voxwire.exceptions import ConfigurationError

__all__ = ["MCPServer", "MCPServerHTTP", "MCPServerStdio", "exposed_names"]

_LABEL = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, kw_only=True)
class MCPServer:
    """What every local MCP server declares: ``name`` (a label: the prefix of colliding tool
    names, and what events say), ``allowed_tools`` / ``blocked_tools`` (the server's tools
    offered: only the allowed ones when given, never the blocked ones), ``needs_approval``
    (for every tool of the server: a bool or a policy of the call; or per tool, a mapping of
    the tool's MCP name to one — a tool not in it needs none), ``timeout_s`` per call,
    ``input_guardrails`` / ``output_guardrails`` around every call, and
    ``cancel_on_barge_in`` (the user starting to speak cancels the calls in flight: the model
    gets a short note instead of a result)."""

    name: str
    allowed_tools: Collection[str] | None = None
    blocked_tools: Collection[str] = ()
    needs_approval: ApprovalPolicy | Mapping[str, ApprovalPolicy] = False
    timeout_s: float | None = 30.0
    input_guardrails: Sequence[ToolInputGuardrail] = ()
    output_guardrails: Sequence[ToolOutputGuardrail] = ()
    cancel_on_barge_in: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _LABEL.match(self.name):
            raise ConfigurationError(
                f"MCP server name {self.name!r} is invalid: expected 1-32 letters, digits, "
                "'_' or '-'"
            )
        for option in ("allowed_tools", "blocked_tools"):
            value = getattr(self, option)
            if value is None:
                continue
            if isinstance(value, str) or not all(isinstance(n, str) and n for n in value):
                raise ConfigurationError(
                    f"MCP server {self.name!r}: {option}={value!r} is invalid: expected a list "
                    "of tool names"
                )
            object.__setattr__(self, option, frozenset(value))
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ConfigurationError(
                f"MCP server {self.name!r}: timeout_s={self.timeout_s!r} is invalid: expected "
                "seconds > 0 or None"
            )
        approval = self.needs_approval
        if not (isinstance(approval, bool | Mapping) or callable(approval)):
            raise ConfigurationError(
                f"MCP server {self.name!r}: needs_approval={approval!r} is invalid: expected a "
                "bool, a function of the call, or a mapping of tool names to either"
            )
        freeze_guardrails(self)

    def offers(self, tool: str) -> bool:
        """Whether the server's tool ``tool`` is offered (the allow/deny lists)."""
        allowed = self.allowed_tools
        return (allowed is None or tool in allowed) and tool not in self.blocked_tools

    def approval_for(self, tool: str) -> ApprovalPolicy:
        """The approval policy of the server's tool ``tool``."""
        approval = self.needs_approval
        if isinstance(approval, Mapping):
            return approval.get(tool, False)
        return approval


@dataclass(frozen=True, kw_only=True)
class MCPServerStdio(MCPServer):
    """A server the session starts as a process (``command`` and ``args``; ``env`` merged
    over a minimal environment, ``cwd``) and stops when it closes."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.command, str) or not self.command:
            raise ConfigurationError(f"MCP server {self.name!r}: command must be text")
        object.__setattr__(self, "args", tuple(self.args))


@dataclass(frozen=True, kw_only=True)
class MCPServerHTTP(MCPServer):
    """A streamable-HTTP server at ``url`` (``headers`` sent with every request; kept out of
    ``repr``). A dropped connection is opened again at the next call (``reconnect_attempts``
    tries)."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    reconnect_attempts: int = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"MCP server {self.name!r}: url={self.url!r} is invalid: expected http(s)://..."
            )
        if self.reconnect_attempts < 0:
            raise ConfigurationError(
                f"MCP server {self.name!r}: reconnect_attempts must be 0 or more"
            )


def _function_name(text: str) -> str:
    return _UNSAFE.sub("_", text)[:64] or "_"


def exposed_names(
    taken: Collection[str], listings: Sequence[tuple[str, Sequence[str]]]
) -> dict[tuple[str, str], str]:
    """The name each MCP tool is offered under (see the module docstring): ``taken`` are the
    agent's own tool and handoff names, ``listings`` each server's label and offered tools, in
    the agent's order. A tool whose prefixed name is taken too is left out (not in the
    result)."""
    plain: dict[str, int] = {}
    for _, tools in listings:
        for tool in set(tools):
            name = _function_name(tool)
            plain[name] = plain.get(name, 0) + 1
    names: dict[tuple[str, str], str] = {}
    used = set(taken)
    for server, tools in listings:
        for tool in tools:
            name = _function_name(tool)
            if plain[name] > 1 or name in taken:
                name = _function_name(f"{server}__{tool}")
            if name in used:
                continue
            used.add(name)
            names[(server, tool)] = name
    return names
