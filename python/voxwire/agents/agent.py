"""``RealtimeAgent``: the declaration a session turns into its ``session.update``.

An agent is data: a name, instructions (text, or a function of the agent that returns text —
possibly a coroutine, resolved by the session when it starts), a voice, the tools it offers,
the agents it may hand off to and its output guardrails.

Making an agent active takes two steps, kept apart so that a failure changes nothing:
:func:`resolve_agent` runs everything that may fail or await (dynamic instructions, each
tool's and handoff's ``is_enabled``, lazy handoff targets, name clashes) and returns a
:class:`ResolvedAgent`; only then does the session apply it (:func:`agent_session_config` for
the first ``session.update``, :func:`agent_update_config` for a switch).

Handoffs (:func:`handoff`, :class:`Handoff`) are declared here too: a realtime handoff keeps the
connection and the conversation; the session offers the model a ``transfer_to_<name>`` function
tool for each handoff of the active agent, and when the model calls it, switches agents in place
(``session.update`` with the new agent's instructions, voice and tools). Agents that hand back
to each other cannot both name the other at construction (agents are frozen): give a function
returning the agent, ``handoff(lambda: triage)``. See docs/agents.md.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import msgspec

from voxwire.agents.guardrail import OutputGuardrail
from voxwire.agents.input_guardrail import InputGuardrail
from voxwire.agents.mcp import HostedMCPTool
from voxwire.agents.mcp_local import MCPServer
from voxwire.agents.tool import EnabledPolicy, FunctionTool
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import config as wire
from voxwire.protocol.config import SessionConfig, Tool

__all__ = [
    "Handoff",
    "HandoffTarget",
    "Instructions",
    "RealtimeAgent",
    "ResolvedAgent",
    "ResolvedHandoff",
    "agent_session_config",
    "agent_update_config",
    "resolve_agent",
    "resolve_instructions",
    "transfer_tool_name",
]

# Handoffs live here, beside the agent: a handoff names an agent and an agent lists its
# handoffs, so the two declarations refer to each other (one module keeps imports one-way).

#: Fixed text, or a function of the agent returning text (or an awaitable of text).
Instructions: TypeAlias = "str | Callable[[RealtimeAgent], str | Awaitable[str]]"


@dataclass(frozen=True, kw_only=True)
class RealtimeAgent:
    """A realtime agent, as declared: ``name`` (for events and logs), ``instructions``,
    ``voice`` (``None``: the session's or the server's default), ``tools`` (function tools the
    session runs — :class:`voxwire.agents.FunctionTool` — and declarations the application
    answers itself or the server runs: :class:`voxwire.protocol.FunctionTool` /
    :class:`~voxwire.protocol.McpTool`, or a :class:`~voxwire.agents.HostedMCPTool`),
    ``handoffs`` (agents, or :func:`handoff`
    declarations, the model may transfer the conversation to), ``handoff_description`` (what
    other agents' transfer tools say about this one), ``output_guardrails`` (checks over what the
    assistant says) and ``input_guardrails`` (checks over what the user says, before the agent
    answers: :mod:`voxwire.agents.input_guardrail`). ``on_user_away``: called with the session
    (sync or async) each time the user goes ``away`` (the session's ``user_away_timeout_s``) —
    to check in (``await session.say("Are you still there?")``) or hang up."""

    name: str
    instructions: Instructions | None = None
    voice: str | None = None
    tools: Sequence[Tool | FunctionTool | HostedMCPTool] = field(default_factory=tuple)
    handoffs: Sequence[RealtimeAgent | Handoff] = field(default_factory=tuple)
    handoff_description: str | None = None
    output_guardrails: Sequence[OutputGuardrail] = field(default_factory=tuple)
    input_guardrails: Sequence[InputGuardrail] = field(default_factory=tuple)
    on_user_away: Callable[[Any], Awaitable[None] | None] | None = None
    mcp_servers: Sequence[MCPServer] = field(default_factory=tuple)
    """Local MCP servers whose tools the agent offers (:mod:`voxwire.agents.mcp_local`)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigurationError(f"RealtimeAgent name={self.name!r} is invalid: expected text")
        if self.voice is not None and (not isinstance(self.voice, str) or not self.voice):
            raise ConfigurationError(
                f"RealtimeAgent voice={self.voice!r} is invalid: expected a voice name such as "
                "'marin', or None"
            )
        instructions = self.instructions
        if instructions is not None and not (
            isinstance(instructions, str) or callable(instructions)
        ):
            raise ConfigurationError(
                f"RealtimeAgent instructions={instructions!r} is invalid: expected text or a "
                "function of the agent returning text"
            )
        for tool in self.tools:
            if not isinstance(
                tool, FunctionTool | HostedMCPTool | wire.FunctionTool | wire.McpTool
            ):
                raise ConfigurationError(
                    f"agent {self.name!r}: tool {tool!r} is invalid: expected a FunctionTool "
                    "(voxwire.agents.function_tool), a HostedMCPTool or a protocol tool "
                    "declaration"
                )
        for target in self.handoffs:
            if not isinstance(target, RealtimeAgent | Handoff):
                raise ConfigurationError(
                    f"agent {self.name!r}: handoff {target!r} is invalid: expected a "
                    "RealtimeAgent or voxwire.agents.handoff(...)"
                )
        for guardrail in self.output_guardrails:
            if not isinstance(guardrail, OutputGuardrail):
                raise ConfigurationError(_undeclared(self.name, "output", guardrail))
        for check in self.input_guardrails:
            if not isinstance(check, InputGuardrail):
                raise ConfigurationError(_undeclared(self.name, "input", check))
        if self.on_user_away is not None and not callable(self.on_user_away):
            raise ConfigurationError(
                f"agent {self.name!r}: on_user_away={self.on_user_away!r} is invalid: expected "
                "a function of the session (sync or async)"
            )
        _check_servers(self.name, self.mcp_servers)
        object.__setattr__(self, "mcp_servers", tuple(self.mcp_servers))
        object.__setattr__(self, "input_guardrails", tuple(self.input_guardrails))
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "handoffs", tuple(self.handoffs))
        object.__setattr__(self, "output_guardrails", tuple(self.output_guardrails))


