"""Handoffs: an agent passes the conversation to another agent.

A realtime handoff keeps the connection and the conversation: the session offers the model a
``transfer_to_<name>`` function tool for each handoff of the active agent; when the model calls
it, the session switches agents in place (``session.update`` with the new agent's
instructions, voice and tools) and the new agent answers. See docs/agents.md.

Agents that hand back to each other cannot both name the other at construction (agents are
frozen); give a function returning the agent: ``handoff(lambda: triage)``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from voxwire.exceptions import ConfigurationError

if TYPE_CHECKING:
    from voxwire.agents.agent import RealtimeAgent
    from voxwire.agents.tool import EnabledPolicy

__all__ = ["Handoff", "HandoffTarget", "handoff", "transfer_tool_name"]

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
    from voxwire.agents.agent import RealtimeAgent

    return isinstance(value, RealtimeAgent)
