"""The 28 Live server events (``openai.types.live.ServerEvent``), one class per wire ``type``.

Unknown fields are kept as the official types keep them: a decoded event holds on to its frame,
and :func:`voxwire.live.codec.unknown_fields` reads them when asked. A ``type`` this module does
not know becomes the shared :class:`~voxwire.protocol.server_events.UnknownServerEvent`, a frame
that cannot be understood a :class:`~voxwire.protocol.server_events.ProtocolErrorEvent`;
neither is raised.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from msgspec import Struct

from voxwire.live.objects import (
    ContextWindow,
    DelegationInfo,
    LiveErrorInfo,
    LiveSessionResource,
    SessionUsage,
)
from voxwire.protocol.server_events import ProtocolErrorEvent, UnknownServerEvent

__all__ = [
    "SERVER_EVENT_TYPES",
    "CommentaryAppended",
    "DecisionEvent",
    "DecisionItemCreated",
    "DecisionItemDeleted",
    "DelegationCreated",
    "InfoEvent",
    "InputAudioMuted",
    "InputAudioReflected",
    "InputAudioUnmuted",
    "InputTranscriptDelta",
    "InstructionsAppended",
    "LiveErrorEvent",
    "LiveReceivedEvent",
    "LiveServerEvent",
    "OutputAudioDelta",
    "OutputAudioFixturePlayed",
    "OutputAudioFixturePlaying",
    "OutputTranscriptDelta",
    "ResponseEvent",
    "SessionClosed",
    "SessionStarted",
    "SessionUpdated",
    "SessionUsageUpdated",
    "ThinkingAppended",
    "TransportAnswered",
    "TransportDtmfReceived",
    "TransportDtmfSend",
    "TransportDtmfSent",
    "TransportFailed",
    "TransportRinging",
]


class _ServerEvent(
    Struct, tag_field="type", kw_only=True, frozen=True, dict=True, omit_defaults=True
):
    @property
    def type(self) -> str:
        """The wire ``type`` (the tag), as the official types have it."""
        return str(self.__struct_config__.tag)


class _Event(_ServerEvent, frozen=True, kw_only=True):
    event_id: str
    client_event_id: str | None = None


class SessionStarted(_Event, tag="session.started", frozen=True, kw_only=True):
    """The answer to ``session.start``: the session as created."""

    session: LiveSessionResource


class SessionUpdated(_Event, tag="session.updated", frozen=True, kw_only=True):
    """The answer to ``session.update``: the whole session after the change."""

    session: LiveSessionResource


class InputAudioMuted(_Event, tag="session.input_audio.muted", frozen=True, kw_only=True):
    """Input audio no longer reaches the model."""


class InputAudioUnmuted(_Event, tag="session.input_audio.unmuted", frozen=True, kw_only=True):
    """Input audio reaches the model again."""


class OutputAudioFixturePlaying(
    _Event, tag="session.output_audio.fixture.playing", frozen=True, kw_only=True
):
    """A fixture started playing."""


class OutputAudioFixturePlayed(
    _Event, tag="session.output_audio.fixture.played", frozen=True, kw_only=True
):
    """A fixture finished playing."""


class _Appended(_Event, frozen=True, kw_only=True):
    start_ms: int
    end_ms: int


class InstructionsAppended(
    _Appended, tag="session.instructions.appended", frozen=True, kw_only=True
):
    """Instructions took effect at ``start_ms``..``end_ms`` of the session timeline."""


class ThinkingAppended(_Appended, tag="session.thinking.appended", frozen=True, kw_only=True):
    """Thinking took effect at ``start_ms``..``end_ms``."""


class CommentaryAppended(_Appended, tag="session.commentary.appended", frozen=True, kw_only=True):
    """Commentary took effect at ``start_ms``..``end_ms``."""


class InputAudioReflected(
    _ServerEvent, tag="session.input_audio.append", frozen=True, kw_only=True
):
    """Input audio of the primary transport reflected to a sideband (before muting)."""

    audio: bytes


class OutputAudioDelta(_ServerEvent, tag="session.output_audio.delta", frozen=True, kw_only=True):
    """Model audio; ``start_ms``/``end_ms`` place it on the session timeline."""

    delta: bytes
    start_ms: int | None = None
    end_ms: int | None = None


class _TranscriptDelta(_Event, frozen=True, kw_only=True):
    delta: str
    start_ms: int
    end_ms: int


class InputTranscriptDelta(
    _TranscriptDelta, tag="session.input_transcript.delta", frozen=True, kw_only=True
):
    """What the listener said, as it is recognised."""


class OutputTranscriptDelta(_TranscriptDelta, tag="session.output_transcript.delta", frozen=True):
    """What the model says; ``start_ms``/``end_ms`` tie it to the output audio."""


class DelegationCreated(_Event, tag="session.delegation.created", frozen=True, kw_only=True):
    """The model handed a task to ``delegation.target`` at ``offset_ms``."""

    delegation: DelegationInfo
    offset_ms: int


class DecisionEvent(_ServerEvent, tag="decision.event", frozen=True, kw_only=True):
    """A Decisions result (passed through)."""

    event_id: str
    event: dict[str, Any]
    delegation_id: str | None = None
    source_event_id: str | None = None
    source_event_type: str | None = None
    trigger_id: str | None = None


class DecisionItemCreated(_Event, tag="decision.item.created", frozen=True, kw_only=True):
    """An item was added to the Decisions context."""

    item: dict[str, Any]


class DecisionItemDeleted(_Event, tag="decision.item.deleted", frozen=True, kw_only=True):
    """An item was removed from the Decisions context."""

    item_id: str


class ResponseEvent(_Event, tag="response.event", frozen=True, kw_only=True):
    """One event of the Responses backend's stream (``event``: a Responses streaming event,
    e.g. ``response.output_item.done`` carrying a ``function_call``)."""

    event: dict[str, Any]
    delegation_id: str | None = None


class SessionUsageUpdated(_Event, tag="session.usage.updated", frozen=True, kw_only=True):
    """Usage so far."""

    usage: SessionUsage
    context_window: ContextWindow | None = None


class SessionClosed(_Event, tag="session.closed", frozen=True, kw_only=True):
    """The session ended (``reason``), with its final snapshot and usage."""

    reason: Literal["close_requested", "expired", "content", "remote_hangup", "connection_lost"]
    session: LiveSessionResource
    usage: SessionUsage


class LiveErrorEvent(_Event, tag="error", frozen=True, kw_only=True):
    """The server refused something; ``error.client_event_id`` names the client event."""

    error: LiveErrorInfo


class InfoEvent(_Event, tag="info", frozen=True, kw_only=True):
    """A notice that needs no action."""

    code: str
    message: str


class _Dtmf(_ServerEvent, frozen=True, kw_only=True):
    event: str
    event_id: str


class TransportDtmfReceived(_Dtmf, tag="transport.dtmf.received", frozen=True, kw_only=True):
    """A SIP keypress from the caller (sideband only)."""


class TransportDtmfSend(_Dtmf, tag="transport.dtmf.send", frozen=True, kw_only=True):
    """Legacy DTMF delivery notice (sideband only)."""

    client_event_id: str | None = None


class TransportDtmfSent(_Dtmf, tag="transport.dtmf.sent", frozen=True, kw_only=True):
    """A keypress was sent to the SIP trunk (sideband only)."""

    client_event_id: str | None = None


class _Transport(_ServerEvent, frozen=True, kw_only=True):
    event_id: str
    session_id: str


class TransportRinging(_Transport, tag="transport.ringing", frozen=True, kw_only=True):
    """The outbound SIP leg is ringing (sideband only)."""


class TransportAnswered(_Transport, tag="transport.answered", frozen=True, kw_only=True):
    """The outbound SIP leg answered (sideband only)."""


class TransportFailed(_Transport, tag="transport.failed", frozen=True, kw_only=True):
    """Outbound SIP setup failed (sideband only)."""

    error: dict[str, Any]


LiveServerEvent = (
    SessionStarted
    | SessionUpdated
    | InputAudioMuted
    | InputAudioUnmuted
    | OutputAudioFixturePlaying
    | OutputAudioFixturePlayed
    | InstructionsAppended
    | ThinkingAppended
    | CommentaryAppended
    | InputAudioReflected
    | OutputAudioDelta
    | InputTranscriptDelta
    | OutputTranscriptDelta
    | DelegationCreated
    | DecisionEvent
    | DecisionItemCreated
    | DecisionItemDeleted
    | ResponseEvent
    | SessionUsageUpdated
    | SessionClosed
    | LiveErrorEvent
    | InfoEvent
    | TransportDtmfReceived
    | TransportDtmfSend
    | TransportDtmfSent
    | TransportRinging
    | TransportAnswered
    | TransportFailed
)
"""Every typed Live server event (the order of ``openai.types.live.ServerEvent``)."""

#: Wire ``type`` -> class.
SERVER_EVENT_TYPES: dict[str, type[_ServerEvent]] = {
    str(cls.__struct_config__.tag): cls for cls in get_args(LiveServerEvent)
}

LiveReceivedEvent = LiveServerEvent | UnknownServerEvent | ProtocolErrorEvent
"""What the receive path hands out: a typed event, an unknown one, or a protocol error."""