def _check_servers(agent: str, servers: Sequence[MCPServer]) -> None:
    labels: set[str] = set()
    for server in servers:
        if not isinstance(server, MCPServer):
            raise ConfigurationError(
                f"agent {agent!r}: MCP server {server!r} is invalid: expected an MCPServerStdio "
                "or MCPServerHTTP (voxwire.agents)"
            )
        if server.name in labels:
            raise ConfigurationError(
                f"agent {agent!r} has two MCP servers named {server.name!r}: names must be unique"
            )
        labels.add(server.name)


#: Given the names an agent's own tools and handoffs take, its MCP tools under their names.
McpTools: TypeAlias = "Callable[[frozenset[str]], Sequence[FunctionTool]]"


def _undeclared(agent: str, stage: str, check: object) -> str:
    """Why ``check`` is no guardrail; a bare function is told which decorator declares it (the
    name it reports, as ``@function_tool`` declares a tool)."""
    decorator = f"@{stage}_guardrail"
    if callable(check):
        return (
            f"agent {agent!r}: {stage} guardrail {check!r} is a bare function: decorate it with "
            f"{decorator} (from voxwire.agents) to declare it as a guardrail"
        )
    return (
        f"agent {agent!r}: {stage} guardrail {check!r} is invalid: expected a function "
        f"decorated with {decorator} (from voxwire.agents)"
    )


async def resolve_instructions(agent: RealtimeAgent) -> str | None:
    """The agent's instructions as text (calling and awaiting a dynamic one)."""
    instructions = agent.instructions
    if instructions is None or isinstance(instructions, str):
        return instructions
    value = instructions(agent)
    if inspect.isawaitable(value):
        value = await value
    if not isinstance(value, str):
        raise ConfigurationError(
            f"the instructions function of agent {agent.name!r} returned {value!r}: expected text"
        )
    return value


@dataclass(frozen=True, kw_only=True)
class ResolvedHandoff:
    """An enabled handoff with its target and transfer tool, as resolved."""

    handoff: Handoff
    target: RealtimeAgent
    tool_name: str
    description: str

    def declaration(self) -> wire.FunctionTool:
        return wire.FunctionTool(
            name=self.tool_name,
            description=self.description,
            parameters={"type": "object", "properties": {}, "additionalProperties": False},
        )


