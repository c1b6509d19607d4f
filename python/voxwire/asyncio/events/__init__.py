"""The events a session hands to the application (``async for event in session``).

Each is a frozen dataclass with a ``type`` string, so both ``match event: case AudioEvent(...)``
and ``if event.type == "audio"`` work, and a union of them narrows by ``type`` under mypy.

They are made from the wire events by :class:`voxwire.asyncio.events.translate.EventTranslator`; the
wire events themselves are available too, opt-in, as :class:`RawServerEvent`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias

from voxwire.agents.agent import RealtimeAgent
from voxwire.agents.batch import CallOutcome
from voxwire.agents.guardrail import GuardrailResult
from voxwire.asyncio.events.guardrail import (
    InputGuardrailTrippedEvent,
    ToolGuardrailTrippedEvent,
    ToolProgressEvent,
)
from voxwire.asyncio.events.history import HistoryItem
from voxwire.asyncio.events.mcp import (
    McpApprovalRequestedEvent,
    McpCallDoneEvent,
    McpCallStartedEvent,
    McpToolsChangedEvent,
)
from voxwire.asyncio.events.speech import SpeechHandle
from voxwire.asyncio.observability.metrics import Metrics, ResponseMetrics, SessionMetrics
from voxwire.protocol.gate import ResponseSource
from voxwire.protocol.objects import StatusDetails, Usage
from voxwire.protocol.server_events import ReceivedEvent

__all__ = [
    "AgentEndEvent",
    "AgentStartEvent",
    "AgentState",
    "AgentStateChangedEvent",
    "AssistantTranscriptDeltaEvent",
    "AssistantTranscriptDoneEvent",
    "AudioEndEvent",
    "AudioEvent",
    "AudioInterruptedEvent",
    "CloseEvent",
    "CloseReason",
    "ConversationItemAddedEvent",
    "DtmfEvent",
    "EndpointHealthEvent",
    "ErrorEvent",
    "ErrorSource",
    "FunctionToolsExecutedEvent",
    "GuardrailTrippedEvent",
    "HandoffEvent",
    "HistoryAddedEvent",
    "HistoryUpdatedEvent",
    "InputGuardrailTrippedEvent",
    "InterruptionRecoveredEvent",
    "MetricsCollectedEvent",
    "RawServerEvent",
    "ReconnectedEvent",
    "ReconnectingEvent",
    "RenewalReason",
    "RenewedEvent",
    "ResponseDoneEvent",
    "ResponseStartedEvent",
    "ServerEventConsumer",
    "SessionEvent",
    "SpeechCreatedEvent",
    "SpeechSource",
    "ToolApprovalRequestedEvent",
    "ToolEndEvent",
    "ToolGuardrailTrippedEvent",
    "ToolProgressEvent",
    "ToolStartEvent",
    "UsageUpdatedEvent",
    "UserInputTranscribedEvent",
    "UserState",
    "UserStateChangedEvent",
    "droppable",
    "failure",
]

AgentState = Literal["initializing", "idle", "listening", "thinking", "speaking"]
"""``initializing`` until the server's ``session.created``; then ``listening`` (turn detection
on: the server waits for the user) or ``idle`` (turn detection off: nothing happens until the
application asks); ``thinking`` from ``response.created`` to its first text or audio;
``speaking`` until the last response in progress is done."""

UserState = Literal["listening", "speaking", "away"]
"""``speaking`` between the server's ``speech_started`` and ``speech_stopped``."""

ErrorSource = Literal[
    "server",
    "protocol",
    "session",
    "transcription",
    "audio_input",
    "audio_output",
    "tool",
    "guardrail",
    "agent",
    "store",
]
"""``server``: an ``error`` event from the server; ``protocol``: a frame the protocol core
could not read; ``session``: the session failed handling an event (a bug, reported, not
fatal); ``transcription``: input transcription failed; ``audio_input``: the audio source or
its pipeline failed (the microphone stopped); ``audio_output``: audio could not be queued for
playback; ``tool``: a function tool failed, timed out, got bad arguments or its
output could not be delivered (the model was told); ``guardrail``: an output guardrail raised
(it counts as not tripped); ``agent``: a handoff could not be made (the model was told);
``store``: the conversation store failed a write (the session goes on, unrecorded)."""

