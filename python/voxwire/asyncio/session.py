"""``RealtimeSession``: a Realtime conversation over a websocket, as the application holds it.

A thin pump around the sans-I/O :class:`~voxwire.protocol.RealtimeProtocol`: frames received go
into the protocol core, and every event the core hands out goes to each of the session's parts
in turn through one interface, ``on_server_event(event)`` (:meth:`RealtimeSession._dispatch`):
the audio output feed, interruptions, reconnection, the agent switcher, the translator into
session events (queued for ``async for``), tools, guardrails, tracing and metrics. Everything
the session sends goes through the core (``send_*``, or ``send`` for a raw event), which
queues the frames; the pump sends them in order. The core decides everything the wire implies
(items and their order, response gating and which request each response answers, update
acknowledgements, what a lost connection settles); this module owns only the I/O, the
lifecycle and the wiring of the parts (docs/architecture.md).

Lifecycle rules (each one tested):

* Construction has no side effects: nothing is read from the environment, nothing opened.
* ``connect()`` resolves the key, opens the connection, starts the receive loop, resolves the
  agent's instructions and sends the initial ``session.update``; it returns once that is sent
  (or, with ``wait_for_session_updated=True``, once the server acknowledged it). If anything
  fails on the way, everything acquired so far is released before the exception reaches the
  caller — also when the caller is cancelled.
* The receive loop is the session's one background task; the session awaits it on close.
  An exception in it becomes an ``error`` / ``close`` event, never a silent death.
* ``close()`` is idempotent and safe to call from any task, concurrently: every caller waits for
  the same shutdown, which stops the receive loop, closes the connection and wakes every waiting
  iterator. When it returns, no task of the session is left.
* The end of the connection ends the iteration after the queued events: the last event is
  ``close`` (``reason`` and, for an abnormal end, ``error``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent
from voxwire.agents.guardrail import DEFAULT_DEBOUNCE_CHARS, default_feedback
from voxwire.agents.input_guardrail import DEFAULT_REFUSAL
from voxwire.agents.tool_guardrail import ToolErrorFormatter
from voxwire.asyncio import hosts
from voxwire.asyncio.agents.guardrails import GuardrailRunner
from voxwire.asyncio.agents.input_guardrails import InputGuardrailRunner, Refusal
from voxwire.asyncio.agents.mcp_local import McpConnection
from voxwire.asyncio.agents.switching import AgentSwitcher, UpdateWaiters
from voxwire.asyncio.agents.tools import DEFAULT_REJECTION_MESSAGE, ToolRunner
from voxwire.asyncio.audio.interruption import Interrupter
from voxwire.asyncio.audio.microphone import AudioSource, Microphone
from voxwire.asyncio.audio.playback import (
    AudioOutputFeed,
    AudioOutputPath,
    AudioOutputTarget,
    PlaybackMonitor,
    output_path,
)
from voxwire.asyncio.audio.recovery import recovery_part
from voxwire.asyncio.audio.speech_tracker import SpeechTracker
from voxwire.asyncio.connection.calls import CallControl
from voxwire.asyncio.connection.dial import Dialer
from voxwire.asyncio.connection.endpoint import ApiKeySource
from voxwire.asyncio.connection.pump import Pump
from voxwire.asyncio.connection.reconnect import Reconnector, ReconnectPolicy
from voxwire.asyncio.connection.renewal import RenewalPolicy, Renewer
from voxwire.asyncio.connection.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Connector,
    Transport,
    TransportClosed,
)
from voxwire.asyncio.control import SessionControl
from voxwire.asyncio.dispatch import Dispatcher
from voxwire.asyncio.errors import SessionClosed
from voxwire.asyncio.events.lifecycle import SessionState
from voxwire.asyncio.events.queue import EventQueue, QueueClosed, QueueIterator
from voxwire.asyncio.events.translate import EventTranslator
from voxwire.asyncio.observability.metrics import Metrics, MetricsRecorder, ResponseMetrics
from voxwire.asyncio.observability.pricing import ModelPrices
from voxwire.asyncio.options import SessionOptions
from voxwire.asyncio.persistence.recording import Persistence, SessionPersistence
from voxwire.asyncio.persistence.resumption import ConversationStart, ResumeSource, resume_options
from voxwire.asyncio.reading import SessionReading
from voxwire.asyncio.sending import SessionSending
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.audio import FalseInterruptionFilter
from voxwire.audio.bargein import BargeInDetector
from voxwire.exceptions import InvalidState
from voxwire.protocol import server_events as se
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.ids import IdFactory
from voxwire.protocol.protocol import RealtimeProtocol
from voxwire.protocol.updates import SessionUpdateLog
from voxwire.store import DEFAULT_LEASE_TTL_S, AudioPolicy, ConversationStore

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["RealtimeSession", "SessionState"]

log = logging.getLogger("voxwire.session")


class RealtimeSession(SessionReading, SessionSending, SessionControl, SessionPersistence):
    """One Realtime conversation. Use ``async with RealtimeSession(...) as session:`` (or
    ``connect()`` / ``close()``) and ``async for event in session``.

    Where to connect: ``url`` (default: the hosted service), ``model`` or ``call_id`` (not
    both), ``fallback_urls`` tried in order when connecting fails, ``api_key`` (text, or a
    sync/async function returning it; default ``OPENAI_API_KEY``; never logged or shown), extra
    ``headers`` (e.g. Azure's ``api-key``).

    What to ask for: ``agent`` (instructions, voice, tools) over ``config`` (a
    :class:`~voxwire.protocol.SessionConfig` or a mapping in GA, legacy or camelCase shape).

    Options: ``wait_for_session_updated`` (``connect()`` waits for the server's acknowledgement
    and raises if it rejects the configuration); ``audio_output`` (an
    :class:`~voxwire.audio.AudioOutput`, a speaker holding one, or a bare
    :class:`~voxwire.audio.PlaybackClock`: assistant audio goes into it instead of ``audio``
    events, and interruptions truncate exactly what the listener heard); ``audio_input`` (a
    microphone or file source, run into ``send_audio`` in frames of ``input_frame_ms`` from
    connect to close; ``local_barge_in`` interrupts as soon as the user speaks over the agent:
    :mod:`voxwire.asyncio.audio.microphone`); ``raw_server_events`` (also hand out every server
    event but audio deltas); ``max_queued_events`` (the event queue's bound; see
    :mod:`voxwire.asyncio.events.queue` for what is dropped when it is full); timeouts,
    keepalive and the maximum message size of the connection; ``connector`` (how to open it:
    default a websocket; :mod:`voxwire.testing` has a scripted one); ``ids`` (an IdFactory).

    Tracing (:mod:`voxwire.asyncio.observability.tracing`): ``tracing_disabled``, ``workflow_name``,
    ``group_id``, ``metadata`` make the service's ``session.tracing``, sent once at start;
    OpenTelemetry spans go to ``tracer_provider`` (default: the global one) when
    ``opentelemetry-api`` is installed. Metrics (:mod:`voxwire.asyncio.observability.metrics`,
    ``session.metrics``, ``metrics_collected`` events) take their time from ``clock``
    (monotonic seconds, default :func:`time.monotonic`); usage is priced by ``prices`` (by model,
    over the published ones: :mod:`voxwire.asyncio.observability.pricing`). ``user_away_timeout_s``:
    the user is ``away`` after this much silence on ``clock`` (docs/operations.md).

    Agent features (docs/agents.md): the agent's function tools run when the model calls them
    (``tool_output_attempts``: how often an output the connection or the server refused is
    sent again; ``tool_rejection_message``: what the model hears when the application rejects
    a call); its output guardrails check the assistant's transcript every
    ``guardrail_debounce_chars`` new characters (``None``: complete transcripts only) and, on
    a trip, the model gets ``guardrail_feedback`` (text, or a function of the tripped
    guardrails' names) as a system message before it answers again. ``context``: the
    application's object, handed to tools in their ``ToolContext``; ``tool_error_formatter``:
    the model's text for rejected, blocked, timed-out and failed calls; input guardrails refuse
    with ``input_guardrail_refusal`` (text said, ``None``: silent). ``mcp_follow_up``: ask for
    the next response after hosted MCP calls (asyncio/agents/mcp.py); ``mcp_connections``:
    local MCP servers the application connected, shared (asyncio/agents/mcp_local.py).

    ``reconnect`` (:class:`~voxwire.asyncio.ReconnectPolicy`) resumes after a lost connection;
    ``renewal`` (:class:`~voxwire.asyncio.RenewalPolicy`) renews before the server's maximum
    session duration (:mod:`voxwire.asyncio.connection.renewal`).

    Persistence (docs/persistence.md): ``store`` records the conversation ``conversation_id``
    (default: a new id) as the server confirms it, ``store_audio`` adds its audio, holding the
    conversation's lease (``lease_ttl_s``; docs/persistence.md);
    :meth:`snapshot`, :meth:`resume`. ``max_history_items``: hold at most this many items of
    the conversation in memory (history, snapshot), forgetting the oldest — still on the server
    and in the store (docs/session.md); ``None``: all.
    """

    def __init__(
        self,
        agent: RealtimeAgent | None = None,
        *,
        url: str | None = None,
        model: str | None = None,
        call_id: str | None = None,
        api_key: ApiKeySource | None = None,
        headers: Mapping[str, str] | None = None,
        fallback_urls: Sequence[str] = (),
        config: SessionConfig | Mapping[str, Any] | None = None,
        wait_for_session_updated: bool = False,
        audio_output: AudioOutputTarget | None = None,
        raw_server_events: bool = False,
        max_queued_events: int = 1024,
        open_timeout_s: float = 10.0,
        close_timeout_s: float = 5.0,
        ping_interval_s: float | None = 20.0,
        ping_timeout_s: float | None = 20.0,
        max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
        connector: Connector | None = None,
        ids: IdFactory | None = None,
        tracing_disabled: bool = False,
        workflow_name: str | None = None,
        group_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        tracer_provider: TracerProvider | None = None,
        clock: Callable[[], float] | None = None,
        tool_output_attempts: int = 3,
        tool_rejection_message: str = DEFAULT_REJECTION_MESSAGE,
        guardrail_debounce_chars: int | None = DEFAULT_DEBOUNCE_CHARS,
        guardrail_feedback: str | Callable[[Sequence[str]], str] = default_feedback,
        reconnect: ReconnectPolicy | None = None,
        audio_input: AudioSource | None = None,
        local_barge_in: bool | BargeInDetector = False,
        false_interruption: FalseInterruptionFilter | None = None,
        echo_cancellation: bool = False,
        input_frame_ms: int = 20,
        renewal: RenewalPolicy | None = None,
        store: ConversationStore | None = None,
        conversation_id: str | None = None,
        store_audio: AudioPolicy | None = None,
        lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
        max_history_items: int | None = None,
        context: Any = None,
        tool_error_formatter: ToolErrorFormatter | None = None,
        input_guardrail_refusal: Refusal = DEFAULT_REFUSAL,
        mcp_follow_up: bool = True,
        call_control: CallControl | None = None,
        prices: Mapping[str, ModelPrices] | None = None,
        user_away_timeout_s: float | None = None,
        mcp_connections: Sequence[McpConnection] = (),
    ) -> None:
        # Every argument goes to SessionOptions, which checks them (asyncio/options.py);
        # nothing is opened, read or started here.
        arguments = {name: value for name, value in locals().items() if name != "self"}
        self._setup(SessionOptions(**arguments))

    def _setup(self, options: SessionOptions) -> None:
        """Make the session's parts (each one's job is in its module)."""
        self._options = options
        self._url = options.primary_url
        self._queue: EventQueue[ev.SessionEvent] = EventQueue(
            options.max_queued_events, droppable=ev.droppable
        )
        emit = self._queue.put
        # One id factory for every connection's protocol core: ids never repeat; the log of the
        # application's session updates, made again after a reconnection (with a policy only).
        self._ids: IdFactory = options.id_factory()
        restores = options.reconnect is not None or options.renewal is not None
        self._update_log = SessionUpdateLog() if restores else None
        self._protocol = self._new_protocol()
        self._state = SessionState.NEW
        self._waiters = UpdateWaiters()
        self._pump = Pump(lambda: self._protocol, self._dispatch, self._waiters.settled)
        self._receive_task: asyncio.Task[None] | None = None
        self._shutdown_task: asyncio.Task[None] | None = None
        self._closed_event: asyncio.Event | None = None
        self._close_requested = False
        self._dialer = Dialer(options, self._check_close_requested, emit)
        self._close_event: ev.CloseEvent | None = None
        self._muted = False
        self._muted_bytes = 0
        self._switcher = AgentSwitcher(options, hosts.SwitchHost(self))
        self._tracer = options.make_tracer()
        self._setup_output(options, emit)
        self._setup_agent_parts(options, emit)

    def _setup_output(
        self, options: SessionOptions, emit: Callable[[ev.SessionEvent], None]
    ) -> None:
        """The audio output path (if one is attached), metrics, interruptions, the translator."""
        sink = output_path(options.audio_output)
        self._playback = playback = (
            PlaybackMonitor(sink, self._playback_drained, self._report_playback_error)
            if sink is not None
            else None
        )
        self._clock: Callable[[], float] = options.clock or time.monotonic
        self._metrics = MetricsRecorder(
            now=self._clock,
            emit=self._emit_metrics,
            playback=self._playback,
            is_out_of_band=lambda response_id: self._protocol.is_out_of_band(response_id),
            underruns=sink.underruns if isinstance(sink, AudioOutputPath) else None,
            usage=hosts.usage_wiring(lambda: self._protocol.session, options, emit),
        )
        self._feed = (
            AudioOutputFeed(sink, lambda: self._protocol.session, self._metrics.audio_pushed, emit)
            if sink is not None
            else None
        )
        self._interrupter = Interrupter(lambda: self._protocol, sink, self._metrics, emit)
        self._microphone = (
            Microphone(
                source,
                hosts.InputHost(self),
                frame_ms=options.input_frame_ms,
                barge_in=options.local_barge_in,
            )
            if (source := options.input_source()) is not None
            else None
        )
        self._translator = EventTranslator(
            self._protocol,
            raw=options.raw_server_events,
            audio_events=sink is None,
            emit=emit,
            # With an audio output, agent_state stays "speaking" until the listener heard it.
            playback_pending=(lambda: playback.playing) if playback is not None else lambda: False,
            wait_for_playback=playback.arm_drain if playback is not None else lambda: None,
            away_after_s=options.user_away_timeout_s,
            now=self._clock,
        )

    def _setup_agent_parts(
        self, options: SessionOptions, emit: Callable[[ev.SessionEvent], None]
    ) -> None:
        """Reconnection, tools and guardrails, and the order every server event visits the
        parts in (:meth:`_dispatch`)."""
        renewal = options.renewal
        expiry = renewal.expiry_policy() if renewal is not None else None
        self._reconnector = (
            Reconnector(options.reconnect, hosts.ReconnectHost(self), expiry=expiry)
            if options.reconnect is not None or renewal is not None
            else None
        )
        self._renewer = Renewer(renewal, hosts.RenewHost(self)) if renewal is not None else None
        self._background = OwnedTasks(self._background_failed)
        self._persistence = Persistence(options, emit)
        self._start = ConversationStart(self._persistence, options, self._translator)
        host = hosts.AgentHost(self)
        active = self._switcher.active
        self._tools = ToolRunner(
            host,
            self._background,
            active,
            delivery_attempts=options.tool_output_attempts,
            rejection_message=options.tool_rejection_message,
            observer=self._persistence,
            error_formatter=options.tool_error_formatter,
            context=options.context,
        )
        self._input_guardrails = InputGuardrailRunner(
            host, self._background, active, refusal=options.input_guardrail_refusal
        )
        self._guardrails = GuardrailRunner(
            host, self._background, active, debounce_chars=options.guardrail_debounce_chars
        )
        self._speech = SpeechTracker(lambda: self._protocol, emit, self._playback)
        self._mcp = hosts.mcp_runner(self)
        self._away = hosts.away_watch(self, options, emit)
        self._recovery = recovery_part(
            options, self._interrupter, hosts.RecoveryHost(self), self._background, emit
        )
        # The audio first (it plays as soon as it arrives), then what cuts it; speech handles
        # before the translated events, these before the agent features (a tool call starts
        # once its item is in the history), tracing, then metrics (after response_done).
        parts: list[Any] = [self._feed, self._interrupter, self._recovery, self._reconnector]
        parts += [self._renewer]
        parts += [self._persistence, self._switcher, self._speech, self._translator, self._away]
        parts += [self._tools]
        parts += [self._mcp, self._guardrails, self._input_guardrails, self._tracer, self._metrics]
        self._dispatcher = Dispatcher(tuple(filter(None, parts)), self._handling_failed)

    def _new_protocol(self) -> RealtimeProtocol:
        return RealtimeProtocol(
            ids=self._ids,
            update_log=self._update_log,
            max_history_items=self._options.max_history_items,
        )

    def __repr__(self) -> str:
        agent = self._switcher.agent
        name = f", agent={agent.name!r}" if agent is not None else ""
        return f"<RealtimeSession {self._state.value} url={self._url!r}{name}>"

    # --- lifecycle --------------------------------------------------------------------------------

    async def __aenter__(self) -> RealtimeSession:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the connection and send the initial ``session.update`` (see the module
        docstring). A session connects once; make a new one to connect again."""
        if self._state is not SessionState.NEW:
            raise InvalidState(
                f"connect() on a session that is {self._state.value}: a session connects once, "
                "make a new RealtimeSession"
            )
        self._state = SessionState.CONNECTING
        self._closed_event = asyncio.Event()
        self._tracer.session_started(**{"voxwire.url": self._options.primary_url})
        try:
            self._switcher.agent = await self._start.before_open(self._switcher.agent)
            await self._open()
            await self._start.after_open(self._protocol, self._pump.flush, self._tools)
        except BaseException as exc:
            # Python skips __aexit__ when __aenter__ raises: release here what was acquired.
            await self._shutdown(ev.CloseEvent(reason="error", error=exc, detail="connect failed"))
            if self._close_requested and isinstance(exc, SessionClosed | TransportClosed):
                raise SessionClosed("the session was closed while connecting") from exc
            raise
        self._state = SessionState.OPEN

    async def _open(self) -> None:
        transport, self._url = await self._dialer.open()
        self._pump.transport = transport
        self._check_close_requested()
        self._receive_task = asyncio.create_task(
            self._receive_loop(transport), name="voxwire-client-receive"
        )
        # Everything dynamic about the agent is settled before anything is sent for it.
        resolved = await self._switcher.resolve_initial()
        config = self._switcher.initial_config(resolved)
        self._check_close_requested()
        event = self._protocol.send_session_update(config, origin="session")
        assert event.event_id is not None
        waiter = None
        if self._options.wait_for_session_updated:
            waiter = self._waiters.expect(event.event_id, "the session configuration")
        await self._pump.flush()
        if waiter is not None:
            try:
                await waiter
            finally:
                self._waiters.forget(event.event_id)
        self._check_close_requested()
        if self._close_event is not None:
            raise SessionClosed(f"the connection ended while connecting: {self._describe_close()}")
        self._switcher.started(resolved)
        if self._microphone is not None:
            self._microphone.start()

    @classmethod
    def resume(
        cls, source: ResumeSource, conversation_id: str | None = None, **options: Any
    ) -> RealtimeSession:
        """A session going on with a stored conversation (``agent=``, ``agents=``, constructor
        options): replay, agent, approvals, undelivered outputs at ``connect()``; see
        :mod:`voxwire.asyncio.persistence.resumption` and docs/persistence.md."""
        snapshot, agents, options = resume_options(source, conversation_id, options)
        session = cls(**options)
        session._start.resume_from(snapshot, agents)
        return session

    def _check_close_requested(self) -> None:
        if self._close_requested:
            raise SessionClosed("the session was closed while connecting")

    async def close(self) -> None:
        """End the session: stop the receive loop, close the connection, wake every iterator.
        Idempotent; safe from any task and concurrently (every caller waits for the same
        shutdown). Cancelling one caller does not stop the shutdown."""
        if self._state is SessionState.NEW:
            self._state = SessionState.CLOSED
            self._queue.close()
            return
        if self._state is SessionState.CONNECTING:
            # connect() notices at its next step and releases what it holds.
            self._close_requested = True
            self._waiters.fail_all(SessionClosed("the session was closed while connecting"))
            self._dialer.abort()
            assert self._closed_event is not None
            await self._closed_event.wait()
            return
        if self._shutdown_task is None:
            if self._state in (SessionState.OPEN, SessionState.RECONNECTING):
                self._state = SessionState.CLOSING
            self._shutdown_task = asyncio.create_task(
                self._shutdown(ev.CloseEvent(reason="client_closed")),
                name="voxwire-client-close",
            )
        await asyncio.shield(self._shutdown_task)

    async def _shutdown(self, default: ev.CloseEvent) -> None:
        """Release everything, in order; safe to run again (each step is idempotent)."""
        try:
            # Receiving stops first: an event that arrives while the tasks below wind down
            # would start work the closing session refuses (and report that as an error).
            task = self._receive_task
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                await asyncio.wait([task])
            await self._background.aclose()  # tool calls and guardrail checks: cancelled
            await self._stop_watching()
            if self._pump.transport is not None:
                try:
                    await self._pump.transport.close()
                except Exception:  # already broken: nothing more to release
                    log.debug("closing the transport failed", exc_info=True)
        finally:
            self._finish(self._close_event or default)

    async def _stop_watching(self) -> None:
        """Stop the microphone and the playback monitor; metrics report what still waited for
        playback."""
        if self._microphone is not None:
            self._microphone.stop()
        if self._playback is not None:
            await self._playback.aclose()
        if self._renewer is not None:
            await self._renewer.aclose()
        await self._dialer.aclose()
        self._metrics.close()
        await self._switcher.aclose()  # local MCP servers: their processes stopped
        await self._persistence.aclose()

    def _finish(self, close: ev.CloseEvent) -> None:
        """The terminal state: the close event last, iterators woken, waiters failed."""
        if self._close_event is None:
            self._close_event = close
        ended = self._switcher.ended()
        if ended is not None and not self._queue.closed:
            self._queue.put(ended)
        if not self._queue.closed:
            self._queue.put(self._close_event)
            self._queue.close()
        self._waiters.fail_all(SessionClosed(f"the session closed: {self._describe_close()}"))
        self._speech.close(f"the session closed: {self._describe_close()}")
        self._tracer.session_ended(self._close_event.reason, self._close_event.error)
        self._state = SessionState.CLOSED
        if self._closed_event is not None:
            self._closed_event.set()

    def _describe_close(self) -> str:
        close = self._close_event
        if close is None:
            return "not closed"
        return close.detail or (str(close.error) if close.error else close.reason)

    # --- the pump ---------------------------------------------------------------------------------

    async def _receive_loop(self, transport: Transport) -> None:
        """Pump the connection until it ends; with a reconnect policy, an abnormal end is
        followed by a new connection (asyncio/connection/reconnect.py) and the pumping goes on.
        Owned and awaited by the session."""
        while True:
            close = await self._pump.run(transport)
            if self._pump.transport not in (transport, None) and self._state is SessionState.OPEN:
                transport = (
                    self._pump.transport
                )  # renewed (asyncio/connection/renewal.py): pump the new one
                continue
            reconnector = self._reconnector
            if (
                reconnector is None
                or self._state is not SessionState.OPEN
                or not reconnector.should_reconnect(close)
            ):
                self._close_event = self._close_event or close
                break
            self._state = SessionState.RECONNECTING
            outcome = await reconnector.recover(close)
            if isinstance(outcome, ev.CloseEvent):
                self._close_event = self._close_event or outcome
                break
            transport = outcome
        # The connection is over: release it and end the iteration. (A cancellation — from
        # close() — skips this: close() does the same.)
        try:
            await transport.close()
        except Exception:
            log.debug("closing the transport failed", exc_info=True)
        await self._background.aclose()
        await self._stop_watching()
        self._finish(self._close_event or ev.CloseEvent(reason="client_closed"))

    def _dispatch(self, events: Iterable[se.ReceivedEvent]) -> None:
        """Every event to every part that takes it, in order (asyncio/dispatch.py)."""
        self._dispatcher(events)

    def _handling_failed(self, event: se.ReceivedEvent, exc: Exception) -> None:
        log.error("handling %s failed", type(event).__name__, exc_info=exc)
        name = getattr(event, "type", type(event).__name__)
        self._queue.put(ev.failure(f"handling {name}", exc, "session"))

    def _playback_drained(self) -> None:
        for out in self._translator.playback_drained():
            self._queue.put(out)

    def _report_playback_error(self, exc: BaseException) -> None:
        log.error("watching the audio output failed", exc_info=exc)
        self._queue.put(ev.failure("watching the audio output", exc, "audio_output"))

    def _emit_metrics(self, metrics: Metrics) -> None:
        if isinstance(metrics, ResponseMetrics) and self._tracer.enabled:
            self._tracer.response_metrics(metrics)
        self._queue.put(ev.MetricsCollectedEvent(metrics=metrics))

    def _background_failed(self, kind: str, exc: BaseException) -> None:
        """An exception escaped a tool or guardrail task (the runners catch the expected ones)."""
        source: ev.ErrorSource = "guardrail" if kind == "guardrail" else "tool"
        self._queue.put(ev.failure(f"a background {kind} task", exc, source))

    # --- events -----------------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[ev.SessionEvent]:
        return QueueIterator(self._queue)

    async def next_event(self) -> ev.SessionEvent:
        """The next event; raises :class:`StopAsyncIteration` once the session is over and every
        event was handed out."""
        try:
            return await self._queue.get()
        except QueueClosed:
            raise StopAsyncIteration from None
