"""``LiveSession``: a :class:`~voxwire.agents.RealtimeAgent` over OpenAI's GPT-Live API.

The same shape as :class:`~voxwire.asyncio.RealtimeSession` where the meaning carries over::

    async with LiveSession(agent, url=..., audio_output=speaker) as session:
        await session.send_audio(pcm)
        async for event in session:
            ...

What carries over: ``async with`` / ``connect`` / ``close``, ``async for event``,
``send_audio`` and ``audio_input=`` (a microphone or any audio source), an attached
:class:`~voxwire.audio.AudioOutput` (transcripts released as the listener hears them),
``history`` (what the user said and what the listener *heard*),
``metrics``, function tools with their timeouts, approvals (``approve``/``reject``), tool
guardrails and ``context``, output guardrails.

What does not (GPT-Live decides when to speak and hears interruptions itself): no truncation
(nothing is sent when the listener interrupts — the model heard it), no ``response.create``
gating, ``say``/``create_response``, ``send_message`` (Live takes speech; add context with
:meth:`add_context`), ``update_agent`` and handoffs outside Responses delegation (the voice is
fixed at startup; handoffs.py says what a handoff changes), hosted MCP tools, persistence and
reconnection (a new socket does not restore a Live session; going on means a fork of a stored
one), input guardrails. See docs/live.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
from collections.abc import Awaitable
from typing import Any, Final, Literal

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent, ResolvedAgent, resolve_agent
from voxwire.agents.tool_guardrail import ToolErrorFormatter
from voxwire.asyncio.agents.tool_execution import Approvals, CallExecutor
from voxwire.asyncio.audio.microphone import AudioSource
from voxwire.asyncio.errors import ConnectionFailed, SessionClosed
from voxwire.asyncio.events.queue import EventQueue, QueueClosed
from voxwire.asyncio.live.config import DelegationMode, start_config
from voxwire.asyncio.live.decisions import (
    LiveDecisions,
    SessionDecisions,
    check_delegation_mode,
)
from voxwire.asyncio.live.delegation import (
    ClientBackend,
    ClientWork,
    ResponsesWork,
    no_span,
)
from voxwire.asyncio.live.events import (
    DelegationStartedEvent,
    LiveAudioEvent,
    LiveEvent,
    LiveGuardrailTrippedEvent,
    LiveHistoryItem,
    LiveMetrics,
    LiveTranscriptEvent,
    LiveUsageEvent,
)
from voxwire.asyncio.live.handoffs import LiveHandoffs
from voxwire.asyncio.live.microphone import LiveMicrophone
from voxwire.asyncio.live.replies import Replies
from voxwire.asyncio.live.transcripts import HeardClock, TranscriptRelease
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.audio import AudioOutput
from voxwire.exceptions import ConfigurationError
from voxwire.live import LiveProtocol
from voxwire.live import server_events as se
from voxwire.protocol.server_events import ProtocolErrorEvent

__all__ = ["LiveSession"]

DEFAULT_URL: Final = "wss://api.openai.com/v1/live/sessions"
_TICK_S: Final = 0.02  # how often held transcripts are checked against what was heard
_SENTENCE_END: Final = re.compile(r"[.!?…]\s*$")
_GUARDRAIL_NOTE: Final = (
    "Your last words broke a rule ({names}) and were not played. Do not repeat them; "
    "say briefly that you cannot help with that."
)
_BYTES_PER_MS: Final = 48  # PCM16 at 24 kHz, the Live WebSocket default this session uses


class LiveSession:
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
        audio_output: AudioOutput | None = None,
        audio_input: AudioSource | None = None,
        context: Any = None,
        tool_error_formatter: ToolErrorFormatter | None = None,
        start_timeout_s: float = 15.0,
        max_events: int = 1000,
    ) -> None:
        check_delegation_mode(delegation, decisions)
        if (delegation == "client") != (backend is not None):
            raise ConfigurationError(
                "delegation='client' needs backend= (an async function answering each "
                "delegation); delegation='responses' runs the agent's tools and takes no backend"
            )
        if audio_output is not None and audio_output.device_rate_hz != 24_000:
            raise ConfigurationError("a Live session's audio output runs at 24000 Hz")
        self.agent = agent
        self._url = url
        key = api_key or (os.environ.get("OPENAI_API_KEY") if "api.openai.com" in url else None)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._options = (model, delegation, backend_model, backend_instructions)
        self._backend = backend
        self._output = audio_output
        self._microphone = LiveMicrophone(audio_input, self) if audio_input is not None else None
        self._context = context
        self._formatter = tool_error_formatter
        self._start_timeout_s = start_timeout_s
        self.protocol = LiveProtocol()
        self._ws: ClientConnection | None = None
        # Bounded, never blocking the receive loop: when full, audio and usage go first.
        self._events: EventQueue[LiveEvent] = EventQueue(max_events, droppable=_droppable)
        self._tasks = OwnedTasks(self._task_failed)
        self.replies = Replies()  # answers to commands, by event id
        self.decisions = SessionDecisions(self, decisions, context)  # docs/live.md, Decisions
        self._approvals = Approvals()
        self._responses: ResponsesWork | None = None
        self._client: ClientWork | None = None
        self._clock = HeardClock()
        self._release = TranscriptRelease()
        self._history: list[LiveHistoryItem] = []
        self._metrics = LiveMetrics()
        self._latencies: list[int] = []
        self._user_end_ms: int | None = None
        self._spoken = ""  # the assistant's words of this turn, as generated (for guardrails)
        self._checked = 0
        self._silenced = False  # a guardrail tripped: drop the model's audio until the user speaks
        self._closed = False  # close() was called
        self._ended = False  # the event stream has its close event
        self._send_lock = asyncio.Lock()

    # --- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> LiveSession:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the connection, send ``session.start`` for the agent, wait for
        ``session.started``. Raises :class:`ConnectionFailed` if the server refuses."""
        if self._ws is not None or self._closed:
            raise SessionClosed("connect() may be called once per LiveSession")
        resolved = await resolve_agent(self.agent)
        model, delegation, backend_model, backend_instructions = self._options
        config = start_config(
            resolved,
            model=model,
            delegation=delegation,
            backend_model=backend_model,
            backend_instructions=backend_instructions,
            decisions=self.decisions.start_delegation(),
        )
        try:
            self._ws = await connect(self._url, additional_headers=self._headers)
        except (OSError, ConnectionClosed, ValueError) as exc:
            raise ConnectionFailed(f"cannot connect to {self._url}: {exc}") from exc
        self._setup_work(resolved)
        self.protocol.send_session_start(config)
        await self.flush()
        try:
            await asyncio.wait_for(self._until_started(), self._start_timeout_s)
        except BaseException:
            await self._ws.close()
            raise
        self._tasks.spawn(self._receive(), name="live receive", kind="receive")
        if self._output is not None:
            self._tasks.spawn(self._tick(), name="live transcripts", kind="receive")
        if self._microphone is not None:
            self._microphone.start()

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
        self._responses.handoffs = LiveHandoffs(self, resolved.agent.voice)

    async def _until_started(self) -> None:
        assert self._ws is not None
        while self.protocol.state != "active":
            frame = await self._ws.recv()
            self.protocol.receive_text(frame)
            for event in self.protocol.events_received():
                if isinstance(event, se.LiveErrorEvent):
                    raise ConnectionFailed(f"the Live session was refused: {event.error.message}")
                self._on_event(event)

    async def close(self) -> None:
        """Send ``session.close`` (when open), close the connection, stop the background work;
        idempotent. The event stream ends with a ``close`` event."""
        if self._closed:
            return
        self._closed = True
        if self._microphone is not None:
            await asyncio.to_thread(self._microphone.stop)
        if self._ws is not None and self.protocol.state == "active":
            with contextlib.suppress(ConnectionClosed):
                self.protocol.send_close()
                await self.flush()
        await self._tasks.aclose()
        if self._ws is not None:
            await self._ws.close()
        self._finish(ev.CloseEvent(reason="client_closed"))

    def _finish(self, event: ev.CloseEvent) -> None:
        if self._ended:
            return
        self._ended = True
        self.replies.close()
        self._events.put(event)
        self._events.close()

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
        """Microphone audio, PCM16 24 kHz mono (the model listens even while it speaks)."""
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

    @property
    def history(self) -> tuple[LiveHistoryItem, ...]:
        """What the user said and what the listener heard of the assistant, in order."""
        return tuple(self._history)

    @property
    def metrics(self) -> LiveMetrics:
        return LiveMetrics(
            usage_seconds=self._metrics.usage_seconds,
            context_usage_ratio=self._metrics.context_usage_ratio,
            audio_received_ms=self._metrics.audio_received_ms,
            audio_heard_ms=self._heard_ms(),
            delegations=len(list(self.protocol.delegations)),
            tool_calls=self._responses.calls if self._responses is not None else 0,
            first_audio_after_speech_ms=tuple(self._latencies),
        )

    def _require_open(self) -> None:
        if self._ws is None or self._closed or self.protocol.state != "active":
            raise SessionClosed("the Live session is not open: use 'async with LiveSession(...)'")

    # --- what the parts need (WorkHost, ExecutionHost) ------------------------------------------

    def emit(self, event: Any) -> None:
        self._events.put(event)

    async def flush(self) -> None:
        assert self._ws is not None
        async with self._send_lock:
            for frame in self.protocol.data_to_send():
                await self._ws.send(frame)

    def accepts_audio(self) -> bool:
        return not self._closed and self.protocol.state == "active"

    def send_frames(self, frames: list[bytes]) -> None:
        self.protocol.send_input_audio(b"".join(frames))
        self._tasks.spawn(self.flush(), name="live microphone", kind="audio_input")

    def spawn(self, work: Awaitable[None], name: str) -> None:
        async def run() -> None:
            await work

        self._tasks.spawn(run(), name=name, kind="tool")

    def tool_span(self, name: str, call_id: str) -> Any:
        return no_span(name, call_id)

    async def send_progress(self, call_id: str, name: str, text: str, respond: bool) -> None:
        # A tool's progress reaches the model as silent context (Responses delegation takes
        # no delegation id on appends).
        if self.protocol.state == "active":
            self.protocol.send_thinking(f"Progress of {name}: {text}")
            await self.flush()

    def _task_failed(self, kind: str, exc: BaseException) -> None:
        self.emit(ev.ErrorEvent(message=f"{kind} failed: {exc!r}", source="session", exception=exc))

    # --- receiving ------------------------------------------------------------------------------

    async def _receive(self) -> None:
        assert self._ws is not None
        reason: ev.CloseEvent
        try:
            async for frame in self._ws:
                self.protocol.receive_text(frame)
                for event in self.protocol.events_received():
                    self._on_event(event)
                self._release_heard()
                if self.protocol.state == "closed":
                    break
            reason = ev.CloseEvent(reason="server_closed")
        except ConnectionClosed as exc:
            reason = ev.CloseEvent(reason="connection_lost", error=exc)
        self.protocol.connection_lost()
        self._finish(reason)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(_TICK_S)
            self._release_heard()

    def _on_event(self, event: se.LiveReceivedEvent) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def _on_audio(self, event: se.OutputAudioDelta) -> None:
        if self._silenced:
            return
        start = event.start_ms if event.start_ms is not None else self._heard_ms()
        end = (
            event.end_ms if event.end_ms is not None else start + len(event.delta) // _BYTES_PER_MS
        )
        self._metrics = _with(
            self._metrics, audio_received_ms=self._metrics.audio_received_ms + end - start
        )
        if self._user_end_ms is not None:
            self._latencies.append(max(0, start - self._user_end_ms))
            self._user_end_ms = None
        if self._output is None:
            self.emit(LiveAudioEvent(pcm=event.delta, start_ms=event.start_ms, end_ms=event.end_ms))
            return
        before = self._output.ring.pushed_samples
        self._output.push("live", 0, event.delta)
        self._clock.pushed(before, self._output.ring.pushed_samples, start, end)

    def _on_assistant_words(self, event: se.OutputTranscriptDelta) -> None:
        if self._silenced:
            return
        self._spoken += event.delta
        self._check_guardrails()
        if self._output is None:
            self._heard(event.delta, event.start_ms, event.end_ms)
        else:
            self._release.hold(event.delta, event.start_ms, event.end_ms)

    def _on_user_words(self, event: se.InputTranscriptDelta) -> None:
        self._silenced = False
        self._spoken, self._checked = "", 0
        self._user_end_ms = event.end_ms
        self._remember("user", event.delta, event.start_ms, event.end_ms)
        self.emit(
            LiveTranscriptEvent(
                role="user", delta=event.delta, start_ms=event.start_ms, end_ms=event.end_ms
            )
        )

    def _on_delegation(self, event: se.DelegationCreated) -> None:
        info = event.delegation
        self.emit(
            DelegationStartedEvent(
                delegation_id=info.id, target=info.target, offset_ms=event.offset_ms
            )
        )
        delegation = self.protocol.delegations.get(info.id)
        if info.target == "client" and self._client is not None and delegation is not None:
            said = " ".join(item.text for item in self._history if item.role == "user")
            self._client.start(delegation, said)

    def _on_backend(self, event: se.ResponseEvent) -> None:
        if self._responses is not None:
            for delegation in self.protocol.delegations.open():
                self._responses.check(delegation)

    def _on_usage(self, event: se.SessionUsageUpdated) -> None:
        ratio = event.context_window.usage_ratio if event.context_window else None
        self._metrics = _with(
            self._metrics, usage_seconds=event.usage.seconds, context_usage_ratio=ratio
        )
        self.emit(LiveUsageEvent(seconds=event.usage.seconds, context_usage_ratio=ratio))

    def _on_error(self, event: se.LiveErrorEvent) -> None:
        self.replies.on_error(event)
        self.emit(
            ev.ErrorEvent(
                message=event.error.message,
                source="server",
                code=event.error.code,
                param=event.error.param,
                event_id=event.error.client_event_id,
            )
        )

    def _on_protocol_error(self, event: ProtocolErrorEvent) -> None:
        self.emit(ev.ErrorEvent(message=event.message, source="protocol"))

    def _on_closed(self, event: se.SessionClosed) -> None:
        self._metrics = _with(self._metrics, usage_seconds=event.usage.seconds)

    # --- heard transcripts, history, guardrails ------------------------------------------------

    def _heard_ms(self) -> int:
        if self._output is None:
            return self._metrics.audio_received_ms
        return self._clock.heard_ms(self._output.ring.heard_samples)

    def _release_heard(self) -> None:
        if self._output is None or not len(self._release):
            return
        for held in self._release.due(self._heard_ms()):
            self._heard(held.delta, held.start_ms, held.end_ms)

    def _heard(self, delta: str, start_ms: int, end_ms: int) -> None:
        self._remember("assistant", delta, start_ms, end_ms)
        self.emit(
            LiveTranscriptEvent(role="assistant", delta=delta, start_ms=start_ms, end_ms=end_ms)
        )

    def _remember(
        self, role: Literal["user", "assistant"], delta: str, start_ms: int, end_ms: int
    ) -> None:
        last = self._history[-1] if self._history else None
        if last is not None and last.role == role:
            self._history[-1] = LiveHistoryItem(role, last.text + delta, last.start_ms, end_ms)
        else:
            self._history.append(LiveHistoryItem(role, delta, start_ms, end_ms))

    def _check_guardrails(self) -> None:
        guardrails = self.agent.output_guardrails
        if (
            not guardrails
            or not _SENTENCE_END.search(self._spoken)
            or len(self._spoken) == self._checked
        ):
            return
        self._checked = len(self._spoken)
        self._tasks.spawn(
            self._run_guardrails(self._spoken), name="live guardrails", kind="guardrail"
        )

    async def _run_guardrails(self, text: str) -> None:
        checks = self.agent.output_guardrails
        results = await asyncio.gather(*(g.run(self.agent, text) for g in checks))
        tripped = [
            (g.name, r) for g, r in zip(checks, results, strict=True) if r.tripwire_triggered
        ]
        if not tripped or self._silenced or self.protocol.state != "active":
            return
        self._silenced = True
        if self._output is not None:
            self._output.interrupt()
        self._clock.dropped()
        self._release.drop()
        names = tuple(name for name, _ in tripped)
        self.emit(
            LiveGuardrailTrippedEvent(
                transcript=text, guardrails=names, results=tuple(r for _, r in tripped)
            )
        )
        self.protocol.send_instructions(_GUARDRAIL_NOTE.format(names=", ".join(names)))
        await self.flush()


