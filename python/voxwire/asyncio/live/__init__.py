"""GPT-Live sessions: a :class:`~voxwire.agents.RealtimeAgent` over OpenAI's full-duplex Live
API (docs/live.md). The room sits beside the Realtime session's parts and reuses them: the tool
machinery (``agents/``), the session events (``events/``), the background-task owner.

By concern: the face (``session`` and its halves ``connection``, ``handling``, ``sideband``;
``config``, ``recording``, ``spans``), its foundations (``events``, ``decision_events``,
``replies``), the listener's side (``audio/``: microphone, playback, transcripts) and the agent's
parts (``agents/``: delegation, handoffs, decisions, guarding); docs/architecture.md."""

from voxwire.asyncio.live.agents.decisions import (
    DecisionHandler,
    DecisionRefused,
    DecisionRequest,
    LiveDecisions,
    SessionDecisions,
)
from voxwire.asyncio.live.agents.delegation import (
    ClientBackend,
    DelegationAnswer,
    DelegationRequest,
)
from voxwire.asyncio.live.decision_events import DecisionItemEvent, LiveDecisionEvent
from voxwire.asyncio.live.events import (
    DelegationAnsweredEvent,
    DelegationStartedEvent,
    DtmfSentEvent,
    LiveAudioEvent,
    LiveEvent,
    LiveGuardrailTrippedEvent,
    LiveHistoryItem,
    LiveMetrics,
    LiveReconnectedEvent,
    LiveTranscriptEvent,
    LiveUsageEvent,
)
from voxwire.asyncio.live.session import LiveSession

__all__ = [
    "ClientBackend",
    "DecisionHandler",
    "DecisionItemEvent",
    "DecisionRefused",
    "DecisionRequest",
    "DelegationAnswer",
    "DelegationAnsweredEvent",
    "DelegationRequest",
    "DelegationStartedEvent",
    "DtmfSentEvent",
    "LiveAudioEvent",
    "LiveDecisionEvent",
    "LiveDecisions",
    "LiveEvent",
    "LiveGuardrailTrippedEvent",
    "LiveHistoryItem",
    "LiveMetrics",
    "LiveReconnectedEvent",
    "LiveSession",
    "LiveTranscriptEvent",
    "LiveUsageEvent",
    "SessionDecisions",
]