SpeechSource = ResponseSource
"""Why a response was created: ``response`` (the user spoke with server VAD on, or the
application asked: ``send_message``, ``create_response``, a raw ``response.create``),
``tool_response`` (the follow-up after the calls of a response were answered; also after a
handoff), ``guardrail`` (the retry after an output guardrail cut a response), ``say``
(:meth:`RealtimeSession.say`)."""

CloseReason = Literal["client_closed", "server_closed", "connection_lost", "error"]
"""``client_closed``: :meth:`RealtimeSession.close`; ``server_closed``: the server closed the
connection normally; ``connection_lost``: it ended without a normal close; ``error``: the
session failed (``error`` says how)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AudioEvent:
    """A chunk of the assistant's audio, in the session's output format (PCM16 24 kHz
    little-endian unless configured otherwise). Not emitted when an audio output is attached:
    the audio goes straight to it."""

    type: Literal["audio"] = field(default="audio", init=False)
    item_id: str
    content_index: int
    response_id: str
    pcm: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class AudioEndEvent:
    """No more audio will come for this content part (``response.output_audio.done``)."""

    type: Literal["audio_end"] = field(default="audio_end", init=False)
    item_id: str
    content_index: int
    response_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class AudioInterruptedEvent:
    """Playback of this content part must stop: the session interrupted it (``interrupt()``, or
    the user started speaking with server VAD). ``played_ms``: what was heard, when known
    (``None``: the item was deleted as unheard, or nothing tracked playback)."""

    type: Literal["audio_interrupted"] = field(default="audio_interrupted", init=False)
    item_id: str
    content_index: int
    played_ms: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class AssistantTranscriptDeltaEvent:
    """More of what the assistant says: audio transcript or text (``modality``)."""

    type: Literal["assistant_transcript_delta"] = field(
        default="assistant_transcript_delta", init=False
    )
    item_id: str
    content_index: int
    response_id: str
    delta: str
    modality: Literal["audio", "text"]


@dataclass(frozen=True, kw_only=True, slots=True)
class AssistantTranscriptDoneEvent:
    """The whole transcript (or text) of one content part of the assistant."""

    type: Literal["assistant_transcript_done"] = field(
        default="assistant_transcript_done", init=False
    )
    item_id: str
    content_index: int
    response_id: str
    transcript: str
    modality: Literal["audio", "text"]


@dataclass(frozen=True, kw_only=True, slots=True)
class InterruptionRecoveredEvent:
    """A local barge-in was not the user taking the turn (``false_interruption=``): the agent,
    paused at the onset, plays on from exactly where it paused and nothing was truncated.
    ``reason``: ``"unconfirmed"`` (server VAD heard no speech in the window), ``"filler"`` (the
    transcript was empty or only backchannel words), ``"short"`` (speech shorter than the
    filter's ``min_turn_ms``), ``"echo"`` (the server's VAD committed a turn over the audible
    agent that the local detector, whose echo gate has a level, never heard: not answered, and
    the agent never paused); ``transcript`` when there was one; ``paused_ms``: how long the
    agent was paused."""

    type: Literal["interruption_recovered"] = field(default="interruption_recovered", init=False)
    reason: str
    transcript: str | None
    paused_ms: float


@dataclass(frozen=True, kw_only=True, slots=True)
class DtmfEvent:
    """The caller pressed a key on a phone call (``input_audio_buffer.dtmf_event_received``,
    SIP calls only): ``key`` is ``0``-``9``, ``*`` or ``#``; ``received_at`` the server's time
    of receipt (Unix seconds). :mod:`voxwire.telephony.dtmf` collects digits from these."""

    type: Literal["dtmf"] = field(default="dtmf", init=False)
    key: str
    received_at: int


@dataclass(frozen=True, kw_only=True, slots=True)
class UserInputTranscribedEvent:
    """What the user said (input transcription on): ``transcript`` so far, ``is_final`` once
    the transcription completed."""

    type: Literal["user_input_transcribed"] = field(default="user_input_transcribed", init=False)
    item_id: str
    content_index: int
    transcript: str
    is_final: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class HistoryAddedEvent:
    """An item joined the conversation (``session.history`` has it, in server order)."""

    type: Literal["history_added"] = field(default="history_added", init=False)
    item: HistoryItem


@dataclass(frozen=True, kw_only=True, slots=True)
class HistoryUpdatedEvent:
    """Items changed (completed, transcribed, truncated, deleted); ``history`` is the whole
    history after the change."""

    type: Literal["history_updated"] = field(default="history_updated", init=False)
    history: tuple[HistoryItem, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponseStartedEvent:
    """The model started a response (``response.created``)."""

    type: Literal["response_started"] = field(default="response_started", init=False)
    response_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponseDoneEvent:
    """A response ended: ``status`` completed / cancelled / incomplete / failed, with details
    and token usage."""

    type: Literal["response_done"] = field(default="response_done", init=False)
    response_id: str
    status: str | None
    status_details: StatusDetails | None = None
    usage: Usage | None = None

    @property
    def failure(self) -> str | None:
        """Why it did not complete, in words (the server's error message for ``failed``, the
        reason for ``cancelled`` / ``incomplete``); ``None`` when it completed."""
        if self.status == "completed":
            return None
        details = self.status_details
        return details.explanation if details is not None else None


@dataclass(frozen=True, kw_only=True, slots=True)
class MetricsCollectedEvent:
    """Metrics became complete (:mod:`voxwire.asyncio.observability.metrics`): a
    :class:`~voxwire.asyncio.observability.metrics.ResponseMetrics` once a response is done (with
    an audio output, once its first sample played), or a
    :class:`~voxwire.asyncio.observability.metrics.TranscriptionMetrics` when the user's audio was
    transcribed, or an :class:`~voxwire.asyncio.observability.metrics.InterruptionMetrics` per item
    an interruption cut (its truncation point and the audio dropped unplayed)."""

    type: Literal["metrics_collected"] = field(default="metrics_collected", init=False)
    metrics: Metrics


@dataclass(frozen=True, kw_only=True, slots=True)
class UsageUpdatedEvent:
    """A response's usage was counted (with its metrics): ``response`` (its tokens, audio and
    estimated cost) and the session's ``totals`` after it (docs/session.md, Usage and cost)."""

    type: Literal["usage_updated"] = field(default="usage_updated", init=False)
    response: ResponseMetrics
    totals: SessionMetrics


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentStateChangedEvent:
    type: Literal["agent_state_changed"] = field(default="agent_state_changed", init=False)
    old_state: AgentState
    new_state: AgentState


