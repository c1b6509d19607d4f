"""The 15 Live client events (``openai.types.live.ClientEvent``), one class per wire ``type``,
and the sideband's own command, ``transport.dtmf.send`` (``openai.types.live.ConnectClientEvent``).

Audio fields hold ``bytes`` (base64 on the wire). ``session.instructions.append``,
``session.thinking.append`` and ``session.commentary.append`` always carry ``delegation_id``:
the API reference calls it "required, nullable" (null for general session context).
"""

from __future__ import annotations

from typing import Any, get_args

from msgspec import Struct

from voxwire.live.objects import ForkSessionConfig, LiveSessionConfig

__all__ = [
    "CLIENT_EVENT_TYPES",
    "FORK_CLIENT_EVENT_TYPES",
    "SIDEBAND_CLIENT_EVENT_TYPES",
    "CommentaryAppend",
    "DecisionCreate",
    "DecisionItemCreate",
    "DecisionItemDelete",
    "ForkSessionStart",
    "InputAudioAppend",
    "InputAudioMute",
    "InputAudioUnmute",
    "InstructionsAppend",
    "LiveClientEvent",
    "OutputAudioFixturePlay",
    "ResponseCreate",
    "ResponseItemCreate",
    "SessionClose",
    "SessionStart",
    "SessionUpdate",
    "ThinkingAppend",
    "TransportDtmfSend",
]


class _ClientEvent(
    Struct, tag_field="type", kw_only=True, frozen=True, dict=True, omit_defaults=True
):
    event_id: str | None = None

    @property
    def type(self) -> str:
        """The wire ``type`` (the tag), as the official types have it."""
        return str(self.__struct_config__.tag)


class SessionStart(_ClientEvent, tag="session.start", frozen=True, kw_only=True):
    """The first event of a primary connection: the model and the startup configuration."""

    session: LiveSessionConfig


class ForkSessionStart(_ClientEvent, tag="session.start", frozen=True, kw_only=True):
    """The first event of a fork connection (``/v1/live/sessions/{id}/fork``): overrides of the
    stored session's configuration, empty to inherit it (``ForkSessionStartEvent``). A fork
    connection takes the same events as a primary one after it (``ForkClientEvent``)."""

    session: ForkSessionConfig


class SessionUpdate(_ClientEvent, tag="session.update", frozen=True, kw_only=True):
    """Changes what may change after startup: ``delegation`` (same owner) and ``triggers``."""

    session: dict[str, Any]


class InputAudioAppend(_ClientEvent, tag="session.input_audio.append", frozen=True, kw_only=True):
    """Microphone audio in the session's format."""

    audio: bytes


class InputAudioMute(_ClientEvent, tag="session.input_audio.mute", frozen=True, kw_only=True):
    """Stop feeding input audio to the model."""


class InputAudioUnmute(_ClientEvent, tag="session.input_audio.unmute", frozen=True, kw_only=True):
    """Feed input audio to the model again."""


class OutputAudioFixturePlay(
    _ClientEvent, tag="session.output_audio.fixture.play", frozen=True, kw_only=True
):
    """Play prerecorded audio to the listener as if the model had spoken it."""

    audio: bytes


class _Append(_ClientEvent, frozen=True, kw_only=True):
    content: str
    # "Required, nullable" (API reference): no default, so it is always on the wire.
    delegation_id: str | None


class InstructionsAppend(_Append, tag="session.instructions.append", frozen=True, kw_only=True):
    """More instructions for the Live model (session-wide, or for one client delegation)."""


class ThinkingAppend(_Append, tag="session.thinking.append", frozen=True, kw_only=True):
    """Silent context or progress: influences later speech, asks for none."""


class CommentaryAppend(_Append, tag="session.commentary.append", frozen=True, kw_only=True):
    """Content the model speaks (the answer to a client delegation)."""


class DecisionCreate(_ClientEvent, tag="decision.create", frozen=True, kw_only=True):
    """Ask the Decisions backend for a decision now (``event_id`` is required)."""


class DecisionItemCreate(_ClientEvent, tag="decision.item.create", frozen=True, kw_only=True):
    """Add an item to the Decisions context."""

    item: dict[str, Any]


class DecisionItemDelete(_ClientEvent, tag="decision.item.delete", frozen=True, kw_only=True):
    """Remove an item from the Decisions context."""

    item_id: str


class ResponseItemCreate(_ClientEvent, tag="response.item.create", frozen=True, kw_only=True):
    """Add an input item (e.g. a ``function_call_output``) to the Responses backend."""

    item: dict[str, Any]


class ResponseCreate(_ClientEvent, tag="response.create", frozen=True, kw_only=True):
    """Ask the Responses backend to respond, or to continue a delegated response that waits
    for tool results."""


class SessionClose(_ClientEvent, tag="session.close", frozen=True, kw_only=True):
    """End the session; the server answers ``session.closed``."""


class TransportDtmfSend(_ClientEvent, tag="transport.dtmf.send", frozen=True, kw_only=True):
    """Send one DTMF key (``0``-``9``, ``A``-``D``, ``*``, ``#``) to the SIP trunk: a sideband
    command of a SIP call only, answered by ``transport.dtmf.sent``."""

    event: str


LiveClientEvent = (
    SessionStart
    | SessionUpdate
    | InputAudioAppend
    | InputAudioMute
    | InputAudioUnmute
    | OutputAudioFixturePlay
    | InstructionsAppend
    | ThinkingAppend
    | CommentaryAppend
    | DecisionCreate
    | DecisionItemCreate
    | DecisionItemDelete
    | ResponseItemCreate
    | ResponseCreate
    | SessionClose
)
"""Every Live client event (the order of ``openai.types.live.ClientEvent``)."""

#: Wire ``type`` -> class.
CLIENT_EVENT_TYPES: dict[str, type[_ClientEvent]] = {
    str(cls.__struct_config__.tag): cls for cls in get_args(LiveClientEvent)
}

#: Wire ``type`` -> class on a fork connection: ``session.start`` carries overrides only.
FORK_CLIENT_EVENT_TYPES: dict[str, type[_ClientEvent]] = {
    **CLIENT_EVENT_TYPES,
    "session.start": ForkSessionStart,
}

#: Wire ``type`` -> class on a sideband (``/v1/live/sessions/{id}/attach``): the session has
#: already started and its audio travels on the primary transport (SIP, WebRTC), so
#: ``session.start`` and ``session.input_audio.append`` are not taken; ``transport.dtmf.send``
#: is (``openai.types.live.ConnectClientEvent``).
SIDEBAND_CLIENT_EVENT_TYPES: dict[str, type[_ClientEvent]] = {
    **{
        kind: cls
        for kind, cls in CLIENT_EVENT_TYPES.items()
        if kind not in ("session.start", "session.input_audio.append")
    },
    "transport.dtmf.send": TransportDtmfSend,
}