def _droppable(event: LiveEvent) -> bool:
    """Superseded by what follows: audio (it went to no output) and usage figures."""
    return isinstance(event, LiveAudioEvent | LiveUsageEvent)


def _with(metrics: LiveMetrics, **changes: Any) -> LiveMetrics:
    return dataclasses.replace(metrics, **changes)


_HANDLERS: Final[dict[type, Any]] = {
    se.OutputAudioDelta: LiveSession._on_audio,
    se.OutputTranscriptDelta: LiveSession._on_assistant_words,
    se.InputTranscriptDelta: LiveSession._on_user_words,
    se.DelegationCreated: LiveSession._on_delegation,
    se.ResponseEvent: LiveSession._on_backend,
    se.SessionUsageUpdated: LiveSession._on_usage,
    se.LiveErrorEvent: LiveSession._on_error,
    ProtocolErrorEvent: LiveSession._on_protocol_error,
    se.SessionClosed: LiveSession._on_closed,
    se.SessionUpdated: lambda session, event: session.replies.settle(event.client_event_id, event),
    se.DecisionEvent: lambda session, event: session.decisions.on_event(event),
    se.DecisionItemCreated: lambda session, event: session.decisions.on_event(event),
    se.DecisionItemDeleted: lambda session, event: session.decisions.on_event(event),
}
