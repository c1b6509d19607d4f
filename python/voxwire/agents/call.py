"""One call of a tool, as approval policies, tool guardrails, messages and the tool's own
function see it (:class:`ToolCall`, :class:`ToolContext`), and :class:`AgentView`: the agent as
every declaration an agent holds (tools, guardrails, handoffs) refers to it.

Why a view: :class:`~voxwire.agents.RealtimeAgent` lists its tools and guardrails, so it is
declared above them (voxwire/agents/agent.py imports them) and they cannot import it back
without a cycle. They receive the agent at run time and hand it to the application's functions;
this read-only face says what they may count on. ``RealtimeAgent`` is the one implementation.
The application's functions that get the agent (guardrails, ``is_enabled``, ``on_handoff``)
are typed to take ``Any`` there, so that a function annotated ``agent: RealtimeAgent`` type
checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["AgentView", "TContext", "ToolCall", "ToolContext"]


class AgentView(Protocol):
    """What a declaration may read of the agent it belongs to (a
    :class:`~voxwire.agents.RealtimeAgent`)."""

    @property
    def name(self) -> str: ...

    @property
    def voice(self) -> str | None: ...

    @property
    def handoff_description(self) -> str | None: ...

    @property
    def tools(self) -> Sequence[object]: ...

    @property
    def handoffs(self) -> Sequence[object]: ...

    @property
    def output_guardrails(self) -> Sequence[object]: ...

    @property
    def input_guardrails(self) -> Sequence[object]: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """One call of a tool by the model, as approval policies and messages see it."""

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    """Parsed arguments (empty if they could not be parsed)."""
    raw_arguments: str
    agent: AgentView
    """The agent whose tools the model saw when it called (not necessarily the current one)."""


TContext = TypeVar("TContext")


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolContext(Generic[TContext]):
    """Passed to a tool function whose first parameter is annotated ``ToolContext`` (or
    ``ToolContext[MyContext]``: the type of the application's ``context``).

    ``context`` is the object given to the session (``RealtimeSession(context=...)``; ``None``
    if none was); ``history`` is ``session.history`` as it was when the call started — the
    :class:`voxwire.asyncio.HistoryItem` values, oldest first, the call itself included — enough
    to hand the conversation to another model and return its answer (delegation)."""

    call: ToolCall
    context: TContext = None  # type: ignore[assignment]  # None when the session got none
    history: tuple[Any, ...] = ()

    @property
    def call_id(self) -> str:
        return self.call.call_id

    @property
    def agent(self) -> AgentView:
        return self.call.agent
