"""voxwire.asyncio: the layer that awaits — a Realtime session over websockets.

* :class:`RealtimeSession` — connect, send, ``async for event in session``, close
  (docs/session.md).
* :mod:`~voxwire.asyncio.events` — the typed events a session hands out.
* :mod:`~voxwire.asyncio.history` — ``session.history``, the conversation as the server holds it.
* :mod:`~voxwire.asyncio.transport` — the connection seam (:class:`Transport`,
  :class:`ConnectRequest`, the websocket connector); :mod:`voxwire.testing` plugs in there.
* :mod:`~voxwire.asyncio.translate` — wire events to session events, without I/O.
* :mod:`~voxwire.asyncio.reconnect` — :class:`ReconnectPolicy`: reconnecting after a lost
  connection and resuming the conversation on the new server session.
* :mod:`~voxwire.asyncio.renewal` — :class:`RenewalPolicy`: moving to a new server session
  before the maximum session duration; :mod:`~voxwire.asyncio.health` — endpoint health.
* :mod:`~voxwire.asyncio.tools` / :mod:`~voxwire.asyncio.guardrails` — running the agent's
  function tools and output guardrails; :mod:`~voxwire.asyncio.supervisor` owns their tasks
  (docs/agents.md).
"""

from voxwire.asyncio.endpoint import DEFAULT_MODEL, DEFAULT_URL, ApiKeySource
from voxwire.asyncio.errors import ConnectionFailed, SessionClosed
from voxwire.asyncio.events import (
    AgentEndEvent,
    AgentStartEvent,
    AgentState,
    AgentStateChangedEvent,
    AssistantTranscriptDeltaEvent,
    AssistantTranscriptDoneEvent,
    AudioEndEvent,
    AudioEvent,
    AudioInterruptedEvent,
    CloseEvent,
    CloseReason,
    ConversationItemAddedEvent,
    EndpointHealthEvent,
    ErrorEvent,
    ErrorSource,
    FunctionToolsExecutedEvent,
    GuardrailTrippedEvent,
    HandoffEvent,
    HistoryAddedEvent,
    HistoryUpdatedEvent,
    InputGuardrailTrippedEvent,
    RawServerEvent,
    ReconnectedEvent,
    ReconnectingEvent,
    RenewalReason,
    RenewedEvent,
    ResponseDoneEvent,
    ResponseStartedEvent,
    SessionEvent,
    SpeechCreatedEvent,
    SpeechSource,
    ToolApprovalRequestedEvent,
    ToolEndEvent,
    ToolGuardrailTrippedEvent,
    ToolProgressEvent,
    ToolStartEvent,
    UserInputTranscribedEvent,
    UserState,
    UserStateChangedEvent,
)
from voxwire.asyncio.health import EndpointStatus
from voxwire.asyncio.history import (
    AudioContent,
    HistoryContent,
    HistoryFunctionCall,
    HistoryFunctionCallOutput,
    HistoryItem,
    HistoryMessage,
    HistoryOther,
    ImageContent,
    TextContent,
)
from voxwire.asyncio.mcp_events import (
    McpApprovalRequestedEvent,
    McpCallDoneEvent,
    McpCallStartedEvent,
    McpToolListing,
    McpToolsChangedEvent,
)
from voxwire.asyncio.reconnect import ReconnectPolicy, SessionReconnecting
from voxwire.asyncio.renewal import RenewalPolicy
from voxwire.asyncio.session import RealtimeSession, SessionState
from voxwire.asyncio.speech import SpeechHandle
from voxwire.asyncio.transport import (
    Connector,
    ConnectRequest,
    Transport,
    TransportClosed,
    WebSocketTransport,
    connect_websocket,
)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_URL",
    "AgentEndEvent",
    "AgentStartEvent",
    "AgentState",
    "AgentStateChangedEvent",
    "ApiKeySource",
    "AssistantTranscriptDeltaEvent",
    "AssistantTranscriptDoneEvent",
    "AudioContent",
    "AudioEndEvent",
    "AudioEvent",
    "AudioInterruptedEvent",
    "CloseEvent",
    "CloseReason",
    "ConnectRequest",
    "ConnectionFailed",
    "Connector",
    "ConversationItemAddedEvent",
    "EndpointHealthEvent",
    "EndpointStatus",
    "ErrorEvent",
    "ErrorSource",
    "FunctionToolsExecutedEvent",
    "GuardrailTrippedEvent",
    "HandoffEvent",
    "HistoryAddedEvent",
    "HistoryContent",
    "HistoryFunctionCall",
    "HistoryFunctionCallOutput",
    "HistoryItem",
    "HistoryMessage",
    "HistoryOther",
    "HistoryUpdatedEvent",
    "ImageContent",
    "InputGuardrailTrippedEvent",
    "McpApprovalRequestedEvent",
    "McpCallDoneEvent",
    "McpCallStartedEvent",
    "McpToolListing",
    "McpToolsChangedEvent",
    "RawServerEvent",
    "RealtimeSession",
    "ReconnectPolicy",
    "ReconnectedEvent",
    "ReconnectingEvent",
    "RenewalPolicy",
    "RenewalReason",
    "RenewedEvent",
    "ResponseDoneEvent",
    "ResponseStartedEvent",
    "SessionClosed",
    "SessionEvent",
    "SessionReconnecting",
    "SessionState",
    "SpeechCreatedEvent",
    "SpeechHandle",
    "SpeechSource",
    "TextContent",
    "ToolApprovalRequestedEvent",
    "ToolEndEvent",
    "ToolGuardrailTrippedEvent",
    "ToolProgressEvent",
    "ToolStartEvent",
    "Transport",
    "TransportClosed",
    "UserInputTranscribedEvent",
    "UserState",
    "UserStateChangedEvent",
    "WebSocketTransport",
    "connect_websocket",
]