@dataclass(frozen=True, kw_only=True, slots=True)
class UserStateChangedEvent:
    type: Literal["user_state_changed"] = field(default="user_state_changed", init=False)
    old_state: UserState
    new_state: UserState


@dataclass(frozen=True, kw_only=True, slots=True)
class ErrorEvent:
    """Something went wrong and the session goes on when ``recoverable``. ``code``/``param``/
    ``event_id`` come from a server error (``event_id`` names the client event that failed);
    ``exception`` is set when the session itself caught one."""

    type: Literal["error"] = field(default="error", init=False)
    message: str
    source: ErrorSource
    recoverable: bool = True
    code: str | None = None
    param: str | None = None
    event_id: str | None = None
    exception: BaseException | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class CloseEvent:
    """The session is over; always the last event. ``error`` is ``None`` for a normal close;
    ``code`` is the websocket close code when there was one."""

    type: Literal["close"] = field(default="close", init=False)
    reason: CloseReason
    error: BaseException | None = None
    code: int | None = None
    detail: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class ReconnectingEvent:
    """The connection was lost (or the previous attempt failed) and the session tries again
    after ``delay_s`` seconds — attempt ``attempt`` of the session's ``ReconnectPolicy``.
    ``error`` is why: the lost connection's :class:`~voxwire.asyncio.TransportClosed`, then
    each failed attempt's error. Sending raises ``SessionReconnecting`` until ``reconnected``
    (``send_audio`` drops the audio)."""

    type: Literal["reconnecting"] = field(default="reconnecting", init=False)
    attempt: int
    delay_s: float
    error: BaseException | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ReconnectedEvent:
    """A new connection to ``url`` replaced the lost one and the session goes on: the server
    has the agent's configuration again and ``items_restored`` items of the conversation
    (``items_skipped`` could not be recreated: see docs/session.md, "Reconnection").
    ``items_resent``: items the application (or a tool) had sent whose creation the lost server
    never acknowledged, sent again after the restored ones; they appear in the history when
    the new server acknowledges them."""

    type: Literal["reconnected"] = field(default="reconnected", init=False)
    url: str
    items_restored: int
    items_skipped: int = 0
    items_resent: int = 0


