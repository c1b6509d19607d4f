"""What the application tells a :class:`~voxwire.asyncio.RealtimeSession` to do besides
sending: switch its agent, answer tool approvals, and — on a phone call — transfer or end the
call.

A mixin of ``RealtimeSession`` (as ``reading.py`` and ``sending.py`` are): the public methods are
the session's. Call control goes through a :class:`~voxwire.asyncio.connection.calls.CallControl`
the application gives (``RealtimeSession(call_id=..., call_control=SipCalls())``): ``asyncio/``
does not import the telephony package above it, nor its HTTP client;
:class:`voxwire.telephony.SipCalls` is one.
"""

from __future__ import annotations

from voxwire.agents.agent import RealtimeAgent
from voxwire.asyncio.agents.mcp import McpRunner
from voxwire.asyncio.agents.switching import AgentSwitcher
from voxwire.asyncio.agents.tools import ToolRunner
from voxwire.asyncio.connection.calls import CallControl
from voxwire.asyncio.options import SessionOptions
from voxwire.exceptions import InvalidState

__all__ = ["SessionControl"]


class SessionControl:
    """The controlling part of :class:`~voxwire.asyncio.RealtimeSession` (module docstring)."""

    # Set up by RealtimeSession.
    _options: SessionOptions
    _switcher: AgentSwitcher
    _tools: ToolRunner
    _mcp: McpRunner

    async def update_agent(self, agent: RealtimeAgent) -> None:
        """Make ``agent`` the session's agent: its instructions, tools, handoffs, guardrails and
        (while the conversation holds no assistant audio — the Realtime API refuses a voice
        change after that) its voice.

        Everything dynamic is resolved first (instructions, ``is_enabled``, handoff targets);
        if that raises, nothing changed and the exception is raised here. Then the
        ``session.update`` goes out, and the switch happens when the server acknowledges it
        (``agent_end`` / ``agent_start``); if the server rejects it,
        :class:`~voxwire.exceptions.ConfigurationError` is raised and the previous agent stays.
        Calls already made keep running with the agent they were made to.
        """
        await self._switcher.update_agent(agent)

    def approve_tool_call(self, call_id: str, *, always: bool = False) -> None:
        """Let the call of a ``tool_approval_requested`` (or ``mcp_approval_requested``) event
        run. ``always``: also approve later calls of the same tool for the rest of the session.
        Raises :class:`~voxwire.exceptions.InvalidState` if no call ``call_id`` is waiting."""
        if not self._mcp.answer_if_waiting(call_id, True, always=always):
            self._tools.approve(call_id, always=always)

    def reject_tool_call(
        self, call_id: str, *, message: str | None = None, always: bool = False
    ) -> None:
        """Refuse the call of a ``tool_approval_requested`` event: the tool does not run and the
        model gets ``message`` (default: the session's ``tool_rejection_message``) as the
        output (an MCP request's ``reason``). ``always``: refuse later calls of it too."""
        if not self._mcp.answer_if_waiting(call_id, False, reason=message, always=always):
            self._tools.reject(call_id, message=message, always=always)

    # --- the phone call (SIP) ---------------------------------------------------------------------

    async def refer(self, target_uri: str) -> None:
        """Transfer the session's phone call (SIP REFER) to ``target_uri`` (``tel:+1…`` or
        ``sip:…@…``). Needs ``call_id`` and ``call_control``; the call's websocket ends when the
        transfer happens (a ``close`` event follows)."""
        call_id, control = self._call()
        await control.refer(call_id, target_uri)

    async def hangup(self) -> None:
        """End the session's phone call (needs ``call_id`` and ``call_control``)."""
        call_id, control = self._call()
        await control.hangup(call_id)

    def _call(self) -> tuple[str, CallControl]:
        call_id, control = self._options.call_id, self._options.call_control
        if call_id is None or control is None:
            raise InvalidState(
                "this session controls no phone call: give RealtimeSession(call_id=..., "
                "call_control=SipCalls()) (voxwire.telephony) to transfer or hang up"
            )
        return call_id, control
