"""``LiveSession``: a :class:`~voxwire.agents.RealtimeAgent` over OpenAI's GPT-Live API.

The same shape as :class:`~voxwire.asyncio.RealtimeSession` where the meaning carries over::

    async with LiveSession(agent, url=..., audio_output=speaker) as session:
        await session.send_audio(pcm)
        async for event in session:
            ...

What carries over: ``async with`` / ``connect`` / ``close``, ``async for event``,
``send_audio`` and ``audio_input=`` (a microphone or any audio source), an attached
:class:`~voxwire.audio.AudioOutput` (transcripts released as the listener hears them),
``history`` (what the user said and what the listener *heard*), ``metrics``, function tools
with their timeouts, approvals (``approve``/``reject``), tool guardrails and ``context``,
output and input guardrails (input: checked over the transcript as it arrives; the turn's
delegated work waits for the check), persistence (``store=``, ``snapshot()``,
:meth:`LiveSession.resume`: the Realtime stores and machinery), reconnection
(``reconnect=ReconnectPolicy(...)``: a fork of the stored session, ``live_reconnected``),
OpenTelemetry spans (``voxwire.live.*``), usage priced (``prices=``, over the published
table: ``live_usage`` and ``metrics.estimated_cost_usd``; docs/operations.md).

What does not (GPT-Live decides when to speak and hears interruptions itself): no truncation
(nothing is sent when the listener interrupts — the model heard it), no ``response.create``
gating, ``say``/``create_response``, ``send_message`` (Live takes speech; add context with
:meth:`add_context`), handoffs and ``update_agent`` (instructions and voice are fixed at
startup), hosted MCP tools, the user-away state. See docs/live.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Final

from websockets.asyncio.client import ClientConnection

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent, ResolvedAgent, resolve_agent
from voxwire.agents.input_guardrail import DEFAULT_REFUSAL
from voxwire.agents.tool_guardrail import ToolErrorFormatter
from voxwire.asyncio.agents.mcp_local import LocalMcp
from voxwire.asyncio.agents.tool_execution import Approvals, CallExecutor
from voxwire.asyncio.audio.microphone import AudioSource
from voxwire.asyncio.audio.playback import HasAudioOutput
from voxwire.asyncio.connection.reconnect import ReconnectPolicy, SessionReconnecting
from voxwire.asyncio.errors import SessionClosed
from voxwire.asyncio.events.queue import EventQueue, QueueClosed
from voxwire.asyncio.live.agents.decisions import (
    LiveDecisions,
    SessionDecisions,
    check_delegation_mode,
)
from voxwire.asyncio.live.agents.delegation import (
    ClientBackend,
    ClientWork,
    ResponsesWork,
)
from voxwire.asyncio.live.agents.guarding import LiveInputGuard, Refusal
from voxwire.asyncio.live.agents.handoffs import LiveHandoffs
from voxwire.asyncio.live.audio.microphone import LiveMicrophone
from voxwire.asyncio.live.audio.playback import LivePlayback, live_output
from voxwire.asyncio.live.config import DelegationMode
from voxwire.asyncio.live.events import (
    LiveAudioEvent,
    LiveEvent,
    LiveHistoryItem,
    LiveMetrics,
    LiveUsageEvent,
)
from voxwire.asyncio.live.handling import LiveHandling
from voxwire.asyncio.live.recording import LiveRecording
from voxwire.asyncio.live.replies import Replies
from voxwire.asyncio.live.sideband import LiveSideband, check_attach_options
from voxwire.asyncio.live.spans import LiveSpans
from voxwire.asyncio.observability.pricing import LivePricing, ModelPrices
from voxwire.asyncio.observability.tracing import SessionTracer
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.audio import AudioOutput
from voxwire.exceptions import ConfigurationError
from voxwire.live import LiveProtocol
from voxwire.live import server_events as se
from voxwire.protocol.ids import CounterIds
from voxwire.store import ConversationStore, SessionSnapshot

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["LiveSession"]

DEFAULT_URL: Final = "wss://api.openai.com/v1/live/sessions"


class LiveSession(LiveSideband, LiveHandling):
    """An agent over GPT-Live (see the module docstring)."""

    def __init__(
        self,
        agent: RealtimeAgent,
        *,
        url: str = DEFAULT_URL,
        api_key: str | None = None,
        model: str = "gpt-live-1",
        delegation: DelegationMode = "responses",
        backend_model: str = "gpt-5.5",
        backend_instructions: str | None = None,
        backend: ClientBackend | None = None,
        decisions: LiveDecisions | None = None,
        audio_output: AudioOutput | HasAudioOutput | None = None,
        audio_input: AudioSource | None = None,
        context: Any = None,
        tool_error_formatter: ToolErrorFormatter | None = None,
        start_timeout_s: float = 15.0,
        max_events: int = 1000,
        reconnect: ReconnectPolicy | None = None,
        store: ConversationStore | None = None,
        conversation_id: str | None = None,
        input_guardrail_refusal: Refusal = DEFAULT_REFUSAL,
        tracer_provider: TracerProvider | None = None,
        tracing_disabled: bool = False,
        prices: Mapping[str, ModelPrices] | None = None,
    ) -> None:
        _check_options(delegation, backend, decisions, reconnect)
        self.agent = agent
        self._connection_parts(url, api_key, start_timeout_s, reconnect)
        self._options = (model, delegation, backend_model, backend_instructions)
        self._backend = backend
        self._output = live_output(audio_output)
        self._microphone = LiveMicrophone(audio_input, self) if audio_input is not None else None
        self._context, self._formatter = context, tool_error_formatter
        # Bounded, never blocking the receive loop: when full, audio and usage go first.
        self._events: EventQueue[LiveEvent] = EventQueue(max_events, droppable=_droppable)
        self._tasks = OwnedTasks(self._task_failed)
        self._approvals = Approvals()
        self._spans = LiveSpans(
            SessionTracer(disabled=tracing_disabled, tracer_provider=tracer_provider, kind="live")
        )
        self._guard = LiveInputGuard(self, self._tasks, agent, input_guardrail_refusal)
        self._refusal_id: str | None = None
        self.replies = Replies()  # answers to commands, by event id
        self.decisions = SessionDecisions(self, decisions, context)  # docs/live.md, Decisions
        self._responses: ResponsesWork | None = None
        self._client: ClientWork | None = None
        self._history: list[LiveHistoryItem] = []
        self._recording = LiveRecording(store, conversation_id, self.emit)
        self._mcp = LocalMcp(self.emit, _nothing)  # local MCP servers: tools fixed at start
        self._resume_id: str | None = None  # LiveSession.resume: the stored conversation
        self._restored = 0  # history items restored from it
        self._playback = LivePlayback(
            self._output, emit=self.emit, heard=self._heard, truncated=self._truncated
        )
        self._usage: tuple[float, float | None] = (0.0, None)  # seconds, context usage ratio
        self._pricing = LivePricing(model, prices)  # docs/operations.md
        self._delegations_started = 0  # over every connection (a fork's core starts empty)
        self._spoken, self._checked = "", 0  # this turn's words as generated, for guardrails
        self._silenced = False  # a guardrail tripped: drop the model's audio until the user speaks

    def _connection_parts(
        self,
        url: str,
        api_key: str | None,
        start_timeout_s: float,
        reconnect: ReconnectPolicy | None,
    ) -> None:
        self._url = url
        key = api_key or (os.environ.get("OPENAI_API_KEY") if "api.openai.com" in url else None)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._start_timeout_s = start_timeout_s
        self._ids = CounterIds()  # shared by every connection's core: ids never repeat
        self.protocol = LiveProtocol(ids=self._ids)
        self._reconnect = reconnect
        self._reconnecting = False  # a fork is being opened after a lost connection
        self._ws: ClientConnection | None = None
        self._closed = False  # close() was called
        self._ended = False  # the event stream has its close event
        self._send_lock = asyncio.Lock()

    async def __aenter__(self) -> LiveSession:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _setup_work(self, resolved: ResolvedAgent) -> None:
        if self._backend is not None:
            self._client = ClientWork(self, self._backend, self._context)
            return
        executor = CallExecutor(
            self,
            self._approvals,
            rejection_message="The user did not approve this call.",
            error_formatter=self._formatter,
            context=self._context,
        )
        self._responses = ResponsesWork(self, resolved, executor)
        self._responses.handoffs = LiveHandoffs(self, resolved.agent.voice, self._resolve)

    async def _resolve(self, agent: RealtimeAgent) -> ResolvedAgent:
        """``agent`` resolved with its local MCP servers' tools (connected first)."""
        await self._mcp.connect(agent)
        return await resolve_agent(agent, self._mcp.tools(agent))

    def _on_session_updated(self, event: se.SessionUpdated) -> None:
        self.replies.settle(event.client_event_id, event)

    def _on_decision(
        self, event: se.DecisionEvent | se.DecisionItemCreated | se.DecisionItemDeleted
    ) -> None:
        self.decisions.on_event(event)

    # --- the application's side -----------------------------------------------------------------

    def __aiter__(self) -> LiveSession:
        return self

    async def __anext__(self) -> LiveEvent:
        try:
            return await self._events.get()
        except QueueClosed:
            raise StopAsyncIteration from None

    @property
    def dropped_events(self) -> int:
        """Events dropped because the application read too slowly (``max_events``)."""
        return self._events.dropped

    async def send_audio(self, pcm: bytes) -> None:
        """Microphone audio, PCM16 24 kHz mono (the model listens even while it speaks);
        dropped while the session reconnects."""
        if self._reconnecting and not self._closed:
            return
        self._require_open()
        self.protocol.send_input_audio(pcm)
        await self.flush()

    async def add_context(self, text: str, *, spoken: bool = False) -> None:
        """Add context for the rest of the session: instructions
        (``session.instructions.append``), or with ``spoken=True`` something the model should
        tell the user (``session.commentary.append``; in its own words, not verbatim)."""
        self._require_open()
        if spoken:
            self.protocol.send_commentary(text)
        else:
            self.protocol.send_instructions(text)
        await self.flush()

    async def mute(self) -> None:
        """Stop feeding the microphone's audio to the model."""
        self._require_open()
        self.protocol.send_mute()
        await self.flush()

    async def unmute(self) -> None:
        self._require_open()
        self.protocol.send_unmute()
        await self.flush()

    def approve(self, call_id: str, *, always: bool = False) -> None:
        """Approve a tool call waiting for approval (``tool_approval_requested``)."""
        self._approvals.answer(call_id, True, None, always)

    def reject(self, call_id: str, *, message: str | None = None, always: bool = False) -> None:
        """Reject a tool call waiting for approval; ``message`` is what the backend gets."""
        self._approvals.answer(call_id, False, message, always)

    @classmethod
    def resume(
        cls, store: ConversationStore, conversation_id: str, agent: RealtimeAgent, **options: Any
    ) -> LiveSession:
        """A session that goes on with the stored conversation ``conversation_id`` (recorded
        by a ``LiveSession(store=...)``): at ``connect()`` it takes the conversation's lease,
        starts a new Live session with the conversation as its initial history
        (``session.start`` ``input``: the messages as they are, tool calls with their outputs
        and delegation answers as developer notes) and records into the same conversation.
        ``options`` are ``LiveSession``'s. Delegations in progress when it stopped are not
        resumed. See docs/live.md, "Persistence"."""
        session = cls(agent, store=store, conversation_id=conversation_id, **options)
        session._resume_id = conversation_id
        return session

    @classmethod
    def attach(
        cls,
        session_id: str,
        agent: RealtimeAgent,
        *,
        session: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> LiveSession:
        """A session attached as the sideband of the SIP call ``session_id``, accepted with
        ``session`` (what ``LiveCalls.accept`` returned; rebuilt from ``agent`` and
        ``options`` when omitted). ``options`` are ``LiveSession``'s but ``reconnect`` and
        ``audio_input``. See :mod:`voxwire.asyncio.live.sideband` and docs/telephony.md."""
        check_attach_options(options)
        live = cls(agent, **options)
        live._attach_to, live._attach_session = session_id, session
        return live

    def snapshot(self) -> SessionSnapshot:
        """The conversation so far as a :class:`~voxwire.store.SessionSnapshot` (with or without
        a store; :class:`~voxwire.exceptions.InvalidState` before ``connect()``)."""
        return self._recording.snapshot()

    @property
    def conversation_id(self) -> str | None:
        """The conversation's id in the store (the one given, or the one made at connect)."""
        return self._recording.conversation_id

    @property
    def history(self) -> tuple[LiveHistoryItem, ...]:
        """What the user said and what the listener heard of the assistant, in order."""
        return tuple(self._history)

    @property
    def metrics(self) -> LiveMetrics:
        """The totals a ``RealtimeSession`` reports (each utterance of the model counts as a
        response) and Live's own figures (see :class:`LiveMetrics`)."""
        return self._playback.metrics(
            usage_seconds=self._usage[0],
            context_usage_ratio=self._usage[1],
            estimated_cost_usd=self._pricing.cost_usd,
            delegations=self._delegations_started,
            tool_calls=self._responses.calls if self._responses is not None else 0,
        )

    def _require_open(self) -> None:
        if self._reconnecting and not self._closed:
            raise SessionReconnecting(
                "the Live connection was lost and the session is opening a fork: send again "
                "after the live_reconnected event"
            )
        if self._ws is None or self._closed or self.protocol.state != "active":
            raise SessionClosed("the Live session is not open: use 'async with LiveSession(...)'")

    # --- what the parts need (WorkHost, ExecutionHost) ------------------------------------------

    def emit(self, event: Any) -> None:
        self._events.put(event)

    def accepts_audio(self) -> bool:
        return not self._closed and self.protocol.state == "active"

    def send_frames(self, frames: list[bytes]) -> None:
        self.protocol.send_input_audio(b"".join(frames))
        self._tasks.spawn(self.flush(), name="live microphone", kind="audio_input")

    def spawn(self, work: Awaitable[None], name: str) -> None:
        async def run() -> None:
            await work

        self._tasks.spawn(run(), name=name, kind="tool")

    async def may_run(self) -> bool:
        return await self._guard.allowed()

    def refused_output(self) -> str:
        return self._guard.refusal_output()

    def delivered(self, call_id: str, output: str) -> None:
        self._recording.output(call_id, output)

    def answered(self, delegation_id: str, text: str, spoken: bool) -> None:
        self._recording.answer(delegation_id, text, spoken)
        self._spans.delegation_answered(delegation_id, spoken)

    def tool_span(self, name: str, call_id: str) -> contextlib.AbstractContextManager[Any]:
        owner = self.protocol.delegations.call_for(call_id)
        return self._spans.tracer.tool_span(name, call_id, owner.id if owner else None)

    async def send_progress(self, call_id: str, name: str, text: str, respond: bool) -> None:
        # A tool's progress reaches the model as silent context (Responses delegation takes
        # no delegation id on appends).
        if self.protocol.state == "active":
            self.protocol.send_thinking(f"Progress of {name}: {text}")
            await self.flush()

    def _task_failed(self, kind: str, exc: BaseException) -> None:
        self.emit(ev.ErrorEvent(message=f"{kind} failed: {exc!r}", source="session", exception=exc))

    # --- the audio path -------------------------------------------------------------------------

    def _on_audio(self, event: se.OutputAudioDelta) -> None:
        if not self._silenced:
            self._playback.audio(event)

    def _timeline_restarted(self) -> None:
        """A fork is a new session with its own timeline: what is queued will not be heard."""
        self._playback.timeline_restarted()

    def _release_heard(self) -> None:
        self._playback.release()


def _check_options(
    delegation: str,
    backend: ClientBackend | None,
    decisions: LiveDecisions | None,
    reconnect: ReconnectPolicy | None,
) -> None:
    check_delegation_mode(delegation, decisions)
    if (delegation == "client") != (backend is not None):
        raise ConfigurationError(
            "delegation='client' needs backend= (an async function answering each "
            "delegation); delegation='responses' runs the agent's tools and takes no backend"
        )
    if reconnect is not None and not reconnect.restore_history:
        raise ConfigurationError(
            "ReconnectPolicy(restore_history=False) does not apply to a Live session: a "
            "fork always carries the stored conversation; leave restore_history at True"
        )


def _droppable(event: LiveEvent) -> bool:
    """Superseded by what follows: audio (it went to no output) and usage figures."""
    return isinstance(event, LiveAudioEvent | LiveUsageEvent)


async def _nothing() -> None:
    """A Live session's tools are fixed while it runs (see ``LiveSession._mcp``)."""