#: Why a session moved to a new server session: its planned renewal came due (``planned``), or
#: the server expired it first (``expired``). See :mod:`voxwire.asyncio.connection.renewal`.
RenewalReason = Literal["planned", "expired"]


@dataclass(frozen=True, kw_only=True, slots=True)
class RenewedEvent:
    """The session moved to a new server session before (``planned``) or at (``expired``) the
    maximum session duration, and goes on (``RenewalPolicy``; docs/session.md, "Renewal past the
    maximum session duration"). ``old_session_id`` / ``new_session_id``: the server's session
    ids (``None`` if a server sent none); ``switch_s``: seconds from the decision to renew (a
    turn boundary reached, or the expiry) to the new connection taking over; ``items_replayed``:
    conversation items recreated on the new server session (``items_skipped`` could not be);
    ``items_resent``: items sent during the switch that went to the new connection."""

    type: Literal["renewed"] = field(default="renewed", init=False)
    reason: RenewalReason
    url: str
    old_session_id: str | None
    new_session_id: str | None
    switch_s: float
    items_replayed: int
    items_skipped: int = 0
    items_resent: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class EndpointHealthEvent:
    """An endpoint of the session (``url`` or one of ``fallback_urls``) changed health:
    ``healthy=False`` after a failed connection (``error`` says why; the session probes it in the
    background), ``True`` once it answers again (it is then preferred again, in its configured
    order). ``session.endpoints`` shows them all."""

    type: Literal["endpoint_health"] = field(default="endpoint_health", init=False)
    url: str
    healthy: bool
    error: BaseException | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class RawServerEvent:
    """A server event as the protocol core decoded it (opt-in: ``raw_server_events=True``;
    audio deltas are not repeated here — they are :class:`AudioEvent`)."""

    type: Literal["raw_server_event"] = field(default="raw_server_event", init=False)
    event: ReceivedEvent


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentStartEvent:
    """``agent`` became the session's agent (after ``connect()``'s first update, a handoff or
    ``update_agent``)."""

    type: Literal["agent_start"] = field(default="agent_start", init=False)
    agent: RealtimeAgent


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentEndEvent:
    """``agent`` stopped being the session's agent (a switch, or the end of the session)."""

    type: Literal["agent_end"] = field(default="agent_end", init=False)
    agent: RealtimeAgent


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffEvent:
    """The model transferred the conversation (``call_id`` of its transfer call); the server
    accepted the new agent's configuration. ``agent_end`` / ``agent_start`` follow."""

    type: Literal["handoff"] = field(default="handoff", init=False)
    from_agent: RealtimeAgent
    to_agent: RealtimeAgent
    call_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolStartEvent:
    """A function tool starts running (after its approval, if it needed one)."""

    type: Literal["tool_start"] = field(default="tool_start", init=False)
    call_id: str
    name: str
    arguments: str
    agent: RealtimeAgent


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolEndEvent:
    """A function tool finished: ``output`` is what the model gets (an error message when it
    raised or timed out — then ``error`` holds the exception)."""

    type: Literal["tool_end"] = field(default="tool_end", init=False)
    call_id: str
    name: str
    arguments: str
    agent: RealtimeAgent
    output: str
    error: BaseException | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolApprovalRequestedEvent:
    """The call waits for ``session.approve_tool_call(call_id)`` or
    ``session.reject_tool_call(call_id, message=...)``."""

    type: Literal["tool_approval_requested"] = field(default="tool_approval_requested", init=False)
    call_id: str
    name: str
    arguments: str
    agent: RealtimeAgent


