"""``RealtimeAgent``: the declaration a session turns into its ``session.update``.

An agent is data: a name, instructions (text, or a function of the agent that returns text —
possibly a coroutine, resolved by the session when it starts), a voice and the tools it offers.
:func:`agent_session_config` merges it over the session's base configuration; the agent wins
for the fields it sets, since switching agents must switch them.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import msgspec

from voxwire.exceptions import ConfigurationError
from voxwire.protocol.config import SessionConfig, Tool

__all__ = ["Instructions", "RealtimeAgent", "agent_session_config", "resolve_instructions"]

#: Fixed text, or a function of the agent returning text (or an awaitable of text).
Instructions: TypeAlias = "str | Callable[[RealtimeAgent], str | Awaitable[str]]"


@dataclass(frozen=True, kw_only=True)
class RealtimeAgent:
    """A realtime agent, as declared: ``name`` (for events and logs), ``instructions``,
    ``voice`` (``None``: the session's or the server's default) and ``tools``
    (:class:`~voxwire.protocol.FunctionTool` / :class:`~voxwire.protocol.McpTool`
    declarations; running them belongs to the tools layer)."""

    name: str
    instructions: Instructions | None = None
    voice: str | None = None
    tools: Sequence[Tool] = field(default_factory=tuple)

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
        object.__setattr__(self, "tools", tuple(self.tools))


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


def agent_session_config(
    base: SessionConfig | Mapping[str, Any] | None,
    agent: RealtimeAgent | None,
    *,
    instructions: str | None = None,
) -> SessionConfig:
    """``base`` with the agent's settings applied: ``instructions`` (already resolved, see
    :func:`resolve_instructions`), ``audio.output.voice`` and ``tools``.

    Raises :class:`~voxwire.exceptions.ConfigurationError` for a bad base configuration.
    """
    config = (
        base
        if isinstance(base, SessionConfig)
        else SessionConfig.from_mapping(base if base is not None else {})
    )
    if agent is None:
        return config
    wire = config.to_wire()
    if instructions is not None:
        wire["instructions"] = instructions
    if agent.voice is not None:
        audio = wire.setdefault("audio", {})
        audio.setdefault("output", {})["voice"] = agent.voice
    if agent.tools:
        wire["tools"] = [msgspec.to_builtins(tool) for tool in agent.tools]
    return SessionConfig.from_mapping(wire)
