"""The ``session.start`` a :class:`~voxwire.asyncio.live.LiveSession` sends for an agent."""

from __future__ import annotations

from typing import Any, Literal

from voxwire.agents.agent import ResolvedAgent
from voxwire.asyncio.live.agents.handoffs import function_tools_only, tool_spec
from voxwire.exceptions import ConfigurationError

__all__ = ["DelegationMode", "start_config"]

DelegationMode = Literal["responses", "client", "decisions"]


def start_config(
    resolved: ResolvedAgent,
    *,
    model: str,
    delegation: DelegationMode,
    backend_model: str,
    backend_instructions: str | None,
    decisions: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The session configuration for ``resolved`` (raises :class:`ConfigurationError` for what
    does not carry over to Live)."""
    agent = resolved.agent
    if resolved.handoffs and delegation != "responses":
        raise ConfigurationError(
            f"agent {agent.name!r} has handoffs: over GPT-Live a handoff is a transfer tool the "
            f"Responses backend calls (delegation='responses'); with {delegation} delegation no "
            "tool is called, so handoffs do not carry over"
        )
    function_tools_only(resolved)
    session: dict[str, Any] = {"model": model}
    if resolved.instructions:
        session["instructions"] = resolved.instructions
    if agent.voice:
        session["audio"] = {"output": {"voice": agent.voice}}
    if delegation in ("client", "decisions"):
        if resolved.tools:
            raise ConfigurationError(
                f"agent {agent.name!r} has function tools but delegation={delegation!r}: tools "
                "are run for the Responses backend (delegation='responses'); with client or "
                "Decisions delegation your own code does the work"
            )
        session["delegation"] = decisions if delegation == "decisions" else {"type": "client"}
        return session
    backend: dict[str, Any] = {
        "model": backend_model,
        "tools": [tool_spec(declaration) for declaration in resolved.declarations],
    }
    if backend_instructions:
        backend["instructions"] = backend_instructions
    session["delegation"] = {"type": "responses", "responses": backend}
    return session
