"""voxwire.asyncio: the layer that awaits — a Realtime session over websockets.

* :class:`RealtimeSession` — connect, send, ``async for event in session``, close
  (docs/session.md).
* :mod:`~voxwire.asyncio.events` — the typed events a session hands out.
* :mod:`~voxwire.asyncio.events.history` — ``session.history``, the conversation as the server
holds it.
* :mod:`~voxwire.asyncio.connection.transport` — the connection seam (:class:`Transport`,
  :class:`ConnectRequest`, the websocket connector); :mod:`voxwire.testing` plugs in there.
* :mod:`~voxwire.asyncio.events.translate` — wire events to session events, without I/O.
* :mod:`~voxwire.asyncio.connection.reconnect` — :class:`ReconnectPolicy`: reconnecting after a lost
  connection and resuming the conversation on the new server session.
* :mod:`~voxwire.asyncio.connection.renewal` — :class:`RenewalPolicy`: moving to a new server
  session before the maximum session duration; :mod:`~voxwire.asyncio.connection.health` — endpoint
  health.
* :mod:`~voxwire.asyncio.agents.tools` / :mod:`~voxwire.asyncio.agents.guardrails` — running the
  agent's function tools and output guardrails; :mod:`~voxwire.asyncio.supervisor` owns their tasks
  (docs/agents.md).
"""

from voxwire.asyncio.agents.mcp_local import McpConnection
from voxwire.asyncio.connection.calls import CallControl
from voxwire.asyncio.connection.endpoint import DEFAULT_MODEL, DEFAULT_URL, ApiKeySource
from voxwire.asyncio.connection.health import EndpointStatus
from voxwire.asyncio.connection.reconnect import ReconnectPolicy, SessionReconnecting
from voxwire.asyncio.connection.renewal import RenewalPolicy
from voxwire.asyncio.connection.transport import (
    Connector,
    ConnectRequest,
    Transport,
    TransportClosed,
    WebSocketTransport,
    connect_websocket,
)
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
    DtmfEvent,
    EndpointHealthEvent,
    ErrorEvent,
    ErrorSource,
    FunctionToolsExecutedEvent,
    GuardrailTrippedEvent,
    HandoffEvent,
    HistoryAddedEvent,
    HistoryUpdatedEvent,
    InputGuardrailTrippedEvent,
    InterruptionRecoveredEvent,
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
    UsageUpdatedEvent,
    UserInputTranscribedEvent,
    UserState,
    UserStateChangedEvent,
)
from voxwire.asyncio.events.history import (
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
from voxwire.asyncio.events.mcp import (
    McpApprovalRequestedEvent,
    McpCallDoneEvent,
    McpCallStartedEvent,
    McpToolListing,
    McpToolsChangedEvent,
)
from voxwire.asyncio.events.speech import SpeechHandle
from voxwire.asyncio.session import RealtimeSession, SessionState

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
    "CallControl",
    "CloseEvent",
    "CloseReason",
    "ConnectRequest",
    "ConnectionFailed",
    "Connector",
    "ConversationItemAddedEvent",
    "DtmfEvent",
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
    "InterruptionRecoveredEvent",
    "McpApprovalRequestedEvent",
    "McpCallDoneEvent",
    "McpCallStartedEvent",
    "McpConnection",
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
    "UsageUpdatedEvent",
    "UserInputTranscribedEvent",
    "UserState",
    "UserStateChangedEvent",
    "WebSocketTransport",
    "connect_websocket",
]