@dataclass(frozen=True, kw_only=True)
class ResolvedAgent:
    """An agent with everything dynamic settled: the exact values the session sends and
    routes calls by, for as long as the agent is active."""

    agent: RealtimeAgent
    instructions: str | None
    tools: Mapping[str, FunctionTool]
    """Function tools the session runs, by name (enabled ones only)."""
    handoffs: Mapping[str, ResolvedHandoff]
    """Enabled handoffs, by transfer tool name."""
    declared: frozenset[str]
    """Names of function tools declared for the application to answer."""
    declarations: tuple[Tool, ...]
    """Every tool the server is told about, in the agent's order (handoffs last)."""

    def lookup(self, name: str) -> FunctionTool | ResolvedHandoff | None:
        """What a call of ``name`` runs (``None``: not a tool of this agent's session)."""
        return self.tools.get(name) or self.handoffs.get(name)


async def _enabled(policy: EnabledPolicy, agent: RealtimeAgent) -> bool:
    if isinstance(policy, bool):
        return policy
    value = policy(agent)
    if inspect.isawaitable(value):
        value = await value
    return bool(value)


async def resolve_agent(agent: RealtimeAgent, mcp: McpTools | None = None) -> ResolvedAgent:
    """Settle everything dynamic about ``agent`` (see the module docstring). Raises what the
    agent's functions raise, or :class:`~voxwire.exceptions.ConfigurationError` (a bad value,
    two tools with one name); nothing is changed anywhere either way. ``mcp``: the tools of
    the agent's local MCP servers, named around the names its own tools took (the session's,
    voxwire/asyncio/agents/mcp_local.py)."""
    instructions = await resolve_instructions(agent)
    tools: dict[str, FunctionTool] = {}
    declared: set[str] = set()
    declarations: list[Tool] = []
    names: set[str] = set()

    def claim(name: str) -> None:
        if name in names:
            raise ConfigurationError(
                f"agent {agent.name!r} offers two tools named {name!r}: tool and handoff "
                "names must be unique"
            )
        names.add(name)

    for tool in agent.tools:
        if isinstance(tool, FunctionTool):
            if not await _enabled(tool.is_enabled, agent):
                continue
            claim(tool.name)
            tools[tool.name] = tool
            declarations.append(tool.declaration())
        else:
            if isinstance(tool, wire.FunctionTool):
                claim(tool.name)
                declared.add(tool.name)
            declarations.append(_declaration(tool))
    handoffs: dict[str, ResolvedHandoff] = {}
    for item in agent.handoffs:
        declared_handoff = item if isinstance(item, Handoff) else Handoff(agent=item)
        target = declared_handoff.target()
        if not await _enabled(declared_handoff.is_enabled, agent):
            continue
        resolved = ResolvedHandoff(
            handoff=declared_handoff,
            target=target,
            tool_name=declared_handoff.name_for(target),
            description=declared_handoff.description_for(target),
        )
        claim(resolved.tool_name)
        handoffs[resolved.tool_name] = resolved
        declarations.append(resolved.declaration())
    for tool in mcp(frozenset(names)) if mcp is not None else ():
        claim(tool.name)
        tools[tool.name] = tool
        declarations.append(tool.declaration())
    return ResolvedAgent(
        agent=agent,
        instructions=instructions,
        tools=tools,
        handoffs=handoffs,
        declared=frozenset(declared),
        declarations=tuple(declarations),
    )


def _declaration(tool: Tool | FunctionTool | HostedMCPTool) -> Tool:
    return tool.declaration() if isinstance(tool, FunctionTool | HostedMCPTool) else tool


def agent_session_config(
    base: SessionConfig | Mapping[str, Any] | None,
    agent: RealtimeAgent | ResolvedAgent | None,
    *,
    instructions: str | None = None,
) -> SessionConfig:
    """``base`` with the agent's settings applied: ``instructions``, ``audio.output.voice``
    and ``tools``. With a :class:`ResolvedAgent` its resolved instructions and enabled tools
    are used; with a bare agent, ``instructions`` (already resolved, see
    :func:`resolve_instructions`) and every tool it declares.

    Raises :class:`~voxwire.exceptions.ConfigurationError` for a bad base configuration.
    """
    config = (
        base
        if isinstance(base, SessionConfig)
        else SessionConfig.from_mapping(base if base is not None else {})
    )
    if agent is None:
        return config
    if isinstance(agent, ResolvedAgent):
        instructions, tools = agent.instructions, list(agent.declarations)
        agent = agent.agent
    else:
        tools = [_declaration(tool) for tool in agent.tools]
    wire_config = config.to_wire()
    if instructions is not None:
        wire_config["instructions"] = instructions
    if agent.voice is not None:
        audio = wire_config.setdefault("audio", {})
        audio.setdefault("output", {})["voice"] = agent.voice
    if tools:
        wire_config["tools"] = [msgspec.to_builtins(tool) for tool in tools]
    return SessionConfig.from_mapping(wire_config)


