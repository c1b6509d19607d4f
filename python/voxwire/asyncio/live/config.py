"""The ``session.start`` a :class:`~voxwire.asyncio.live.LiveSession` sends for an agent."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from voxwire.agents.agent import ResolvedAgent
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import FunctionTool as DeclaredTool

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
    if resolved.handoffs:
        raise ConfigurationError(
            f"agent {agent.name!r} has handoffs: GPT-Live runs one model per session with "
            "instructions fixed at startup, so handoffs do not carry over; start a new "
            "LiveSession with the other agent instead"
        )
    if resolved.declared or len(resolved.declarations) != len(resolved.tools):
        raise ConfigurationError(
            f"agent {agent.name!r}: over GPT-Live only function tools the session runs "
            "(voxwire.agents.function_tool) are delegated; hosted MCP and declared-only tools "
            "do not carry over yet"
        )
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
        "tools": [_tool(declaration) for declaration in resolved.declarations],
    }
    if backend_instructions:
        backend["instructions"] = backend_instructions
    session["delegation"] = {"type": "responses", "responses": backend}
    return session


def _tool(declaration: object) -> dict[str, Any]:
    assert isinstance(declaration, DeclaredTool)  # checked above: function tools only
    wire: dict[str, Any] = msgspec.to_builtins(declaration)
    return {
        key: value
        for key, value in wire.items()
        if key in ("type", "name", "description", "parameters")
    }
