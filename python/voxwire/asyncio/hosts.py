"""The session as each of its parts sees it: narrow faces over :class:`RealtimeSession`'s
internals, one per part (the agent switcher, the reconnector, the tool and guardrail runners,
the microphone).

Each part declares what it needs as a ``typing.Protocol`` in its own module (``SwitchHost``,
``ReconnectHost``, ``ToolHost``, ``GuardrailHost``, ``MicrophoneHost``); these classes are the
session's answers, kept here so that ``session.py`` holds the public API and the pump. They
belong to the session: they read and change its private state, and nothing else should.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import voxwire.asyncio.events as ev
from voxwire.agents.agent import ResolvedAgent, ResolvedHandoff
from voxwire.agents.input_guardrail import holds, turn_detection_on
from voxwire.asyncio.agents.away import UserAwayWatch
from voxwire.asyncio.agents.mcp import McpRunner
from voxwire.asyncio.agents.switching import AgentSwitcher, UpdateWaiters
from voxwire.asyncio.agents.tools import ToolRunner
from voxwire.asyncio.audio.interruption import Interrupter
from voxwire.asyncio.audio.playback import PlaybackMonitor
from voxwire.asyncio.audio.recovery import InterruptionRecovery
from voxwire.asyncio.connection.dial import Dialer
from voxwire.asyncio.connection.pump import Pump
from voxwire.asyncio.connection.reconnect import Reconnector, Resumed
from voxwire.asyncio.connection.renewal import Renewer
from voxwire.asyncio.connection.transport import Transport
from voxwire.asyncio.events.history import HistoryItem
from voxwire.asyncio.events.lifecycle import SessionState
from voxwire.asyncio.events.queue import EventQueue
from voxwire.asyncio.events.translate import EventTranslator
from voxwire.asyncio.observability.metrics import UsageWiring
from voxwire.asyncio.observability.tracing import SessionTracer
from voxwire.asyncio.observability.usage import session_usage_wiring
from voxwire.asyncio.options import SessionOptions
from voxwire.asyncio.persistence.recording import Persistence
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.protocol import server_events as se
from voxwire.protocol.client_events import ResponseCreateParams
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.ids import IdFactory
from voxwire.protocol.items import function_call_output, system_message
from voxwire.protocol.protocol import RealtimeProtocol
from voxwire.protocol.say import say_instructions

__all__ = [
    "AgentHost",
    "InputHost",
    "McpSessionHost",
    "ReconnectHost",
    "RenewHost",
    "SessionInside",
    "SwitchHost",
    "away_watch",
    "mcp_runner",
    "usage_wiring",
]


class SessionInside(Protocol):
    """The session's internals the hosts read and change. :class:`RealtimeSession` is the one
    implementation; declaring them here keeps imports pointing one way (the session imports
    the hosts, never the other way round)."""

    _state: SessionState
    _url: str
    _options: SessionOptions
    _queue: EventQueue[ev.SessionEvent]
    _ids: IdFactory
    _protocol: RealtimeProtocol
    _waiters: UpdateWaiters
    _pump: Pump
    _dialer: Dialer
    _switcher: AgentSwitcher
    _tracer: SessionTracer
    _playback: PlaybackMonitor | None
    _interrupter: Interrupter
    _translator: EventTranslator
    _reconnector: Reconnector | None
    _renewer: Renewer | None
    _background: OwnedTasks
    _persistence: Persistence
    _tools: ToolRunner
    _mcp: McpRunner
    _recovery: InterruptionRecovery | None

    @property
    def state(self) -> SessionState: ...

    @property
    def history(self) -> list[HistoryItem]: ...

    def _dispatch(self, events: Iterable[se.ReceivedEvent]) -> None: ...

    def _new_protocol(self) -> RealtimeProtocol: ...

    def _require_open(self) -> None: ...

    def _append_audio(self, data: bytes) -> None: ...

    def _request_response(
        self, params: ResponseCreateParams | None, source: ev.SpeechSource
    ) -> None: ...


class SwitchHost:
    """The session as the agent switcher sees it (asyncio/agents/switching.py)."""

    def __init__(self, session: SessionInside) -> None:
        self._session = session
        self.require_open = session._require_open

    def emit(self, event: ev.SessionEvent) -> None:
        if isinstance(event, ev.AgentStartEvent):  # the persistence part records the agent
            self._session._persistence.agent_started(event.agent.name)
        self._session._queue.put(event)

    def is_open(self) -> bool:
        return self._session.state is SessionState.OPEN

    async def send_update(self, config: SessionConfig, what: str) -> None:
        session = self._session
        event = session._protocol.send_session_update(config, origin="agent")
        assert event.event_id is not None
        ack = session._waiters.expect(event.event_id, what)
        try:
            await session._pump.flush()
            await ack
        finally:
            session._waiters.forget(event.event_id)

    def interrupt(self) -> None:
        self._session._interrupter.interrupt(None, cancel_response=True)

    def send_feedback(self, text: str) -> None:
        session = self._session
        session._protocol.send_item_create(system_message(text))
        session._request_response(None, "guardrail")

    def handoff_span(self, source: str, target: str) -> contextlib.AbstractContextManager[Any]:
        return self._session._tracer.handoff_span(source, target)

    def session_config(self) -> SessionConfig | None:
        return self._session._protocol.session


class ReconnectHost:
    """The session as the reconnector sees it (asyncio/connection/reconnect.py)."""

    def __init__(self, session: SessionInside) -> None:
        self._session = session
        self.emit = session._queue.put
        self.dispatch = session._dispatch
        self.open_connection = session._dialer.open
        self.new_protocol = session._new_protocol

    @property
    def protocol(self) -> RealtimeProtocol:
        return self._session._protocol

    def stop_playback(self) -> None:
        self._session._interrupter.after_connection_lost()

    def connection_gone(self, failure: BaseException) -> None:
        self._session._waiters.fail_all(failure)
        self._session._pump.discard()

    def resume_config(self) -> SessionConfig:
        return self._session._switcher.resume_config(self._session._protocol.session)

    def swap_in(self, resumed: Resumed) -> bool:
        """Swap the resumed connection in (synchronously: nothing runs in between)."""
        session = self._session
        if session.state is not SessionState.RECONNECTING:  # close() came first
            return False
        self.install(resumed)
        return True

    def install(self, resumed: Resumed) -> None:
        session = self._session
        session._protocol = resumed.protocol
        session._translator.connection_replaced(resumed.protocol)
        session._pump.transport = resumed.transport
        session._url = resumed.url
        session._pump.discard()
        session._state = SessionState.OPEN
        if session._reconnector is not None:
            session._reconnector.server_session_replaced()

    def connection_replaced(self) -> None:
        self._session._tools.connection_replaced()
        self._session._mcp.connection_replaced()
        if self._session._renewer is not None:
            self._session._renewer.server_session_started()

    def now(self) -> float:
        return time.monotonic()

    def user_state(self) -> ev.UserState:
        return self._session._translator.user_state

    def history(self) -> tuple[HistoryItem, ...]:
        return tuple(self._session.history)

    @property
    def restore_timeout_s(self) -> float:
        return self._session._options.open_timeout_s


class RenewHost(ReconnectHost):
    """The session as the renewer sees it (asyncio/connection/renewal.py): the reconnector's face,
    and the connection in use, its turn state and its sending."""

    def __init__(self, session: SessionInside) -> None:
        super().__init__(session)
        self.flush = session._pump.flush

    @property
    def transport(self) -> Transport | None:
        return self._session._pump.transport

    def is_open(self) -> bool:
        return self._session.state is SessionState.OPEN

    def playing(self) -> bool:
        playback = self._session._playback
        return playback is not None and playback.playing


class AgentHost:
    """The session as the tool and guardrail runners see it (asyncio/agents/tools.py,
    asyncio/agents/guardrails.py): a narrow face over its internals."""

    def __init__(self, session: SessionInside) -> None:
        self._session = session
        self.emit = session._queue.put
        self.flush = session._pump.flush

    def send_output(self, call_id: str, output: str, item_id: str | None) -> tuple[str, str]:
        session = self._session
        session._require_open()
        event = session._protocol.send_item_create(
            function_call_output(call_id, output, id=item_id)
        )
        assert event.event_id is not None
        assert event.item.id is not None
        return event.event_id, event.item.id

    def request_response(self) -> None:
        self._session._request_response(None, "tool_response")

    def is_out_of_band(self, response_id: str) -> bool:
        return self._session._protocol.is_out_of_band(response_id)

    def tool_span(self, name: str, call_id: str) -> contextlib.AbstractContextManager[Any]:
        return self._session._tracer.tool_span(name, call_id)

    async def hand_off(self, call_id: str, handoff: ResolvedHandoff, source: ResolvedAgent) -> None:
        await self._session._switcher.hand_off(call_id, handoff, source)

    def trip(self, event: ev.GuardrailTrippedEvent) -> None:
        self._session._switcher.trip(event)

    # Tool context and progress (asyncio/agents/tool_execution.py), input guardrails
    # (asyncio/agents/input_guardrails.py).

    def history(self) -> tuple[Any, ...]:
        return tuple(self._session.history)

    async def send_progress(self, call_id: str, name: str, text: str, respond: bool) -> None:
        session = self._session
        if session.state is not SessionState.OPEN:
            return  # reconnecting or closing: the progress is dropped, the tool goes on
        note = f"Progress of the {name} tool call {call_id} (its result follows later): {text}"
        session._protocol.send_item_create(system_message(note))
        if respond:
            session._request_response(None, "tool_response")
        await session._pump.flush()

    def answer(self, item_id: str | None) -> None:
        recovery = self._session._recovery
        if recovery is not None and recovery.recovered(item_id):
            return  # a cough or a backchannel the session resumed over: not a turn
        self._session._request_response(None, "response")

    def refuse(self, text: str) -> None:
        params = ResponseCreateParams(instructions=say_instructions(text), tool_choice="none")
        self._session._request_response(params, "guardrail")

    def server_config(self) -> SessionConfig | None:
        return self._session._protocol.session


class InputHost:
    """The session as its microphone sees it (asyncio/audio/microphone.py)."""

    def __init__(self, session: SessionInside) -> None:
        self._session = session
        self.emit = session._queue.put
        self.flush = session._pump.flush

    def accepts_audio(self) -> bool:
        return self._session._state is SessionState.OPEN

    def send_frames(self, frames: list[bytes]) -> None:
        for frame in frames:
            self._session._append_audio(frame)

    def protocol(self) -> RealtimeProtocol:
        return self._session._protocol

    def agent_audible(self) -> bool:
        session = self._session
        return session._interrupter.playing or session._translator.agent_state == "speaking"

    def barge_in(self) -> None:
        """The user started speaking (local detector): interrupt what the agent says, if it
        says anything."""
        session = self._session
        if session._recovery is not None:
            if session._interrupter.playing:  # pause; the recovery resumes or cuts
                session._recovery.onset()
            return
        if session._interrupter.playing or session._protocol.responses_in_progress:
            session._interrupter.interrupt(None, cancel_response=True)


class RecoveryHost:
    """The session as false-interruption recovery sees it (asyncio/audio/recovery.py): it
    answers the spoken turns while recovery holds ``create_response`` off."""

    def __init__(self, session: SessionInside) -> None:
        self._session = session
        self.flush = session._pump.flush

    def answers_turns(self) -> bool:
        session = self._session
        return (
            turn_detection_on(session._protocol.session)
            and session._switcher.hold.wanted
            and not holds(session._switcher.agent)  # the input guardrails answer instead
        )

    def answer(self) -> None:
        self._session._request_response(None, "response")


class McpSessionHost:
    """The session as the hosted MCP runner sees it (asyncio/agents/mcp.py)."""

    def __init__(self, session: SessionInside) -> None:
        self._session = session
        self.emit = session._queue.put
        self.require_open = session._require_open
        self.flush = session._pump.flush
        self.tasks = session._background
        self.follow_up = session._options.mcp_follow_up

    def protocol(self) -> RealtimeProtocol:
        return self._session._protocol

    def request_response(self) -> None:
        self._session._request_response(None, "tool_response")

    def new_item_id(self) -> str:
        return self._session._ids("item")


def mcp_runner(session: SessionInside) -> McpRunner:
    """The hosted MCP runner of ``session``, over its :class:`McpSessionHost`."""
    host = McpSessionHost(session)
    return McpRunner(host, host.tasks, follow_up=host.follow_up)


def usage_wiring(
    session: Callable[[], SessionConfig | None],
    options: SessionOptions,
    emit: Callable[[ev.SessionEvent], None],
) -> UsageWiring:
    """Usage and cost: rates and model from the server's session, ``prices=`` over the
    published ones, a ``usage_updated`` event per response counted."""
    return session_usage_wiring(
        session,
        options.model,
        options.prices,
        lambda response, totals: emit(ev.UsageUpdatedEvent(response=response, totals=totals)),
    )


def away_watch(
    session: SessionInside, options: SessionOptions, emit: Callable[[ev.SessionEvent], None]
) -> UserAwayWatch | None:
    """The user-away watch (``user_away_timeout_s``; None: off), its hook given the session."""
    if options.user_away_timeout_s is None:
        return None
    return UserAwayWatch(
        session._translator,
        options.user_away_timeout_s,
        emit,
        session._background,
        lambda: session._switcher.agent,
        session,
    )
