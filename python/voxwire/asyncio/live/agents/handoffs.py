"""Handoffs over GPT-Live, where the API allows them (Responses delegation).

A handoff in voxwire is a transfer tool (``transfer_to_<agent>``) the model calls. Over Live the
*Responses backend* calls tools, so the transfer tools are declared to it beside the agent's
function tools. When the backend calls one, :class:`LiveHandoffs` switches the session to the
new agent as far as Live lets a running session change:

* its **tools**: ``session.update`` of ``delegation.responses.tools`` (the new agent's function
  tools and transfer tools), waited for (``session.updated``) — ``SessionUpdateConfig`` lets
  the Responses settings change, not the owner;
* its **instructions**: ``session.instructions.append`` ("You are now <agent>: ..."), which the
  reference says stays in the conversation through compaction and goes to later delegations.
  The startup instructions are immutable, so they stay too: the new ones are appended after
  them, limited to 500 tokens (a longer text is refused with :class:`ConfigurationError`);
* its **voice**: impossible — the voice is fixed at startup. The session keeps its voice; a
  target agent with another voice is reported (an ``error`` event, ``code="voice_fixed"``,
  recoverable) and the handoff goes on;
* the agent's output guardrails and ``on_handoff`` apply as in a Realtime session; the session
  emits :class:`~voxwire.asyncio.events.HandoffEvent`, ``agent_end`` and ``agent_start``.

With client or Decisions delegation no tool is called, so no handoff can happen: an agent with
handoffs is refused there (:func:`voxwire.asyncio.live.config.start_config`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

import msgspec

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent, ResolvedAgent, ResolvedHandoff, resolve_agent
from voxwire.agents.batch import CallOutcome
from voxwire.asyncio.live.replies import Replies
from voxwire.exceptions import ConfigurationError
from voxwire.live import LiveProtocol
from voxwire.protocol import FunctionTool as DeclaredTool

__all__ = ["LiveHandoffs", "function_tools_only", "handoff_instructions", "tool_spec"]

log = logging.getLogger("voxwire.live")

#: ``session.instructions.append``: "limited to 500 tokens"; about 4 characters a token.
MAX_APPENDED_CHARS: Final = 500 * 4


class HandoffHost(Protocol):
    """What a handoff needs of the session."""

    agent: RealtimeAgent

    @property
    def protocol(self) -> LiveProtocol: ...

    @property
    def replies(self) -> Replies: ...

    def emit(self, event: Any) -> None: ...

    async def flush(self) -> None: ...


def handoff_instructions(agent: RealtimeAgent, instructions: str | None) -> str:
    """What ``session.instructions.append`` says at a handoff to ``agent``."""
    text = f"You are now {agent.name}; the earlier role's instructions no longer apply."
    if instructions:
        text += f" Follow these instructions from now on: {instructions}"
    if len(text) > MAX_APPENDED_CHARS:
        raise ConfigurationError(
            f"agent {agent.name!r}: its instructions are too long to hand off over Live "
            f"({len(text):,} characters; session.instructions.append takes at most 500 tokens, "
            f"about {MAX_APPENDED_CHARS:,} characters): shorten them, or put the detail in the "
            "backend instructions"
        )
    return text


def function_tools_only(resolved: ResolvedAgent) -> None:
    """Over Live only tools the session runs (and transfer tools) can be delegated."""
    if resolved.declared or len(resolved.declarations) != len(resolved.tools) + len(
        resolved.handoffs
    ):
        raise ConfigurationError(
            f"agent {resolved.agent.name!r}: over GPT-Live only function tools the session runs "
            "(voxwire.agents.function_tool) are delegated; hosted MCP and declared-only tools "
            "do not carry over yet"
        )


def tool_spec(declaration: object) -> dict[str, Any]:
    """A declared function tool as ``delegation.responses.tools`` takes it."""
    assert isinstance(declaration, DeclaredTool)  # checked first: function tools only
    wire: dict[str, Any] = msgspec.to_builtins(declaration)
    return {
        key: value
        for key, value in wire.items()
        if key in ("type", "name", "description", "parameters")
    }


class LiveHandoffs:
    """Carries out the Responses backend's calls of transfer tools."""

    def __init__(
        self,
        host: HandoffHost,
        voice: str | None,
        resolve: Callable[[RealtimeAgent], Awaitable[ResolvedAgent]] = resolve_agent,
    ) -> None:
        self._host = host
        self._resolve = resolve  # the session's: the target's local MCP servers connected
        self._voice = voice  # the session's, fixed at startup (None: the server's default)

    async def hand_off(
        self, call_id: str, handoff: ResolvedHandoff, source: ResolvedAgent
    ) -> tuple[CallOutcome, ResolvedAgent | None]:
        """Switch to ``handoff``'s target; returns the call's outcome (an error outcome, and no
        switch, if the target cannot run over Live or the server refuses the update) and the
        new resolved agent (``None`` if nothing changed)."""
        target = handoff.target
        try:
            await handoff.handoff.run_on_handoff(target)
            resolved = await self._resolve(target)
            function_tools_only(resolved)
            appended = handoff_instructions(target, resolved.instructions)
            await self._switch(resolved, appended)
        except Exception as exc:
            self._host.emit(
                ev.ErrorEvent(
                    message=f"the handoff from {source.agent.name!r} to {target.name!r} "
                    f"failed: {exc}",
                    source="agent",
                    exception=exc,
                )
            )
            text = f"The transfer to {target.name} failed: {exc}. Carry on yourself."
            return _outcome(call_id, handoff.tool_name, text, error=True), None
        self._report(source.agent, resolved.agent, call_id)
        output = '{"assistant": "' + target.name.replace('"', "'") + '"}'
        return _outcome(call_id, handoff.tool_name, output, error=False), resolved

    async def _switch(self, resolved: ResolvedAgent, appended: str) -> None:
        protocol = self._host.protocol
        tools = [tool_spec(declaration) for declaration in resolved.declarations]
        update = {"delegation": {"type": "responses", "responses": {"tools": tools}}}
        event_id = protocol.send_session_update(update)
        await self._host.replies.wait(event_id, self._host.flush)
        protocol.send_instructions(appended)
        await self._host.flush()

    def _report(self, before: RealtimeAgent, after: RealtimeAgent, call_id: str) -> None:
        if after.voice and after.voice != self._voice:
            message = (
                f"agent {after.name!r} speaks with the session's voice "
                f"({self._voice or 'the server default'}), not {after.voice!r}: GPT-Live fixes "
                "the voice at startup"
            )
            log.warning(message)
            self._host.emit(ev.ErrorEvent(message=message, source="agent", code="voice_fixed"))
        self._host.agent = after
        self._host.emit(ev.HandoffEvent(from_agent=before, to_agent=after, call_id=call_id))
        self._host.emit(ev.AgentEndEvent(agent=before))
        self._host.emit(ev.AgentStartEvent(agent=after))


def _outcome(call_id: str, name: str, output: str, *, error: bool) -> CallOutcome:
    return CallOutcome(call_id=call_id, name=name, arguments="{}", output=output, is_error=error)
