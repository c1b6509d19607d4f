"""The session's agent: which one is active, and switching it — ``update_agent``, handoffs, and
the retry after an output guardrail tripped.

:class:`AgentSwitcher` holds the active agent as resolved (instructions, tools, handoffs,
guardrails settled) and the agent lock (one switch at a time). A switch sends the agent's
``session.update`` and happens when the server acknowledges it (``agent_end`` /
``agent_start``); a rejection leaves the previous agent and raises. Whether an update was
acknowledged is the protocol core's to say (``RealtimeProtocol.updates_settled()``);
:class:`UpdateWaiters` turns those answers into awaitable results by ``event_id``.

Once the conversation holds assistant audio the voice is not changed any more: the Realtime API
refuses a voice change after that, and the listener must keep hearing the same voice (also on a
new server session after a reconnection: :meth:`AgentSwitcher.resume_config`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

import msgspec

import voxwire.asyncio.events as ev
from voxwire.agents.agent import (
    RealtimeAgent,
    ResolvedAgent,
    ResolvedHandoff,
    agent_session_config,
    agent_update_config,
    resolve_agent,
)
from voxwire.agents.input_guardrail import ResponseHold, holds
from voxwire.asyncio.agents.mcp_local import LocalMcp, McpConnection
from voxwire.asyncio.observability.tracing import TracingSetting
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import server_events as se
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.updates import UpdateRecord, UpdateState

__all__ = ["AgentSwitcher", "SwitchHost", "UpdateWaiters"]


class UpdateWaiters:
    """Futures for ``session.update`` events by ``event_id``, resolved from the protocol core's
    settled records: acknowledged → result, rejected → :class:`ConfigurationError` (``what``
    names what was rejected), lost with the connection → the exception :meth:`fail_all` got."""

    def __init__(self) -> None:
        self._waiting: dict[str, tuple[asyncio.Future[None], str]] = {}

    def expect(self, event_id: str, what: str) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[event_id] = (future, what)
        return future

    def forget(self, event_id: str) -> None:
        self._waiting.pop(event_id, None)

    def settled(self, records: list[UpdateRecord]) -> None:
        for record in records:
            waiting = self._waiting.pop(record.event_id, None)
            if waiting is None or waiting[0].done():
                continue
            future, what = waiting
            if record.state is UpdateState.ACKNOWLEDGED:
                future.set_result(None)
            elif record.state is UpdateState.REJECTED:
                future.set_exception(
                    ConfigurationError(f"the server rejected {what}: {record.error_message}")
                )

    def fail_all(self, exc: BaseException) -> None:
        for future, _ in self._waiting.values():
            if not future.done():
                future.set_exception(exc)
        self._waiting.clear()


class SwitchHost(Protocol):
    """What the switcher needs of the session."""

    def emit(self, event: ev.SessionEvent) -> None: ...

    def require_open(self) -> None:
        """Raise if nothing can be sent now."""

    def is_open(self) -> bool: ...

    async def send_update(self, config: SessionConfig, what: str) -> None:
        """Send an agent's ``session.update`` and wait until the server answers it (raises
        :class:`ConfigurationError` naming ``what`` when it rejects it)."""

    def interrupt(self) -> None:
        """Cut the response in progress as an interruption (cancel, stop playback, truncate)."""

    def send_feedback(self, text: str) -> None:
        """Queue a system message and the gated ``guardrail`` response after it."""

    def handoff_span(self, source: str, target: str) -> contextlib.AbstractContextManager[Any]: ...

    def session_config(self) -> SessionConfig | None:
        """The configuration the server confirmed last."""


class SwitchOptions(Protocol):
    """What the switcher reads of the session's options (:class:`~voxwire.asyncio.options.
    SessionOptions`)."""

    @property
    def agent(self) -> RealtimeAgent | None: ...

    @property
    def base_config(self) -> SessionConfig: ...

    @property
    def tracing(self) -> TracingSetting: ...

    def feedback_for(self, guardrails: Sequence[str]) -> str: ...

    @property
    def mcp_connections(self) -> Sequence[McpConnection]:
        """The application's connected MCP servers, shared with other sessions."""

    @property
    def false_interruption(self) -> object | None:
        """Set: the session decides which spoken turns are answered (asyncio/audio/recovery.py)."""


class AgentSwitcher:
    """The active agent and every way it changes (see the module docstring)."""

    server_event_types: Final = frozenset(
        {se.ResponseOutputAudioDelta, se.InputAudioBufferSpeechStarted}
    )

    def __init__(self, options: SwitchOptions, host: SwitchHost) -> None:
        self.agent: RealtimeAgent | None = options.agent
        self.resolved: ResolvedAgent | None = None
        self.assistant_audio = False
        """The conversation holds assistant audio: the voice can no longer change."""
        self._options = options
        self._host = host
        self._lock: asyncio.Lock | None = None
        self.hold = ResponseHold(options.base_config)
        """``create_response`` held off on the wire while the agent has input guardrails."""
        self.mcp = LocalMcp(host.emit, self.refresh_tools, options.mcp_connections)
        """The agents' local MCP servers (asyncio/agents/mcp_local.py)."""

    def active(self) -> ResolvedAgent | None:
        return self.resolved

    def _holding(self, agent: RealtimeAgent | None) -> bool:
        """Whether the session asks for the answers to spoken turns itself (``create_response``
        off on the wire): the agent has input guardrails, or false-interruption recovery is on
        (a cough the server's VAD took for a turn must not get a reply)."""
        return holds(agent) or self._options.false_interruption is not None

    async def resolve_initial(self) -> ResolvedAgent | None:
        """Everything dynamic about the first agent, settled before anything is sent for it."""
        self._lock = asyncio.Lock()
        return await self._resolve(self.agent) if self.agent is not None else None

    async def _resolve(self, agent: RealtimeAgent) -> ResolvedAgent:
        """``agent`` resolved with the tools of its local MCP servers (connected first)."""
        await self.mcp.connect(agent)
        return await resolve_agent(agent, self.mcp.tools(agent))

    async def refresh_tools(self) -> None:
        """A local MCP server's tools changed (listed again, or withdrawn): the active agent's
        tools go to the server again (no agent events: the agent stays)."""
        if self._lock is None or self.agent is None or not self._host.is_open():
            return
        async with self._lock:
            resolved = await resolve_agent(self.agent, self.mcp.tools(self.agent))
            await self._apply(resolved, announce=False)

    async def aclose(self) -> None:
        """Close the local MCP servers (after the tool calls were cancelled)."""
        await self.mcp.aclose()

    def started(self, resolved: ResolvedAgent | None) -> None:
        """The server accepted the first configuration."""
        if resolved is not None:
            self.resolved = resolved
            self._host.emit(ev.AgentStartEvent(agent=resolved.agent))

    def ended(self) -> ev.AgentEndEvent | None:
        return ev.AgentEndEvent(agent=self.resolved.agent) if self.resolved is not None else None

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        if isinstance(event, se.ResponseOutputAudioDelta):
            self.assistant_audio = True
        else:
            self.mcp.on_server_event(event)

    # --- configurations ---------------------------------------------------------------------------

    def initial_config(self, resolved: ResolvedAgent | None) -> SessionConfig:
        """The first ``session.update`` of a server session: the agent's configuration and the
        tracing setting (sent once per server session: again after a reconnection)."""
        config = agent_session_config(self._options.base_config, resolved)
        if self._options.tracing is not msgspec.UNSET:
            config = msgspec.structs.replace(config, tracing=self._options.tracing)
        agent = resolved.agent if resolved is not None else None
        return self.hold.first_config(config, holding=self._holding(agent))

    def application_update(self, config: SessionConfig | Mapping[str, Any]) -> SessionConfig:
        """An application's ``session.update`` as it goes on the wire (``create_response``
        held off while the agent has input guardrails)."""
        if not isinstance(config, SessionConfig):
            config = SessionConfig.from_mapping(config)
        return self.hold.application_update(config, holding=self._holding(self.agent))

    def resume_config(self, lost: SessionConfig | None) -> SessionConfig:
        """The first ``session.update`` of a resumed server session: as at ``connect()``, except
        that once the conversation holds assistant audio the voice stays the one the ``lost``
        server spoke with — an agent change since then left the voice out (the API refuses
        it), so the listener heard no change and must hear none now."""
        config = self.initial_config(self.resolved)
        if not self.assistant_audio or lost is None:
            return config
        voice = lost.audio.output.voice if lost.audio and lost.audio.output else msgspec.UNSET
        if voice is msgspec.UNSET:
            return config
        wire = config.to_wire()
        wire.setdefault("audio", {}).setdefault("output", {})["voice"] = msgspec.to_builtins(voice)
        return SessionConfig.from_mapping(wire)

    # --- switching --------------------------------------------------------------------------------

    async def update_agent(self, agent: RealtimeAgent) -> None:
        """``RealtimeSession.update_agent`` (documented there)."""
        self._host.require_open()
        if not isinstance(agent, RealtimeAgent):
            raise ConfigurationError(f"update_agent({agent!r}): expected a RealtimeAgent")
        assert self._lock is not None
        async with self._lock:
            resolved = await self._resolve(agent)
            self._host.require_open()
            await self._apply(resolved)

    async def hand_off(self, call_id: str, target: ResolvedHandoff, source: ResolvedAgent) -> None:
        """The model called a transfer tool (from a tool task): switch like update_agent."""
        assert self._lock is not None
        with self._host.handoff_span(source.agent.name, target.target.name):
            async with self._lock:
                await target.handoff.run_on_handoff(target.target)
                resolved = await self._resolve(target.target)
                await self._apply(resolved, handoff=(source.agent, call_id))

    async def _apply(
        self,
        resolved: ResolvedAgent,
        *,
        handoff: tuple[RealtimeAgent, str] | None = None,
        announce: bool = True,
    ) -> None:
        """Send the update for ``resolved``, wait for the server to accept it, then switch."""
        config = agent_update_config(
            self._options.base_config, resolved, voice_locked=self.assistant_audio
        )
        config = self.hold.switch_config(
            config,
            holding=self._holding(resolved.agent),
            was_holding=self._holding(self.agent),
            current=self._host.session_config(),
        )
        await self._host.send_update(config, "the agent's configuration")
        previous = self.resolved
        self.resolved = resolved
        self.agent = resolved.agent
        if not announce:
            return
        emit = self._host.emit
        if handoff is not None:
            emit(
                ev.HandoffEvent(from_agent=handoff[0], to_agent=resolved.agent, call_id=handoff[1])
            )
        if previous is not None:
            emit(ev.AgentEndEvent(agent=previous.agent))
        emit(ev.AgentStartEvent(agent=resolved.agent))

    def trip(self, tripped: ev.GuardrailTrippedEvent) -> None:
        """Output guardrails tripped (from a guardrail task; synchronous so that the response is
        marked interrupted before anything awaits): cut it, report, tell the model, retry."""
        if not self._host.is_open():
            return
        self._host.interrupt()
        self._host.emit(tripped)
        self._host.send_feedback(self._options.feedback_for(tripped.guardrails))