def agent_update_config(
    base: SessionConfig, resolved: ResolvedAgent, *, voice_locked: bool
) -> SessionConfig:
    """The ``session.update`` that switches a running session to ``resolved``: only what an
    agent decides — instructions (the base's when the agent has none), tools (all of them, so
    the previous agent's go) and the voice. Other settings stay as the session has them (the
    application may have changed them since the start).

    ``voice_locked``: the conversation already holds assistant audio, and the Realtime API
    refuses a voice change then (``cannot_update_voice``): the voice is left out and the
    session keeps speaking with the voice it has.
    """
    base_instructions = base.instructions if isinstance(base.instructions, str) else ""
    update: dict[str, Any] = {
        "instructions": resolved.instructions
        if resolved.instructions is not None
        else base_instructions,
        "tools": [msgspec.to_builtins(tool) for tool in resolved.declarations],
    }
    if resolved.agent.voice is not None and not voice_locked:
        update["audio"] = {"output": {"voice": resolved.agent.voice}}
    return SessionConfig.from_mapping(update)


# --- handoffs: an agent passes the conversation to another agent --------------------------

#: The agent handed to, or a function returning it (for agents that refer to each other).
HandoffTarget: TypeAlias = "RealtimeAgent | Callable[[], RealtimeAgent]"


def transfer_tool_name(agent_name: str) -> str:
    """``transfer_to_<name>``: the agent's name in lower case, other characters as ``_``."""
    slug = re.sub(r"[^a-z0-9_]+", "_", agent_name.lower()).strip("_") or "agent"
    return f"transfer_to_{slug}"[:64]


@dataclass(frozen=True, kw_only=True)
class Handoff:
    """A handoff as declared: the target ``agent``, and optionally the tool's name and
    description (defaults from the target), ``is_enabled`` (decided when the agent becomes
    active) and ``on_handoff`` (called with the target before the switch; sync or async; if it
    raises, the handoff does not happen and the model is told)."""

    agent: HandoffTarget
    tool_name: str | None = None
    tool_description: str | None = None
    is_enabled: EnabledPolicy = True
    on_handoff: Callable[[RealtimeAgent], Awaitable[None] | None] | None = None

    def __post_init__(self) -> None:
        if not callable(self.agent) and not _is_agent(self.agent):
            raise ConfigurationError(
                f"handoff agent={self.agent!r} is invalid: expected a RealtimeAgent or a "
                "function returning one"
            )
        if self.on_handoff is not None and not callable(self.on_handoff):
            raise ConfigurationError("handoff on_handoff must be callable")

    def target(self) -> RealtimeAgent:
        """The agent handed to (calling the factory of a lazy target)."""
        agent: Any = self.agent if _is_agent(self.agent) else self.agent()  # type: ignore[operator]
        if not _is_agent(agent):
            raise ConfigurationError(
                f"the handoff target function returned {agent!r}: expected a RealtimeAgent"
            )
        result: RealtimeAgent = agent
        return result

    def name_for(self, target: RealtimeAgent) -> str:
        return self.tool_name if self.tool_name is not None else transfer_tool_name(target.name)

    def description_for(self, target: RealtimeAgent) -> str:
        if self.tool_description is not None:
            return self.tool_description
        text = f"Hand the conversation to the agent {target.name}."
        if target.handoff_description:
            text += f" {target.handoff_description}"
        return text

    async def run_on_handoff(self, target: RealtimeAgent) -> None:
        if self.on_handoff is None:
            return
        result = self.on_handoff(target)
        if inspect.isawaitable(result):
            await result


def handoff(
    agent: HandoffTarget,
    *,
    tool_name: str | None = None,
    tool_description: str | None = None,
    is_enabled: EnabledPolicy = True,
    on_handoff: Callable[[RealtimeAgent], Awaitable[None] | None] | None = None,
) -> Handoff:
    """Declare a handoff to ``agent`` (an agent, or a function returning one)."""
    return Handoff(
        agent=agent,
        tool_name=tool_name,
        tool_description=tool_description,
        is_enabled=is_enabled,
        on_handoff=on_handoff,
    )


def _is_agent(value: object) -> bool:
    return isinstance(value, RealtimeAgent)
