"""What the application reads of a :class:`~voxwire.asyncio.RealtimeSession`: its state, the
agent, the protocol core's view, history, agent and user state, tool calls, metrics, tracing.

A mixin of ``RealtimeSession``, read-only: the properties are the session's; this module keeps
``session.py`` to its lifecycle, parts and pump (as ``sending.py`` does for what it sends).
"""

from __future__ import annotations

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent
from voxwire.asyncio.agents.mcp import McpRunner
from voxwire.asyncio.agents.switching import AgentSwitcher
from voxwire.asyncio.agents.tools import ToolRunner
from voxwire.asyncio.audio.microphone import Microphone
from voxwire.asyncio.connection.dial import Dialer
from voxwire.asyncio.connection.health import EndpointStatus
from voxwire.asyncio.events.history import HistoryItem, build_history
from voxwire.asyncio.events.lifecycle import SessionState
from voxwire.asyncio.events.mcp import McpToolListing
from voxwire.asyncio.events.queue import EventQueue
from voxwire.asyncio.events.translate import EventTranslator
from voxwire.asyncio.observability.metrics import MetricsRecorder, SessionMetrics
from voxwire.asyncio.observability.tracing import SessionTracer
from voxwire.asyncio.options import SessionOptions
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.protocol import RealtimeProtocol

__all__ = ["SessionReading"]


class SessionReading:
    """The reading half of :class:`~voxwire.asyncio.RealtimeSession` (see the module docstring)."""

    # Set up by RealtimeSession.
    _state: SessionState
    _url: str
    _options: SessionOptions
    _protocol: RealtimeProtocol
    _switcher: AgentSwitcher
    _translator: EventTranslator
    _queue: EventQueue[ev.SessionEvent]
    _close_event: ev.CloseEvent | None
    _muted: bool
    _tools: ToolRunner
    _mcp: McpRunner
    _background: OwnedTasks
    _metrics: MetricsRecorder
    _tracer: SessionTracer
    _microphone: Microphone | None
    _dialer: Dialer

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def url(self) -> str:
        """The URL connected to (the first that worked, once connected; it holds no
        credentials)."""
        return self._url

    @property
    def endpoints(self) -> tuple[EndpointStatus, ...]:
        """Every endpoint (``url``, then ``fallback_urls``) with its health: an endpoint that
        failed to open is tried after the others and probed in the background until it answers
        (:mod:`voxwire.asyncio.connection.health`)."""
        return self._dialer.endpoints

    @property
    def agent(self) -> RealtimeAgent | None:
        return self._switcher.agent

    @property
    def protocol(self) -> RealtimeProtocol:
        """The protocol core: the server's session, conversation, responses and audio ledger
        as acknowledged so far. Read it; send through the session."""
        return self._protocol

    @property
    def config(self) -> SessionConfig | None:
        """The session configuration the server confirmed last, as the application configured
        it: ``protocol.session`` shows the wire (``create_response: false`` while the agent has
        input guardrails, docs/agents.md), this shows the application's own setting."""
        return self._switcher.hold.view(self._protocol.session)

    @property
    def options(self) -> SessionOptions:
        """The constructor's arguments, as checked (frozen)."""
        return self._options

    @property
    def history(self) -> list[HistoryItem]:
        """The conversation as the server holds it, in server order (see
        :mod:`voxwire.asyncio.events.history`)."""
        return build_history(self._protocol.conversation)

    @property
    def available_mcp_tools(self) -> tuple[McpToolListing, ...]:
        """The hosted MCP tools the model can call now: the tools each configured MCP server
        listed (``mcp_tools_changed`` announces changes; see :mod:`voxwire.asyncio.agents.mcp`)."""
        return self._mcp.available_tools

    @property
    def agent_state(self) -> ev.AgentState:
        return self._translator.agent_state

    @property
    def user_state(self) -> ev.UserState:
        return self._translator.user_state

    @property
    def muted(self) -> bool:
        """``send_audio`` drops audio instead of sending it."""
        return self._muted

    @property
    def dropped_events(self) -> int:
        """Events dropped because the queue was full (see :mod:`voxwire.asyncio.events.queue`)."""
        return self._queue.dropped

    @property
    def close_event(self) -> ev.CloseEvent | None:
        """Why the session ended, once it has."""
        return self._close_event

    @property
    def pending_tool_approvals(self) -> tuple[str, ...]:
        """Call ids of tool calls waiting for :meth:`approve_tool_call` /
        :meth:`reject_tool_call`."""
        return self._tools.pending_approvals

    @property
    def tool_calls_in_progress(self) -> int:
        """Function calls the session runs whose outputs and follow-up are not all done yet
        (from the call to ``function_tools_executed``)."""
        return self._tools.running

    @property
    def background_tasks(self) -> int:
        """Tool calls and guardrail checks running now (each owned by the session)."""
        return len(self._background)

    @property
    def metrics(self) -> SessionMetrics:
        """Totals so far: responses, interruptions, tokens, latency statistics (see
        :mod:`voxwire.asyncio.observability.metrics`)."""
        return self._metrics.snapshot()

    @property
    def tracer(self) -> SessionTracer:
        """The session's OpenTelemetry spans; ``tool_span`` / ``handoff_span`` for the code that
        runs tools and handoffs (see :mod:`voxwire.asyncio.observability.tracing`)."""
        return self._tracer

    @property
    def microphone(self) -> Microphone | None:
        """The session's audio input (``audio_input=``), if it has one: its ``source``, the
        current ``pipeline`` (frames sent, muted) and ``barge_ins`` (local interruptions)."""
        return self._microphone
