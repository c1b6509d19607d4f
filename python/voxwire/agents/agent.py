"""``RealtimeAgent``: the declaration a session turns into its ``session.update``.

An agent is data: a name, instructions (text, or a function of the agent that returns text —
possibly a coroutine, resolved by the session when it starts), a voice, the tools it offers,
the agents it may hand off to and its output guardrails.

Making an agent active takes two steps, kept apart so that a failure changes nothing:
:func:`resolve_agent` runs everything that may fail or await (dynamic instructions, each
tool's and handoff's ``is_enabled``, lazy handoff targets, name clashes) and returns a
:class:`ResolvedAgent`; only then does the session apply it (:func:`agent_session_config` for
the first ``session.update``, :func:`agent_update_config` for a switch).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import msgspec

from voxwire.agents.guardrail import OutputGuardrail
from voxwire.agents.handoff import Handoff
from voxwire.agents.input_guardrail import InputGuardrail
from voxwire.agents.mcp import HostedMCPTool
from voxwire.agents.tool import EnabledPolicy, FunctionTool
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import config as wire
from voxwire.protocol.config import SessionConfig, Tool

__all__ = [
    "Instructions",
    "RealtimeAgent",
    "ResolvedAgent",
    "ResolvedHandoff",
    "agent_session_config",
    "agent_update_config",
    "resolve_agent",
    "resolve_instructions",
]

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
    answers: :mod:`voxwire.agents.input_guardrail`)."""

    name: str
    instructions: Instructions | None = None
    voice: str | None = None
    tools: Sequence[Tool | FunctionTool | HostedMCPTool] = field(default_factory=tuple)
    handoffs: Sequence[RealtimeAgent | Handoff] = field(default_factory=tuple)
    handoff_description: str | None = None
    output_guardrails: Sequence[OutputGuardrail] = field(default_factory=tuple)
    input_guardrails: Sequence[InputGuardrail] = field(default_factory=tuple)

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
                raise ConfigurationError(
                    f"agent {self.name!r}: output guardrail {guardrail!r} is invalid: expected "
                    "an OutputGuardrail (voxwire.agents.output_guardrail)"
                )
        for check in self.input_guardrails:
            if not isinstance(check, InputGuardrail):
                raise ConfigurationError(
                    f"agent {self.name!r}: input guardrail {check!r} is invalid: expected an "
                    "InputGuardrail (voxwire.agents.input_guardrail)"
                )
        object.__setattr__(self, "input_guardrails", tuple(self.input_guardrails))
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "handoffs", tuple(self.handoffs))
        object.__setattr__(self, "output_guardrails", tuple(self.output_guardrails))


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


async def resolve_agent(agent: RealtimeAgent) -> ResolvedAgent:
    """Settle everything dynamic about ``agent`` (see the module docstring). Raises what the
    agent's functions raise, or :class:`~voxwire.exceptions.ConfigurationError` (a bad value,
    two tools with one name); nothing is changed anywhere either way."""
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