@dataclass(frozen=True, kw_only=True, slots=True)
class FunctionToolsExecutedEvent:
    """Every call the session ran for ``response_id`` has its output in the conversation;
    ``outcomes`` in call order. ``response_requested``: the follow-up response was asked for."""

    type: Literal["function_tools_executed"] = field(default="function_tools_executed", init=False)
    response_id: str
    outcomes: tuple[CallOutcome, ...]
    response_requested: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class SpeechCreatedEvent:
    """A response of the conversation started, and why (see :data:`SpeechSource`).
    ``user_initiated``: the application asked for it (``say``, ``create_response``, a message,
    a raw ``response.create``); ``False`` for server VAD's responses and the session's own
    follow-ups (tools, guardrails). ``handle``: its :class:`~voxwire.asyncio.SpeechHandle`
    (the one ``say()`` / ``create_response()`` returned, or one made for it)."""

    type: Literal["speech_created"] = field(default="speech_created", init=False)
    response_id: str
    source: SpeechSource
    user_initiated: bool = False
    handle: SpeechHandle | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ConversationItemAddedEvent:
    """An item is complete in the conversation (``conversation.item.done``): a user or
    assistant message with its final content, a function call or its output."""

    type: Literal["conversation_item_added"] = field(default="conversation_item_added", init=False)
    item: HistoryItem


@dataclass(frozen=True, kw_only=True, slots=True)
class GuardrailTrippedEvent:
    """Output guardrails tripped on ``transcript`` of ``item_id``: the response was cut
    (``audio_interrupted`` tells the player what to drop), the model was told and asked to
    answer again. Once per response."""

    type: Literal["guardrail_tripped"] = field(default="guardrail_tripped", init=False)
    response_id: str
    item_id: str
    transcript: str
    guardrails: tuple[str, ...]
    results: tuple[GuardrailResult, ...]


SessionEvent: TypeAlias = (
    AudioEvent
    | AudioEndEvent
    | AudioInterruptedEvent
    | AssistantTranscriptDeltaEvent
    | AssistantTranscriptDoneEvent
    | UserInputTranscribedEvent
    | HistoryAddedEvent
    | HistoryUpdatedEvent
    | DtmfEvent
    | InterruptionRecoveredEvent
    | ResponseStartedEvent
    | ResponseDoneEvent
    | MetricsCollectedEvent
    | UsageUpdatedEvent
    | AgentStateChangedEvent
    | UserStateChangedEvent
    | ErrorEvent
    | CloseEvent
    | RawServerEvent
    | ReconnectingEvent
    | ReconnectedEvent
    | RenewedEvent
    | EndpointHealthEvent
    | AgentStartEvent
    | AgentEndEvent
    | HandoffEvent
    | ToolStartEvent
    | ToolEndEvent
    | ToolApprovalRequestedEvent
    | FunctionToolsExecutedEvent
    | SpeechCreatedEvent
    | ConversationItemAddedEvent
    | GuardrailTrippedEvent
    | McpToolsChangedEvent
    | McpApprovalRequestedEvent
    | McpCallStartedEvent
    | McpCallDoneEvent
    | InputGuardrailTrippedEvent
    | ToolGuardrailTrippedEvent
    | ToolProgressEvent
)
"""Every event a session hands out."""


class ServerEventConsumer(Protocol):
    """A part of the session that sees every server event, in the order the protocol core hands
    them out (``RealtimeSession._dispatch``): the audio output feed, interruptions,
    reconnection, the agent switcher, the translator into these events, tools, guardrails,
    tracing, metrics."""

    def on_server_event(self, event: ReceivedEvent) -> None: ...


def droppable(event: SessionEvent) -> bool:
    """Events superseded by what follows them (the session queue's drop policy)."""
    return isinstance(event, AudioEvent | AssistantTranscriptDeltaEvent | RawServerEvent) or (
        isinstance(event, UserInputTranscribedEvent) and not event.is_final
    )


def failure(what: str, exc: BaseException, source: ErrorSource) -> ErrorEvent:
    """The ``error`` event for an exception the session caught in ``what`` and went on."""
    return ErrorEvent(message=f"{what} failed: {exc!r}", source=source, exception=exc)
