"""``RealtimeSession``: a Realtime conversation over a websocket, as the application holds it.

A thin pump around the sans-I/O :class:`~voxwire.protocol.RealtimeProtocol`: frames received go
into the protocol core, the core's events are translated into session events
(:class:`~voxwire.asyncio.translate.EventTranslator`) and queued for ``async for``; what the
core queues to send goes out in order. The core decides everything the wire implies (items and
their order, response gating, interruption); this module owns only the I/O and the lifecycle.

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
import contextlib
import enum
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec
import numpy as np
import numpy.typing as npt

from voxwire.agents.agent import (
    RealtimeAgent,
    ResolvedAgent,
    ResolvedHandoff,
    agent_session_config,
    agent_update_config,
    resolve_agent,
)
from voxwire.agents.guardrail import DEFAULT_DEBOUNCE_CHARS, default_feedback
from voxwire.asyncio import events as ev
from voxwire.asyncio.endpoint import (
    ApiKeySource,
    build_headers,
    build_url,
    is_hosted,
    resolve_api_key,
)
from voxwire.asyncio.errors import ConnectionFailed, SessionClosed
from voxwire.asyncio.guardrails import GuardrailRunner
from voxwire.asyncio.history import HistoryItem, build_history
from voxwire.asyncio.images import image_data_url
from voxwire.asyncio.metrics import Metrics, MetricsRecorder, ResponseMetrics, SessionMetrics
from voxwire.asyncio.playback import DrainWatcher, output_format
from voxwire.asyncio.queue import EventQueue, QueueClosed
from voxwire.asyncio.reconnect import (
    Reconnector,
    ReconnectPolicy,
    Restoration,
    Resumed,
    SessionReconnecting,
    SessionUpdateLog,
    items_to_resend,
    restoration_items,
)
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.asyncio.tools import DEFAULT_REJECTION_MESSAGE, ToolRunner
from voxwire.asyncio.tracing import SessionTracer, tracing_setting
from voxwire.asyncio.translate import EventTranslator, SpeechSources, turn_interrupts_response
from voxwire.asyncio.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Connector,
    ConnectRequest,
    Transport,
    TransportClosed,
    connect_websocket,
)
from voxwire.audio import PlaybackClock
from voxwire.audio.sink import PlaybackSink
from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.protocol import server_events as se
from voxwire.protocol.audio_ledger import SegmentKey
from voxwire.protocol.client_events import (
    CLIENT_EVENT_TYPES,
    ClientEvent,
    ConversationItemCreate,
    ConversationItemDelete,
    ConversationItemRetrieve,
    ConversationItemTruncate,
    InputAudioBufferAppend,
    InputAudioBufferClear,
    InputAudioBufferCommit,
    OutputAudioBufferClear,
    ResponseCancel,
    ResponseCreate,
    ResponseCreateParams,
    SessionUpdate,
)
from voxwire.protocol.codec import decode_client_event, encode_event
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.gate import GateState
from voxwire.protocol.ids import CounterIds, IdFactory
from voxwire.protocol.items import (
    ContentPart,
    InputImage,
    InputText,
    Item,
    MessageItem,
    function_call_output,
    system_message,
)
from voxwire.protocol.objects import Response, StatusDetails
from voxwire.protocol.protocol import RealtimeProtocol
from voxwire.protocol.say import say_instructions
from voxwire.protocol.server_events import ProtocolErrorEvent

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["RealtimeSession", "SessionState"]

log = logging.getLogger("voxwire.session")

_RESPONSE_PARAMS: Final = frozenset(f.name for f in msgspec.structs.fields(ResponseCreateParams))


class SessionState(enum.Enum):
    NEW = "new"
    CONNECTING = "connecting"
    OPEN = "open"
    RECONNECTING = "reconnecting"
    CLOSING = "closing"
    CLOSED = "closed"


def _droppable(event: ev.SessionEvent) -> bool:
    """Events superseded by what follows them (the queue's drop policy)."""
    return isinstance(
        event, ev.AudioEvent | ev.AssistantTranscriptDeltaEvent | ev.RawServerEvent
    ) or (isinstance(event, ev.UserInputTranscribedEvent) and not event.is_final)


class RealtimeSession:
    """One Realtime conversation. Use ``async with RealtimeSession(...) as session:`` (or
    ``connect()`` / ``close()``) and ``async for event in session``.

    Where to connect: ``url`` (default: the hosted service), ``model`` or ``call_id`` (not
    both), ``fallback_urls`` tried in order when connecting fails, ``api_key`` (text, or a
    sync/async function returning it; default ``OPENAI_API_KEY``; never logged or shown), extra
    ``headers`` (e.g. Azure's ``api-key``).

    What to ask for: ``agent`` (instructions, voice, tools) over ``config`` (a
    :class:`~voxwire.protocol.SessionConfig` or a mapping in GA, legacy or camelCase shape).

    Options: ``wait_for_session_updated`` (``connect()`` waits for the server's acknowledgement
    and raises if it rejects the configuration); ``audio_output`` (a
    :class:`~voxwire.audio.PlaybackClock`: assistant audio goes straight into it instead of
    ``audio`` events, and interruptions truncate exactly what it played);
    ``raw_server_events`` (also hand out every server event but audio deltas);
    ``max_queued_events`` (the event queue's bound; see :mod:`voxwire.asyncio.queue` for what is
    dropped when it is full); timeouts, keepalive and the maximum message size of the
    connection; ``connector`` (how to open it: default a websocket; :mod:`voxwire.testing` has a
    scripted one); ``ids`` (event and item ids, see :class:`~voxwire.protocol.IdFactory`).

    Tracing (:mod:`voxwire.asyncio.tracing`): ``tracing_disabled``, ``workflow_name``,
    ``group_id``, ``metadata`` make the service's ``session.tracing``, sent once at start;
    OpenTelemetry spans go to ``tracer_provider`` (default: the global one) when
    ``opentelemetry-api`` is installed. Metrics (:mod:`voxwire.asyncio.metrics`,
    ``session.metrics``, ``metrics_collected`` events) take their time from ``clock``
    (monotonic seconds, default :func:`time.monotonic`).

    Agent features (docs/agents.md): the agent's function tools run when the model calls them
    (``tool_output_attempts``: how often an output the connection or the server refused is
    sent again; ``tool_rejection_message``: what the model hears when the application rejects
    a call); its output guardrails check the assistant's transcript every
    ``guardrail_debounce_chars`` new characters (``None``: complete transcripts only) and, on
    a trip, the model gets ``guardrail_feedback`` (text, or a function of the tripped
    guardrails' names) as a system message before it answers again.
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
        audio_output: PlaybackClock | None = None,
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
    ) -> None:
        # Everything here is checked and stored; nothing is opened, read or started.
        if agent is not None and not isinstance(agent, RealtimeAgent):
            raise ConfigurationError(f"agent={agent!r} is invalid: expected a RealtimeAgent")
        self._url = self._primary_url = build_url(url, model=model, call_id=call_id)
        self._fallback_urls = tuple(
            build_url(other, model=model, call_id=call_id) for other in fallback_urls
        )
        if api_key is not None and not (isinstance(api_key, str) or callable(api_key)):
            raise ConfigurationError(
                "api_key is invalid: expected the key as text or a function returning it"
            )
        self._api_key = api_key
        self._headers = dict(headers or {})
        for name, value in self._headers.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise ConfigurationError(f"header {name!r} is invalid: names and values are text")
        self._agent = agent
        # Validated now (bad configuration is the caller's mistake: say so at once).
        self._base_config = agent_session_config(config, None)
        # Tracing (asyncio/tracing.py): sent once, in the first session.update, so it is kept
        # out of the base configuration that later updates are made from.
        self._tracing = tracing_setting(
            self._base_config.tracing,
            tracing_disabled=tracing_disabled,
            workflow_name=workflow_name,
            group_id=group_id,
            metadata=metadata,
        )
        self._base_config = msgspec.structs.replace(self._base_config, tracing=msgspec.UNSET)
        if not isinstance(audio_output, PlaybackClock | None):
            raise ConfigurationError(
                f"audio_output={audio_output!r} is invalid: expected a voxwire.audio.PlaybackClock"
            )
        for name, timeout in (
            ("open_timeout_s", open_timeout_s),
            ("close_timeout_s", close_timeout_s),
        ):
            if not timeout > 0:
                raise ConfigurationError(f"{name}={timeout!r} is invalid: expected seconds > 0")
        self._wait_for_session_updated = wait_for_session_updated
        self._open_timeout_s = open_timeout_s
        self._close_timeout_s = close_timeout_s
        self._ping_interval_s = ping_interval_s
        self._ping_timeout_s = ping_timeout_s
        self._max_message_bytes = max_message_bytes
        self._connector: Connector = connector if connector is not None else connect_websocket

        if not isinstance(reconnect, ReconnectPolicy | None):
            raise ConfigurationError(
                f"reconnect={reconnect!r} is invalid: expected a ReconnectPolicy or None"
            )
        # One id factory for every connection's protocol core: ids never repeat.
        self._ids: IdFactory = ids if ids is not None else CounterIds()
        self._protocol = RealtimeProtocol(ids=self._ids)
        self._sink = PlaybackSink(audio_output) if audio_output is not None else None
        self._raw_server_events = raw_server_events
        self._translator = self._new_translator(self._protocol)
        # With an audio output, agent_state stays "speaking" until the listener heard it all.
        self._drain: DrainWatcher | None = None
        if audio_output is not None:
            self._drain = DrainWatcher(
                audio_output, self._playback_drained, self._report_drain_error
            )
        self._reconnector = (
            Reconnector(reconnect, _ReconnectHost(self)) if reconnect is not None else None
        )
        self._rerequest_responses: tuple[ResponseCreateParams | None, ...] = ()
        self._resend_creates: tuple[ConversationItemCreate, ...] = ()
        self._queue: EventQueue[ev.SessionEvent] = EventQueue(
            max_queued_events, droppable=_droppable
        )
        self._state = SessionState.NEW
        self._transport: Transport | None = None
        self._receive_task: asyncio.Task[None] | None = None
        self._shutdown_task: asyncio.Task[None] | None = None
        self._closed_event: asyncio.Event | None = None
        self._close_requested = False
        self._attempt: asyncio.Future[Transport] | None = None  # the connection being opened
        self._close_event: ev.CloseEvent | None = None
        self._update_waiter: asyncio.Future[None] | None = None
        self._update_event_id: str | None = None
        self._outbox: deque[str] = deque()
        self._send_lock: asyncio.Lock | None = None
        self._muted = False
        self._muted_bytes = 0
        self._overflow_reported: set[SegmentKey] = set()
        # Metrics and tracing (asyncio/metrics.py, asyncio/tracing.py).
        self._clock: Callable[[], float] = clock if clock is not None else time.monotonic
        self._tracer = SessionTracer(
            disabled=tracing_disabled,
            tracer_provider=tracer_provider,
            attributes={
                "voxwire.agent.name": agent.name if agent is not None else None,
                "voxwire.workflow_name": workflow_name,
                "voxwire.group_id": group_id,
                "voxwire.metadata": metadata,
            },
        )
        self._metrics = MetricsRecorder(
            now=self._clock,
            emit=self._emit_metrics,
            on_error=self._report_metrics_error,
            audio_output=audio_output,
            is_out_of_band=self._is_out_of_band,
        )
        # Agent features: the active agent as resolved, the owner of tool and guardrail tasks,
        # and the runners (asyncio/tools.py, asyncio/guardrails.py).
        if not (isinstance(guardrail_feedback, str) or callable(guardrail_feedback)):
            raise ConfigurationError(
                "guardrail_feedback is invalid: expected text or a function of the tripped "
                "guardrails' names"
            )
        self._guardrail_feedback = guardrail_feedback
        self._resolved: ResolvedAgent | None = None
        self._agent_lock: asyncio.Lock | None = None
        self._assistant_audio = False
        self._speech = SpeechSources()
        self._create_in_flight = False
        self._updates_in_flight: deque[str] = deque()
        self._update_acks: dict[str, asyncio.Future[None]] = {}
        # The application's session.update changes, made again after a reconnection.
        self._app_updates = SessionUpdateLog()
        self._background = OwnedTasks(self._background_failed)
        host = _AgentHost(self)
        self._tools = ToolRunner(
            host,
            self._background,
            self._active_agent,
            delivery_attempts=tool_output_attempts,
            rejection_message=tool_rejection_message,
        )
        self._guardrails = GuardrailRunner(
            host, self._background, self._active_agent, debounce_chars=guardrail_debounce_chars
        )

    def __repr__(self) -> str:
        agent = f", agent={self._agent.name!r}" if self._agent is not None else ""
        return f"<RealtimeSession {self._state.value} url={self._url!r}{agent}>"

    # --- reading state ----------------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def url(self) -> str:
        """The URL connected to (the first that worked, once connected; it holds no
        credentials)."""
        return self._url

    @property
    def agent(self) -> RealtimeAgent | None:
        return self._agent

    @property
    def protocol(self) -> RealtimeProtocol:
        """The protocol core: the server's session, conversation, responses and audio ledger
        as acknowledged so far. Read it; send through the session."""
        return self._protocol

    @property
    def history(self) -> list[HistoryItem]:
        """The conversation as the server holds it, in server order (see
        :mod:`voxwire.asyncio.history`)."""
        return build_history(self._protocol.conversation)

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
        """Events dropped because the queue was full (see :mod:`voxwire.asyncio.queue`)."""
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
        :mod:`voxwire.asyncio.metrics`)."""
        return self._metrics.snapshot()

    @property
    def tracer(self) -> SessionTracer:
        """The session's OpenTelemetry spans; ``tool_span`` / ``handoff_span`` for the code that
        runs tools and handoffs (see :mod:`voxwire.asyncio.tracing`)."""
        return self._tracer

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
        self._send_lock = asyncio.Lock()
        self._agent_lock = asyncio.Lock()
        self._tracer.session_started(**{"voxwire.url": self._primary_url})
        try:
            await self._open()
        except BaseException as exc:
            # Python skips __aexit__ when __aenter__ raises: release here what was acquired.
            await self._shutdown(ev.CloseEvent(reason="error", error=exc, detail="connect failed"))
            if self._close_requested and isinstance(exc, SessionClosed | TransportClosed):
                raise SessionClosed("the session was closed while connecting") from exc
            raise
        self._state = SessionState.OPEN

    async def _open(self) -> None:
        transport, self._url = await self._open_connection()
        self._transport = transport
        self._check_close_requested()
        self._receive_task = asyncio.create_task(
            self._receive_loop(transport), name="voxwire-client-receive"
        )
        # Everything dynamic about the agent is settled before anything is sent for it.
        resolved = await resolve_agent(self._agent) if self._agent else None
        config = self._initial_config(resolved)
        self._check_close_requested()
        if self._wait_for_session_updated:
            self._update_waiter = asyncio.get_running_loop().create_future()
        self._update_event_id = self._send_session_update(config)
        await self._flush()
        if self._update_waiter is not None:
            try:
                await self._update_waiter
            finally:
                self._update_waiter = None
        self._check_close_requested()
        if self._close_event is not None:
            raise SessionClosed(f"the connection ended while connecting: {self._describe_close()}")
        if resolved is not None:
            self._resolved = resolved
            self._queue.put(ev.AgentStartEvent(agent=resolved.agent))

    def _initial_config(self, resolved: ResolvedAgent | None) -> SessionConfig:
        """The first ``session.update`` of a server session: the agent's configuration and the
        tracing setting (sent once per server session: again after a reconnection)."""
        config = agent_session_config(self._base_config, resolved)
        if self._tracing is not msgspec.UNSET:
            config = msgspec.structs.replace(config, tracing=self._tracing)
        return config

    def _resume_config(self) -> SessionConfig:
        """The first ``session.update`` of a resumed server session: as at ``connect()``, except
        that once the conversation holds assistant audio the voice stays the one the lost
        server spoke with — an agent change since then left the voice out (the API refuses
        it), so the listener heard no change and must hear none now."""
        config = self._initial_config(self._resolved)
        lost = self._protocol.session  # still the lost connection's protocol core
        if not self._assistant_audio or lost is None:
            return config
        voice = lost.audio.output.voice if lost.audio and lost.audio.output else msgspec.UNSET
        if voice is msgspec.UNSET:
            return config
        wire = config.to_wire()
        wire.setdefault("audio", {}).setdefault("output", {})["voice"] = msgspec.to_builtins(voice)
        return SessionConfig.from_mapping(wire)

    async def _open_connection(self) -> tuple[Transport, str]:
        """Resolve the key, then try the primary URL and the fallbacks in order; the first
        connection that opens, and its URL."""
        # The hosted service refuses connections without a key: say so before trying. (A custom
        # connector — a test double, a proxy — decides for itself.)
        required = is_hosted(self._primary_url) and self._connector is connect_websocket
        key = await resolve_api_key(self._api_key, required=required)
        self._check_close_requested()
        headers = build_headers(key, self._headers)
        del key
        failures: list[ConnectionFailed] = []
        for url in (self._primary_url, *self._fallback_urls):
            request = ConnectRequest(
                url=url,
                headers=headers,
                open_timeout_s=self._open_timeout_s,
                close_timeout_s=self._close_timeout_s,
                ping_interval_s=self._ping_interval_s,
                ping_timeout_s=self._ping_timeout_s,
                max_message_bytes=self._max_message_bytes,
            )
            try:
                return await self._connect_one(request), url
            except ConnectionFailed as exc:
                failures.append(exc)
                self._check_close_requested()
        if len(failures) == 1:
            raise failures[0]
        raise ConnectionFailed(
            "every endpoint failed: " + "; ".join(str(f) for f in failures)
        ) from failures[-1]

    async def _connect_one(self, request: ConnectRequest) -> Transport:
        # The attempt is a task of its own so that close() can abort a slow handshake at once
        # (it cancels self._attempt) instead of waiting for the handshake timeout.
        attempt = asyncio.ensure_future(self._connector(request))
        self._attempt = attempt
        try:
            done, _ = await asyncio.wait([attempt], timeout=self._open_timeout_s)
        finally:
            self._attempt = None
            if not attempt.done():  # timed out, or connect() itself was cancelled
                attempt.cancel()
                await asyncio.gather(attempt, return_exceptions=True)
        if not done:
            raise ConnectionFailed(
                f"connecting to {request.url} timed out after {self._open_timeout_s} s"
            )
        if attempt.cancelled():
            raise SessionClosed("the session was closed while connecting")
        return attempt.result()

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
            self._fail_update_waiter(SessionClosed("the session was closed while connecting"))
            if self._attempt is not None:
                self._attempt.cancel()
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
            # Tool calls and guardrail checks first: they may be sending.
            await self._background.aclose()
            task = self._receive_task
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                await asyncio.wait([task])
            await self._metrics.aclose()  # stops its playback watcher; reports what waited
            if self._drain is not None:
                await self._drain.aclose()
            if self._transport is not None:
                try:
                    await self._transport.close()
                except Exception:  # already broken: nothing more to release
                    log.debug("closing the transport failed", exc_info=True)
        finally:
            self._finish(self._close_event or default)

    def _finish(self, close: ev.CloseEvent) -> None:
        """The terminal state: the close event last, iterators woken, waiters failed."""
        if self._close_event is None:
            self._close_event = close
        if self._resolved is not None and not self._queue.closed:
            self._queue.put(ev.AgentEndEvent(agent=self._resolved.agent))
        if not self._queue.closed:
            self._queue.put(self._close_event)
            self._queue.close()
        self._fail_update_waiter(SessionClosed(f"the session closed: {self._describe_close()}"))
        for ack in self._update_acks.values():
            if not ack.done():
                ack.set_exception(SessionClosed(f"the session closed: {self._describe_close()}"))
        self._update_acks.clear()
        self._tracer.session_ended(self._close_event.reason, self._close_event.error)
        self._state = SessionState.CLOSED
        if self._closed_event is not None:
            self._closed_event.set()

    def _describe_close(self) -> str:
        close = self._close_event
        if close is None:
            return "not closed"
        return close.detail or (str(close.error) if close.error else close.reason)

    def _fail_update_waiter(self, exc: BaseException) -> None:
        if self._update_waiter is not None and not self._update_waiter.done():
            self._update_waiter.set_exception(exc)

    # --- the receive loop -------------------------------------------------------------------------

    async def _receive_loop(self, transport: Transport) -> None:
        """Pump the connection until it ends; with a reconnect policy, an abnormal end is
        followed by a new connection (asyncio/reconnect.py) and the pumping goes on. Owned and
        awaited by the session."""
        while True:
            close = await self._pump(transport)
            if (
                self._reconnector is None
                or self._state is not SessionState.OPEN
                or not self._reconnector.should_reconnect(close)
            ):
                self._close_event = self._close_event or close
                break
            resumed = await self._reconnect(close)
            if resumed is None:
                break
            transport = resumed
        # The connection is over: release it and end the iteration. (A cancellation — from
        # close() — skips this: close() does the same.)
        try:
            await transport.close()
        except Exception:
            log.debug("closing the transport failed", exc_info=True)
        await self._background.aclose()
        await self._metrics.aclose()
        if self._drain is not None:
            await self._drain.aclose()
        self._finish(self._close_event or ev.CloseEvent(reason="client_closed"))

    async def _pump(self, transport: Transport) -> ev.CloseEvent:
        """Frames in, events out, until the connection ends; how it ended."""
        try:
            await self._flush()  # what a resumption queued (tool outputs, a response request)
            while True:
                frame = await transport.recv()
                self._handle_frame(frame)
                if self._outbox:
                    await self._flush()
        except TransportClosed as closed:
            return ev.CloseEvent(
                reason="server_closed" if closed.clean else "connection_lost",
                error=None if closed.clean else closed,
                code=closed.code,
                detail=closed.describe(),
            )
        except SessionClosed as exc:  # a flush found the connection gone
            cause = exc.__cause__
            clean = isinstance(cause, TransportClosed) and cause.clean
            return ev.CloseEvent(
                reason="server_closed" if clean else "connection_lost",
                error=None if clean else cause or exc,
                code=cause.code if isinstance(cause, TransportClosed) else None,
                detail=str(exc),
            )
        except Exception as exc:  # a transport failing in an unforeseen way, or a bug of ours
            log.exception("the receive loop failed")
            return ev.CloseEvent(
                reason="error", error=exc, detail=f"the receive loop failed: {exc!r}"
            )

    # --- reconnection (the attempts and the resumption handshake are in reconnect.py) -------------

    async def _reconnect(self, lost: ev.CloseEvent) -> Transport | None:
        """The connection was lost: settle what was in flight, reconnect and resume; the new
        transport, or ``None`` when the session ends (``_close_event`` says why)."""
        assert self._reconnector is not None
        self._state = SessionState.RECONNECTING
        restoration = self._connection_lost()
        outcome = await self._reconnector.run(lost, restoration)
        if isinstance(outcome, ev.CloseEvent):
            self._close_event = self._close_event or outcome
            return None
        if self._state is not SessionState.RECONNECTING:  # close() came first
            self._close_event = self._close_event or ev.CloseEvent(reason="client_closed")
            await outcome.transport.close()
            return None
        self._resumed(outcome)
        return outcome.transport

    def _connection_lost(self) -> Restoration:
        """What was in flight on the lost connection ends here, reported as the application
        would see an interruption: playback stops (``audio_interrupted``), each response in
        progress is done with status ``cancelled`` (reason ``connection_lost``), item deletes
        and truncates not acknowledged are taken as done, agent updates waiting for an
        acknowledgement fail. Returns what to restore; what to send again (item creates not
        acknowledged, response requests not answered, the application's session updates) is
        kept for :meth:`_resumed`."""
        protocol = self._protocol
        lost = protocol.responses_in_progress
        self._rerequest_responses = protocol.unanswered_response_requests
        playing = self._sink is not None and self._sink.clock.buffered_samples > 0
        if lost or playing:
            self._interrupt(None, cancel_response=False)
        for response_id in lost:
            done = se.ResponseDone(
                event_id=f"voxwire_connection_lost_{response_id}",
                response=Response(
                    id=response_id,
                    object="realtime.response",
                    status="cancelled",
                    status_details=StatusDetails(type="cancelled", reason="connection_lost"),
                ),
            )
            self._handle_frame(encode_event(done))
        self._settle_item_changes()
        # After the deletes: an item created and deleted, neither acknowledged, stays away.
        self._resend_creates = protocol.unacknowledged_item_creates
        # Frames queued for the lost server (truncations, released requests) go nowhere.
        protocol.data_to_send()
        self._outbox.clear()
        failure = SessionReconnecting(
            "the connection was lost before the server acknowledged the session.update"
        )
        for ack in self._update_acks.values():
            if not ack.done():
                ack.set_exception(failure)
        self._updates_in_flight.clear()
        self._speech = SpeechSources()
        self._create_in_flight = False
        return restoration_items(protocol.conversation, lost)

    def _settle_item_changes(self) -> None:
        """Item deletes and truncates the lost server never acknowledged (the application's, or
        the interruption's just above) are taken as done, as if the server had confirmed them:
        the same ``conversation.item.deleted`` / ``.truncated`` go through the protocol core
        and the translator (``history_updated``), so the history drops a deleted item and cuts
        a truncated part — and the restoration, made from that history, does not bring the
        item back (a truncated assistant audio part is not restored: its transcript is gone,
        as on the server)."""
        protocol = self._protocol
        for delete in protocol.unacknowledged_item_deletes:
            deleted = se.ConversationItemDeleted(
                event_id=f"voxwire_connection_lost_{delete.event_id}", item_id=delete.item_id
            )
            self._handle_frame(encode_event(deleted))
        for truncate in protocol.unacknowledged_item_truncates:  # those of items still there
            truncated = se.ConversationItemTruncated(
                event_id=f"voxwire_connection_lost_{truncate.event_id}",
                item_id=truncate.item_id,
                content_index=truncate.content_index,
                audio_end_ms=truncate.audio_end_ms,
            )
            self._handle_frame(encode_event(truncated))

    def _resumed(self, resumed: Resumed) -> None:
        """Swap the resumed connection in (synchronously: nothing runs in between)."""
        previous = self._translator
        self._protocol = resumed.protocol
        self._translator = self._new_translator(resumed.protocol)
        self._translator.agent_state = previous.agent_state
        self._translator.waiting_for_playback = previous.waiting_for_playback
        self._transport = resumed.transport
        self._url = resumed.url
        self._outbox.clear()
        self._state = SessionState.OPEN
        items_resent = self._send_again()
        self._queue.put(
            ev.ReconnectedEvent(
                url=resumed.url,
                items_restored=resumed.items_restored,
                items_skipped=resumed.items_skipped,
                items_resent=items_resent,
            )
        )
        if previous.user_state != "listening":  # the new server has heard nothing yet
            self._queue.put(
                ev.UserStateChangedEvent(old_state=previous.user_state, new_state="listening")
            )
        for error in resumed.errors:
            self._queue.put(error)
        self._queue.put(ev.HistoryUpdatedEvent(history=tuple(self.history)))

    def _send_again(self) -> int:
        """Queue on the new connection (flushed when its pump starts) what the lost server had
        and the new one lacks, in this order: the application's session updates
        (:class:`~voxwire.asyncio.reconnect.SessionUpdateLog`: those before the last agent
        change, the agent's update again, those after it — the resumption sent the agent's
        configuration only); then what the lost server was sent and never answered: tool
        outputs computed and not acknowledged
        (the runner sends them again itself, same item ids — the tools do not run again); the
        other item creates it never acknowledged, in their original order (each once: an item
        the runner sent again is not repeated); then the ``response.create`` requests no
        response answered, with their parameters — after the items, so a message and the
        response asked for it go as message, then response. Returns how many of the lost
        connection's unacknowledged creates went again."""
        protocol = self._protocol
        self._app_updates.replay(self._send_session_update)
        unacknowledged, self._resend_creates = self._resend_creates, ()
        self._tools.connection_replaced()
        by_runner = _item_ids(protocol.unacknowledged_item_creates)
        for create in items_to_resend(unacknowledged, protocol.conversation, by_runner):
            protocol.send_item_create(create.item, previous_item_id=create.previous_item_id)
        requests, self._rerequest_responses = self._rerequest_responses, ()
        for params in requests:  # with their parameters; their speech sources are lost
            self._request_response(params, "response")
        pending = _item_ids(protocol.unacknowledged_item_creates)
        return sum(1 for create in unacknowledged if create.item.id in pending)

    def _new_translator(self, protocol: RealtimeProtocol) -> EventTranslator:
        translator = EventTranslator(
            protocol, raw=self._raw_server_events, audio_events=self._sink is None
        )
        if self._sink is not None:
            # With an audio output, agent_state stays "speaking" until the listener heard it.
            clock = self._sink.clock
            translator.playback_pending = lambda: clock.buffered_samples > 0
        return translator

    def _handle_frame(self, frame: str | bytes) -> None:
        protocol = self._protocol
        # A response.created in this frame answers our request iff one was in flight.
        self._create_in_flight = protocol.gate_state is GateState.REQUESTED
        protocol.receive_text(frame)
        for event in protocol.events_received():
            try:
                self._dispatch(event)
            except Exception as exc:  # reported, and the session goes on
                log.exception("handling %s failed", type(event).__name__)
                self._queue.put(
                    ev.ErrorEvent(
                        message=f"handling {getattr(event, 'type', type(event).__name__)} "
                        f"failed: {exc!r}",
                        source="session",
                        exception=exc,
                    )
                )
        self._outbox.extend(protocol.data_to_send())

    def _dispatch(self, event: se.ReceivedEvent) -> None:
        if isinstance(event, se.ResponseOutputAudioDelta) and self._sink is not None:
            self._play(event)
        elif isinstance(event, se.ResponseOutputAudioDone) and self._sink is not None:
            self._report_overflow(
                (event.item_id, event.content_index),
                self._sink.end((event.item_id, event.content_index)),
            )
        elif isinstance(event, se.InputAudioBufferSpeechStarted):
            self._barge_in()
        elif isinstance(event, se.ResponseDone) and self._sink is not None:
            self._sink.clock.drop_finished()
        self._resolve_update_waiter(event)
        if self._reconnector is not None:
            self._reconnector.observe(event)
        self._track_agent_events(event)
        for out in self._translator.translate(event):
            self._queue.put(out)
        if self._drain is not None and self._translator.waiting_for_playback:
            self._drain.arm()
        # Agent features after the translated events: a tool call starts once its item is in
        # the history; function_tools_executed follows the acknowledgement of the last output.
        self._tools.on_server_event(event)
        self._guardrails.on_server_event(event)
        # Tracing, then metrics (which may end a response span): after the translated events,
        # so metrics_collected follows response_done.
        if self._tracer.enabled:
            self._tracer.received(event)
        self._metrics.received(event)

    def _playback_drained(self) -> None:
        for out in self._translator.playback_drained():
            self._queue.put(out)

    def _report_drain_error(self, exc: BaseException) -> None:
        log.error("watching the audio output drain failed", exc_info=exc)
        self._queue.put(
            ev.ErrorEvent(
                message=f"watching the audio output drain failed: {exc!r}",
                source="audio_output",
                exception=exc,
            )
        )

    def _emit_metrics(self, metrics: Metrics) -> None:
        if isinstance(metrics, ResponseMetrics) and self._tracer.enabled:
            self._tracer.response_metrics(metrics)
        self._queue.put(ev.MetricsCollectedEvent(metrics=metrics))

    def _report_metrics_error(self, exc: BaseException) -> None:
        log.error("watching the audio output for metrics failed", exc_info=exc)
        self._queue.put(
            ev.ErrorEvent(
                message=f"watching the audio output for metrics failed: {exc!r}",
                source="session",
                exception=exc,
            )
        )

    def _is_out_of_band(self, response_id: str) -> bool:
        record = self._protocol.responses.get(response_id)
        return record is not None and record.out_of_band

    def _resolve_update_waiter(self, event: se.ReceivedEvent) -> None:
        waiter = self._update_waiter
        if waiter is None or waiter.done():
            return
        if isinstance(event, se.SessionUpdated):
            waiter.set_result(None)
        elif isinstance(event, se.ErrorEvent) and event.error.event_id == self._update_event_id:
            waiter.set_exception(
                ConfigurationError(
                    f"the server rejected the session configuration: {event.error.message}"
                    + (f" (param {event.error.param})" if event.error.param else "")
                )
            )

    def _play(self, event: se.ResponseOutputAudioDelta) -> None:
        assert self._sink is not None
        format_type, rate_hz = output_format(self._protocol.session)
        key = (event.item_id, event.content_index)
        self._report_overflow(key, self._sink.push(key, event.delta, format_type, rate_hz))
        self._metrics.audio_pushed(event.response_id, key)

    def _report_overflow(self, key: SegmentKey, refused_samples: int) -> None:
        if refused_samples and key not in self._overflow_reported:
            self._overflow_reported.add(key)
            self._queue.put(
                ev.ErrorEvent(
                    message=f"the audio output's ring is full: {refused_samples} samples of "
                    f"{key[0]} were dropped (give the PcmRing more capacity)",
                    source="audio_output",
                )
            )

    def _barge_in(self) -> None:
        """Server VAD heard the user start speaking. If it cuts the response
        (``interrupt_response``), the server cancels it by itself; the client stops playback and
        truncates what was heard."""
        if not turn_interrupts_response(self._protocol.session):
            return
        playing = self._sink is not None and self._sink.clock.buffered_samples > 0
        if playing or self._protocol.responses_in_progress:
            self._interrupt(None, cancel_response=False)

    # --- sending ----------------------------------------------------------------------------------

    def _require_open(self) -> None:
        if self._state is SessionState.OPEN:
            return
        if self._state is SessionState.RECONNECTING:
            raise SessionReconnecting(
                "the session is reconnecting after the connection was lost: wait for the "
                "'reconnected' event and send again (or the 'close' event if it gives up)"
            )
        if self._state is SessionState.CLOSING:
            raise SessionClosed("the session is closing")
        if self._state is SessionState.CLOSED:
            raise SessionClosed(f"the session is closed ({self._describe_close()})")
        raise InvalidState(
            f"the session is {self._state.value}: use 'async with session' or await "
            "session.connect() first"
        )

    async def _flush(self) -> None:
        """Send what the protocol core queued, in order (one sender at a time)."""
        self._outbox.extend(self._protocol.data_to_send())
        if not self._outbox:
            return
        assert self._send_lock is not None
        assert self._transport is not None
        async with self._send_lock:
            while self._outbox:
                frame = self._outbox.popleft()
                try:
                    await self._transport.send(frame)
                except TransportClosed as exc:
                    self._outbox.clear()
                    raise SessionClosed(f"the connection is closed: {exc.describe()}") from exc

    async def send_audio(
        self, pcm: bytes | bytearray | memoryview | npt.NDArray[np.int16], *, commit: bool = False
    ) -> None:
        """Append audio to the server's input buffer, in the session's input format (PCM16 24 kHz
        mono little-endian unless configured): bytes, or a 1-D numpy ``int16`` array. Dropped
        while muted, and while the session reconnects (the new server's input buffer starts
        empty). ``commit=True`` commits the buffer after it (turn detection off)."""
        if self._state is SessionState.RECONNECTING:
            _audio_bytes(pcm)  # still checked: bad input is the caller's mistake either way
            return
        self._require_open()
        data = _audio_bytes(pcm)
        if self._muted:
            self._muted_bytes += len(data)
        elif data:
            self._protocol.send_input_audio(data)
        if commit:
            self._protocol.send_input_audio_commit()
            self._metrics.committed()
        await self._flush()

    async def commit_audio(self) -> None:
        """Turn the input buffer into a user item (needed when turn detection is off)."""
        self._require_open()
        self._protocol.send_input_audio_commit()
        self._metrics.committed()
        await self._flush()

    async def clear_audio(self) -> None:
        """Drop the audio in the server's input buffer."""
        self._require_open()
        self._protocol.send_input_audio_clear()
        await self._flush()

    def mute(self, muted: bool = True) -> None:
        """Stop (or resume) forwarding audio: ``send_audio`` drops it while muted."""
        self._muted = bool(muted)

    async def send_message(
        self,
        message: str | list[ContentPart] | tuple[ContentPart, ...] | Item,
        *,
        trigger_response: bool = True,
    ) -> None:
        """Add a user message (text, content parts, or any item) and, by default, ask for a
        response. The request waits while a response is in progress and coalesces with other
        waiting requests: the session never causes ``conversation_already_has_active_response``.
        """
        self._require_open()
        if isinstance(message, str):
            item: Item = MessageItem(role="user", content=[InputText(text=message)])
        elif isinstance(message, list | tuple):
            item = MessageItem(role="user", content=list(message))
        else:
            item = message
        self._protocol.send_item_create(item)
        if trigger_response:
            self._request_response(None, "response")
        await self._flush()

    async def add_image(
        self,
        image: str | bytes | bytearray | memoryview,
        *,
        detail: Literal["auto", "low", "high"] | None = None,
        trigger_response: bool = True,
    ) -> None:
        """Add a user message holding one image — PNG, JPEG, WebP or GIF bytes (the type is read
        from them), or a ``data:image/...;base64,`` URL — and, by default, ask for a response
        (gated like :meth:`send_message`). Raises :class:`ConfigurationError` at once for
        another type, a link instead of a data URL, or more than
        :data:`~voxwire.asyncio.images.MAX_IMAGE_BYTES`."""
        self._require_open()
        part = InputImage(image_url=image_data_url(image), detail=detail)
        await self.send_message([part], trigger_response=trigger_response)

    async def create_response(self, **params: Any) -> None:
        """Ask for a response (manual turn control), with per-response overrides — the fields
        of :class:`~voxwire.protocol.ResponseCreateParams` (``instructions``,
        ``output_modalities``, ``conversation="none"``, ``input``, ``metadata`` …). Gated like
        every other request."""
        self._require_open()
        unknown = sorted(set(params) - _RESPONSE_PARAMS)
        if unknown:
            raise ConfigurationError(
                f"create_response() got unknown parameter(s) {', '.join(unknown)}: expected "
                + ", ".join(sorted(_RESPONSE_PARAMS))
            )
        try:
            request = msgspec.convert(params, ResponseCreateParams) if params else None
        except msgspec.ValidationError as exc:
            raise ConfigurationError(f"create_response(): {exc}") from exc
        self._request_response(request, "response")
        await self._flush()

    async def say(self, text: str) -> None:
        """Make the assistant speak ``text``, word for word: a ``response.create`` (gated like
        every other request) whose instructions ask for exactly this text and no tool call
        (:func:`voxwire.protocol.say_instructions`). Its ``speech_created`` event has source
        ``"say"``. A model follows such instructions closely but is not bound by them; the local
        server says the text exactly."""
        self._require_open()
        params = ResponseCreateParams(instructions=say_instructions(text), tool_choice="none")
        self._request_response(params, "say")
        await self._flush()

    async def cancel_response(self) -> None:
        """Cancel the response in progress, if any (without truncating audio; see
        :meth:`interrupt`)."""
        self._require_open()
        self._protocol.send_response_cancel()
        await self._flush()

    async def update_session(self, config: SessionConfig | Mapping[str, Any]) -> None:
        """Send a ``session.update`` (GA, legacy or camelCase shape). With a reconnect policy,
        the change is made again on the new server session after a reconnection (unless the
        server rejected it)."""
        self._require_open()
        self._send_session_update(config, application=True)
        await self._flush()

    async def interrupt(
        self,
        played_samples: Mapping[SegmentKey, int] | None = None,
        *,
        cancel_response: bool = True,
    ) -> None:
        """The user interrupted: cancel the response, stop playback, and truncate each item to
        what was heard (delete items none of which was heard).

        What was heard comes from ``played_samples`` (``(item_id, content_index)`` → samples
        played, if the application plays audio itself), else from the attached audio output;
        with neither, everything received counts as heard.
        """
        self._require_open()
        self._interrupt(played_samples, cancel_response=cancel_response)
        await self._flush()

    def _interrupt(
        self, played_samples: Mapping[SegmentKey, int] | None, *, cancel_response: bool
    ) -> None:
        played: dict[SegmentKey, int]
        if played_samples is not None:
            played = dict(played_samples)
        elif self._sink is not None:
            played = {
                (r.item_id, r.content_index): r.played_samples for r in self._sink.interrupt()
            }
        else:
            in_progress = set(self._protocol.responses_in_progress)
            played = {
                segment.key: segment.received_samples
                for segment in self._protocol.audio.segments()
                if segment.response_id in in_progress
            }
        in_progress_ids = list(self._protocol.responses_in_progress)
        sent = self._protocol.interrupt(played, cancel_response=cancel_response)
        if sent or played:
            self._metrics.interrupted(in_progress_ids)
        for event in sent:
            if isinstance(event, ConversationItemTruncate):
                self._queue.put(
                    ev.AudioInterruptedEvent(
                        item_id=event.item_id,
                        content_index=event.content_index,
                        played_ms=event.audio_end_ms,
                    )
                )
            elif isinstance(event, ConversationItemDelete):
                self._queue.put(ev.AudioInterruptedEvent(item_id=event.item_id, content_index=0))
        self._outbox.extend(self._protocol.data_to_send())

    async def update_history(self, items: Sequence[Item]) -> None:
        """Make the server's conversation ``items``: deletes and creates (see
        :meth:`~voxwire.protocol.RealtimeProtocol.update_history`); ``session.history``
        follows when the server confirms."""
        self._require_open()
        self._protocol.update_history(items)
        await self._flush()

    async def send_raw(self, event: ClientEvent | Mapping[str, Any]) -> None:
        """Send any client event, typed or as a mapping. Known events go through the protocol
        core, so its state follows and a raw ``response.create`` is gated like the session's
        own; a type the SDK does not know is sent as given."""
        self._require_open()
        if isinstance(event, Mapping):
            if event.get("type") not in CLIENT_EVENT_TYPES:
                if not isinstance(event.get("type"), str):
                    raise ConfigurationError("send_raw(): the event needs a 'type'")
                self._outbox.extend(self._protocol.data_to_send())
                self._outbox.append(msgspec.json.encode(dict(event)).decode())
                await self._flush()
                return
            decoded = decode_client_event(msgspec.json.encode(dict(event)))
            if isinstance(decoded, ProtocolErrorEvent):
                raise ConfigurationError(f"send_raw(): {decoded.message}")
            event = decoded
        self._send_typed(event)
        await self._flush()

    def _send_typed(self, event: ClientEvent) -> None:
        p = self._protocol
        if isinstance(event, SessionUpdate):
            self._send_session_update(event.session, application=True)
        elif isinstance(event, InputAudioBufferAppend):
            p.send_input_audio(event.audio)
        elif isinstance(event, InputAudioBufferCommit):
            p.send_input_audio_commit()
            self._metrics.committed()
        elif isinstance(event, InputAudioBufferClear):
            p.send_input_audio_clear()
        elif isinstance(event, OutputAudioBufferClear):
            p.send_output_audio_clear()
        elif isinstance(event, ConversationItemCreate):
            p.send_item_create(event.item, previous_item_id=event.previous_item_id)
        elif isinstance(event, ConversationItemRetrieve):
            p.send_item_retrieve(event.item_id)
        elif isinstance(event, ConversationItemDelete):
            p.send_item_delete(event.item_id)
        elif isinstance(event, ConversationItemTruncate):
            p.send_item_truncate(event.item_id, event.content_index, event.audio_end_ms)
        elif isinstance(event, ResponseCreate):
            self._request_response(event.response, "response")
        elif isinstance(event, ResponseCancel):
            p.send_response_cancel(event.response_id)
        else:  # pragma: no cover - every ClientEvent is handled above
            self._outbox.append(encode_event(event))

    # --- agents: switching, tools, guardrails (the work itself is in tools.py / guardrails.py) --

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
        self._require_open()
        if not isinstance(agent, RealtimeAgent):
            raise ConfigurationError(f"update_agent({agent!r}): expected a RealtimeAgent")
        assert self._agent_lock is not None
        async with self._agent_lock:
            resolved = await resolve_agent(agent)
            self._require_open()
            await self._apply_agent(resolved)

    def approve_tool_call(self, call_id: str, *, always: bool = False) -> None:
        """Let the call of a ``tool_approval_requested`` event run. ``always``: also approve
        later calls of the same tool for the rest of the session. Raises
        :class:`~voxwire.exceptions.InvalidState` if no call ``call_id`` is waiting."""
        self._tools.approve(call_id, always=always)

    def reject_tool_call(
        self, call_id: str, *, message: str | None = None, always: bool = False
    ) -> None:
        """Refuse the call of a ``tool_approval_requested`` event: the tool does not run and the
        model gets ``message`` (default: the session's ``tool_rejection_message``) as the
        output. ``always``: refuse later calls of the same tool too."""
        self._tools.reject(call_id, message=message, always=always)

    def _active_agent(self) -> ResolvedAgent | None:
        return self._resolved

    async def _apply_agent(
        self, resolved: ResolvedAgent, *, handoff: tuple[RealtimeAgent, str] | None = None
    ) -> None:
        """Send the update for ``resolved``, wait for the server to accept it, then switch.
        Holds the agent lock (one switch at a time)."""
        config = agent_update_config(
            self._base_config, resolved, voice_locked=self._assistant_audio
        )
        # The application's updates sent from now on come after this change on the wire.
        mark = self._app_updates.mark()
        event_id = self._send_session_update(config)
        ack = asyncio.get_running_loop().create_future()
        self._update_acks[event_id] = ack
        try:
            await self._flush()
            await ack
        finally:
            self._update_acks.pop(event_id, None)
        self._app_updates.agent_applied(mark, config)
        previous = self._resolved
        self._resolved = resolved
        self._agent = resolved.agent
        if handoff is not None:
            self._queue.put(
                ev.HandoffEvent(from_agent=handoff[0], to_agent=resolved.agent, call_id=handoff[1])
            )
        if previous is not None:
            self._queue.put(ev.AgentEndEvent(agent=previous.agent))
        self._queue.put(ev.AgentStartEvent(agent=resolved.agent))

    async def _hand_off(self, call_id: str, target: ResolvedHandoff, source: ResolvedAgent) -> None:
        """The model called a transfer tool (from a tool task): switch like update_agent."""
        assert self._agent_lock is not None
        with self._tracer.handoff_span(source.agent.name, target.target.name):
            async with self._agent_lock:
                await target.handoff.run_on_handoff(target.target)
                resolved = await resolve_agent(target.target)
                await self._apply_agent(resolved, handoff=(source.agent, call_id))

    def _send_session_update(
        self, config: SessionConfig | Mapping[str, Any], *, application: bool = False
    ) -> str:
        """Queue a ``session.update``; its event_id. Every update is tracked so acknowledgements
        (``session.updated`` carries no event_id, but answers updates in order) find theirs.
        ``application``: the application's own change, logged (as sent, normalised) to be made
        again after a reconnection (with a reconnect policy only)."""
        event = self._protocol.send_session_update(config)
        event_id = event.event_id
        assert event_id is not None
        self._updates_in_flight.append(event_id)
        if application and self._reconnector is not None:  # kept only to be made again
            self._app_updates.sent(event_id, event.session)
        return event_id

    def _request_response(
        self, params: ResponseCreateParams | None, source: ev.SpeechSource
    ) -> None:
        """A gated ``response.create``, with its source noted for ``speech_created``."""
        if params is not None and params.conversation == "none":
            self._protocol.send_response_create(params)  # out of band: no gate, no speech
            return
        held_before = self._protocol.held_response_creates
        sent = self._protocol.send_response_create(params)
        if sent is not None or self._protocol.held_response_creates > held_before:
            self._speech.requested(source)  # not folded into an equal waiting request

    def _track_agent_events(self, event: se.ReceivedEvent) -> None:
        if isinstance(event, se.ResponseOutputAudioDelta):
            self._assistant_audio = True
        elif isinstance(event, se.SessionUpdated):
            if self._updates_in_flight:
                ack = self._update_acks.get(self._updates_in_flight.popleft())
                if ack is not None and not ack.done():
                    ack.set_result(None)
        elif isinstance(event, se.ErrorEvent):
            event_id = event.error.event_id
            self._app_updates.rejected(event_id)  # it changed nothing: never made again
            if event_id is not None and event_id in self._updates_in_flight:
                self._updates_in_flight.remove(event_id)
                ack = self._update_acks.get(event_id)
                if ack is not None and not ack.done():
                    ack.set_exception(
                        ConfigurationError(
                            f"the server rejected the agent's configuration: {event.error.message}"
                        )
                    )
            elif self._create_in_flight and event.error.code == (
                "conversation_already_has_active_response"
            ):
                self._speech.request_failed()
        elif (
            isinstance(event, se.ResponseCreated)
            and event.response.id is not None
            and not self._is_out_of_band(event.response.id)
        ):
            source = self._speech.created(answers_request=self._create_in_flight)
            self._create_in_flight = False
            self._queue.put(ev.SpeechCreatedEvent(response_id=event.response.id, source=source))

    def _trip(self, tripped: ev.GuardrailTrippedEvent) -> None:
        """Output guardrails tripped (from a guardrail task; synchronous so that the response is
        marked interrupted before anything awaits): cut it, report, tell the model, retry."""
        if self._state is not SessionState.OPEN:
            return
        self._interrupt(None, cancel_response=True)
        self._queue.put(tripped)
        feedback = self._guardrail_feedback
        text = feedback if isinstance(feedback, str) else feedback(tripped.guardrails)
        self._protocol.send_item_create(system_message(text))
        self._request_response(None, "guardrail")

    def _background_failed(self, kind: str, exc: BaseException) -> None:
        """An exception escaped a tool or guardrail task (the runners catch the expected ones)."""
        self._queue.put(
            ev.ErrorEvent(
                message=f"a background {kind} task failed: {exc!r}",
                source="guardrail" if kind == "guardrail" else "tool",
                exception=exc,
            )
        )

    # --- events -----------------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[ev.SessionEvent]:
        return _EventIterator(self._queue)

    async def next_event(self) -> ev.SessionEvent:
        """The next event; raises :class:`StopAsyncIteration` once the session is over and every
        event was handed out."""
        try:
            return await self._queue.get()
        except QueueClosed:
            raise StopAsyncIteration from None


class _EventIterator:
    """``async for`` over the session's queue (several iterators share it: each event goes to
    one of them)."""

    def __init__(self, queue: EventQueue[ev.SessionEvent]) -> None:
        self._queue = queue

    def __aiter__(self) -> _EventIterator:
        return self

    async def __anext__(self) -> ev.SessionEvent:
        try:
            return await self._queue.get()
        except QueueClosed:
            raise StopAsyncIteration from None


def _audio_bytes(pcm: bytes | bytearray | memoryview | npt.NDArray[np.int16]) -> bytes:
    if isinstance(pcm, bytes | bytearray | memoryview):
        return bytes(pcm)
    if isinstance(pcm, np.ndarray):
        if pcm.dtype != np.int16:
            raise TypeError(
                f"send_audio() got a numpy array of {pcm.dtype}: expected int16 PCM "
                "(convert float audio with (x * 32767).astype(np.int16))"
            )
        if pcm.ndim != 1 and not (pcm.ndim == 2 and pcm.shape[1] == 1):
            raise ValueError(
                f"send_audio() got an array of shape {pcm.shape}: expected mono, shape (n,) or "
                "(n, 1) (mix down with voxwire.audio.to_mono)"
            )
        return pcm.astype("<i2", copy=False).tobytes()
    raise TypeError(f"send_audio() got {type(pcm).__name__}: expected bytes or a numpy int16 array")


def _item_ids(creates: Sequence[ConversationItemCreate]) -> set[str]:
    return {create.item.id for create in creates if create.item.id is not None}


class _ReconnectHost:
    """The session as the reconnector sees it (asyncio/reconnect.py)."""

    def __init__(self, session: RealtimeSession) -> None:
        self._session = session

    def emit(self, event: ev.SessionEvent) -> None:
        self._session._queue.put(event)

    async def open_connection(self) -> tuple[Transport, str]:
        return await self._session._open_connection()

    def new_protocol(self) -> RealtimeProtocol:
        return RealtimeProtocol(ids=self._session._ids)

    def resume_config(self) -> SessionConfig:
        return self._session._resume_config()

    @property
    def restore_timeout_s(self) -> float:
        return self._session._open_timeout_s


class _AgentHost:
    """The session as the tool and guardrail runners see it (asyncio/tools.py,
    asyncio/guardrails.py): a narrow face over its internals."""

    def __init__(self, session: RealtimeSession) -> None:
        self._session = session

    def emit(self, event: ev.SessionEvent) -> None:
        self._session._queue.put(event)

    def send_output(self, call_id: str, output: str, item_id: str | None) -> tuple[str, str]:
        session = self._session
        session._require_open()
        event = session._protocol.send_item_create(
            function_call_output(call_id, output, id=item_id)
        )
        assert event.event_id is not None
        assert event.item.id is not None
        return event.event_id, event.item.id

    async def flush(self) -> None:
        await self._session._flush()

    def request_response(self) -> None:
        self._session._request_response(None, "tool_response")

    def is_out_of_band(self, response_id: str) -> bool:
        return self._session._is_out_of_band(response_id)

    def tool_span(self, name: str, call_id: str) -> contextlib.AbstractContextManager[Any]:
        return self._session._tracer.tool_span(name, call_id)

    async def hand_off(self, call_id: str, handoff: ResolvedHandoff, source: ResolvedAgent) -> None:
        await self._session._hand_off(call_id, handoff, source)

    def trip(self, event: ev.GuardrailTrippedEvent) -> None:
        self._session._trip(event)
