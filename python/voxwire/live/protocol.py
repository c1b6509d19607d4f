"""``LiveProtocol``: the client side of a GPT-Live session, without I/O.

Built like :class:`voxwire.protocol.RealtimeProtocol`::

    live = LiveProtocol()
    live.send_session_start({"model": "gpt-live-1", "instructions": "Be brief."})
    for frame in live.data_to_send():
        ...  # the I/O layer sends each text frame
    live.receive_text(frame_from_server)
    for event in live.events_received():
        ...  # typed events, in server order

The rules (h11 style: the transitions are data, below):

* the first event of a connection is ``session.start``; nothing else may be sent before the
  server's ``session.started`` (:class:`~voxwire.exceptions.InvalidState` otherwise);
* after startup only ``delegation`` (with the same owner) and ``triggers`` may change: an update
  naming ``model``, ``instructions``, ``audio`` ... is refused locally with
  :class:`~voxwire.exceptions.ConfigurationError`, before anything is queued;
* ``response.item.create`` / ``response.create`` need Responses delegation, ``decision.create``
  Decisions delegation; a non-null ``delegation_id`` on commentary/thinking/instructions must
  name a client or Decisions delegation (the reference refuses ids only with Responses);
* Decisions questions and decision items are checked before they are queued;
* instructions, thinking and commentary are refused while an audio fixture plays;
* after ``session.close`` is sent or ``session.closed`` received nothing more may be sent.

A *sideband* (:meth:`LiveProtocol.sideband`: a second connection attached by session id to a
SIP or WebRTC session, ``/v1/live/sessions/{id}/attach``) starts active — the session has
already started — and sends no ``session.start`` and no input audio (the audio travels on the
primary transport); it alone may send ``transport.dtmf.send`` (:meth:`send_dtmf`, one key per
event, answered by ``transport.dtmf.sent`` or an ``error`` naming it).

``receive_text`` never raises: a bad frame becomes a
:class:`~voxwire.protocol.server_events.ProtocolErrorEvent` and leaves the state as it was.
Delegation state lives in :class:`~voxwire.live.delegations.DelegationBook` (``delegations``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeVar

import msgspec

from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.live import server_events as se
from voxwire.live.client_events import (
    CommentaryAppend,
    DecisionCreate,
    DecisionItemCreate,
    DecisionItemDelete,
    ForkSessionStart,
    InputAudioAppend,
    InputAudioMute,
    InputAudioUnmute,
    InstructionsAppend,
    LiveClientEvent,
    OutputAudioFixturePlay,
    ResponseCreate,
    ResponseItemCreate,
    SessionClose,
    SessionStart,
    SessionUpdate,
    ThinkingAppend,
    TransportDtmfSend,
)
from voxwire.live.codec import decode_server_event, encode_event
from voxwire.live.decisions import (
    decision_item_problem,
    decisions_config,
    parse_decision,
)
from voxwire.live.delegations import Answer, Delegation, DelegationBook
from voxwire.live.objects import (
    IMMUTABLE_FIELDS,
    UPDATABLE_FIELDS,
    DecisionsDelegation,
    DelegationTarget,
    ForkSessionConfig,
    LiveSessionConfig,
    LiveSessionResource,
    SessionUsage,
)
from voxwire.protocol.ids import CounterIds, IdFactory

__all__ = ["LiveProtocol", "LiveState"]

#: ``idle``: nothing sent; ``starting``: ``session.start`` sent; ``active``: started;
#: ``closing``: ``session.close`` sent; ``closed``: ``session.closed`` received or connection lost.
LiveState = Literal["idle", "starting", "active", "closing", "closed"]

#: ``session.output_audio.fixture.play``: 30 s of mono PCM16 at 24 kHz (API reference).
MAX_FIXTURE_BYTES: Final = 30 * 24_000 * 2

#: The keys ``transport.dtmf.send`` takes (API reference): one per event.
DTMF_KEYS: Final = frozenset("0123456789ABCD*#")

_START_FIRST: Final = (
    "send session.start first and wait for session.started: a Live connection accepts nothing "
    "before its session has started"
)


class LiveProtocol:
    """The state the wire implies for one Live connection, and the frames to send."""

    def __init__(self, *, ids: IdFactory | None = None) -> None:
        self._ids: IdFactory = ids or CounterIds()
        self._state: LiveState = "idle"
        self._session: LiveSessionResource | None = None
        self._requested: LiveSessionConfig | None = None
        self._outgoing: list[str] = []
        self._received: list[se.LiveReceivedEvent] = []
        self._pending: dict[str, str] = {}  # client event_id -> type, until answered or refused
        self._fixture_playing = False
        self.delegations = DelegationBook()
        #: The session's decision items as the server confirmed them, by id, oldest first.
        self.decision_items: dict[str, dict[str, Any]] = {}
        self.muted = False
        self.usage: SessionUsage | None = None
        self.context_usage_ratio: float | None = None
        self.close_reason: str | None = None
        self.output_audio_end_ms = 0
        self.attached_to: str | None = None  # the session id of a sideband

    @classmethod
    def sideband(
        cls,
        session_id: str,
        session: Mapping[str, Any] | LiveSessionConfig,
        *,
        ids: IdFactory | None = None,
    ) -> LiveProtocol:
        """The core of a sideband attached to the started session ``session_id`` (the
        ``session_id`` of a SIP call's webhook, or a WebRTC session's id). ``session``: the
        configuration it was started or accepted with (a ``type: "live"`` key is allowed, as
        the accept body has it), so that the rules that depend on it (who owns delegations)
        hold before the server reports the session."""
        if not isinstance(session_id, str) or not session_id or "/" in session_id:
            raise ConfigurationError(
                f"session_id={session_id!r} is invalid: expected the Live session's id, such "
                "as the data.session_id of a live.transport.incoming webhook"
            )
        if isinstance(session, Mapping) and session.get("type") == "live":
            session = {key: value for key, value in session.items() if key != "type"}
        live = cls(ids=ids)
        live._requested = (
            session if isinstance(session, LiveSessionConfig) else _start_config(session)
        )
        live.attached_to = session_id
        live._state = "active"
        return live

    @property
    def session_id(self) -> str | None:
        """The session's id: as the server reported it, else the one a sideband attached to."""
        return self._session.id if self._session is not None else self.attached_to

    # --- what the wire implies ------------------------------------------------------------------

    @property
    def state(self) -> LiveState:
        return self._state

    @property
    def session(self) -> LiveSessionResource | None:
        """The session as the server last reported it (``session.started`` / ``updated``)."""
        return self._session

    @property
    def delegation_target(self) -> DelegationTarget:
        """Who gets delegated tasks (the started session's, else the requested one's)."""
        config = self._session or self._requested
        return config.delegation_target if config is not None else "client"

    def pending_event_ids(self) -> dict[str, str]:
        """Client events sent with an ``event_id`` that no server event has answered yet."""
        return dict(self._pending)

    # --- I/O boundary ---------------------------------------------------------------------------

    def receive_text(self, data: str | bytes) -> None:
        """Feed one frame from the server. Never raises."""
        event = decode_server_event(data)
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)
        self._received.append(event)

    def events_received(self) -> list[se.LiveReceivedEvent]:
        """The events received since the last call, in server order."""
        events, self._received = self._received, []
        return events

    def data_to_send(self) -> list[str]:
        """The frames queued since the last call, in order."""
        frames, self._outgoing = self._outgoing, []
        return frames

    def connection_lost(self) -> list[Delegation]:
        """The connection is gone: the session is over for this core (a new socket does not
        restore a Live session; going on means a fork of a stored one); returns the
        delegations it leaves abandoned."""
        self._state = "closed"
        self._pending.clear()
        return self.delegations.abandon_open()

    # --- sending --------------------------------------------------------------------------------

    def send_session_start(self, session: Mapping[str, Any] | LiveSessionConfig) -> str:
        """Queue ``session.start``; the configuration is checked here (unknown fields, types)."""
        self._require_primary("session.start")
        if self._state != "idle":
            raise InvalidState(f"session.start was already sent (the session is {self._state})")
        config = session if isinstance(session, LiveSessionConfig) else _start_config(session)
        if isinstance(config.delegation, DecisionsDelegation):
            checked = decisions_config(config.delegation.decisions)
            if isinstance(checked, str):
                raise ConfigurationError(f"delegation.decisions: {checked}")
        event_id = self._queue(SessionStart(event_id=self._ids("event"), session=config))
        self._requested = config
        self._state = "starting"
        return event_id

    def send_fork_start(self, overrides: Mapping[str, Any] | None = None) -> str:
        """Queue a fork's ``session.start`` (the first event on
        ``/v1/live/sessions/{id}/fork``): ``overrides`` of the stored session's ``audio``,
        ``client``, ``delegation``, ``store``; none inherits them all. The configuration is
        known once ``session.started`` reports it (the model is always the stored one's)."""
        self._require_primary("session.start")
        if self._state != "idle":
            raise InvalidState(f"session.start was already sent (the session is {self._state})")
        config = _fork_config(overrides or {})
        event_id = self._queue(ForkSessionStart(event_id=self._ids("event"), session=config))
        self._state = "starting"
        return event_id

    def send_session_update(self, session: Mapping[str, Any]) -> str:
        """Queue ``session.update`` with ``delegation`` and/or ``triggers``."""
        self._require_active()
        fixed = sorted(set(session) & IMMUTABLE_FIELDS)
        if fixed:
            raise ConfigurationError(
                f"{', '.join(fixed)} cannot change after startup (immutable once the session "
                "has started): start a new session to change it; session.update accepts only "
                "delegation and triggers"
            )
        unknown = sorted(set(session) - UPDATABLE_FIELDS)
        if unknown:
            raise ConfigurationError(
                f"session.update does not know {', '.join(map(repr, unknown))}: it accepts "
                "only delegation and triggers"
            )
        self._check_delegation_update(session.get("delegation"))
        return self._queue(SessionUpdate(event_id=self._ids("event"), session=dict(session)))

    def send_input_audio(self, audio: bytes) -> None:
        """Queue microphone audio (in the session's format; no event id: audio is not answered)."""
        self._require_primary("session.input_audio.append")
        self._require_active()
        if not isinstance(audio, bytes | bytearray | memoryview):
            raise ConfigurationError(f"audio must be bytes, got {type(audio).__name__}")
        self._outgoing.append(encode_event(InputAudioAppend(audio=bytes(audio))))

    def send_mute(self) -> str:
        """Queue ``session.input_audio.mute``."""
        self._require_active()
        return self._queue(InputAudioMute(event_id=self._ids("event")))

    def send_unmute(self) -> str:
        """Queue ``session.input_audio.unmute``."""
        self._require_active()
        return self._queue(InputAudioUnmute(event_id=self._ids("event")))

    def send_fixture(self, audio: bytes) -> str:
        """Queue ``session.output_audio.fixture.play``: prerecorded audio for the listener, raw
        mono PCM16 at 24 kHz whatever the session's format, at most 30 s, one at a time."""
        self._require_active()
        if self._fixture_playing:
            raise InvalidState(
                "only one audio fixture can be active: wait for session.output_audio.fixture.played"
            )
        if len(audio) % 2 or len(audio) > MAX_FIXTURE_BYTES:
            raise ConfigurationError(
                f"a fixture is whole PCM16 samples at 24 kHz, at most 30 s "
                f"({MAX_FIXTURE_BYTES:,} bytes): got {len(audio):,} bytes"
            )
        self._fixture_playing = True
        return self._queue(OutputAudioFixturePlay(event_id=self._ids("event"), audio=audio))

    def send_instructions(self, content: str, delegation_id: str | None = None) -> str:
        """Queue ``session.instructions.append`` (session-wide, or for a client delegation)."""
        return self._append(InstructionsAppend, "instructions", content, delegation_id)

    def send_thinking(self, content: str, delegation_id: str | None = None) -> str:
        """Queue ``session.thinking.append``: silent context or progress."""
        return self._append(ThinkingAppend, "thinking", content, delegation_id)

    def send_commentary(self, content: str, delegation_id: str | None = None) -> str:
        """Queue ``session.commentary.append``: content the model speaks (a client
        delegation's answer when ``delegation_id`` names one)."""
        return self._append(CommentaryAppend, "commentary", content, delegation_id)

    def send_function_output(self, call_id: str, output: str) -> str:
        """Queue ``response.item.create`` with the ``function_call_output`` for ``call_id``
        (follow with :meth:`send_response_create` once every pending output is sent)."""
        if not isinstance(output, str):
            raise ConfigurationError(f"a function output is text, got {type(output).__name__}")
        item = {"type": "function_call_output", "call_id": call_id, "output": output}
        event_id = self.send_response_item(item)
        self.delegations.call_answered(call_id, output)
        return event_id

    def send_response_item(self, item: Mapping[str, Any]) -> str:
        """Queue ``response.item.create`` (Responses delegation only)."""
        self._require_responses("response.item.create")
        if not isinstance(item.get("type"), str):
            raise ConfigurationError("a Responses input item needs a string 'type'")
        return self._queue(ResponseItemCreate(event_id=self._ids("event"), item=dict(item)))

    def send_response_create(self) -> str:
        """Queue ``response.create``: continue the backend (Responses delegation only)."""
        self._require_responses("response.create")
        return self._queue(ResponseCreate(event_id=self._ids("event")))

    def send_decision_create(self) -> str:
        """Queue ``decision.create``: evaluate the configured questions now (Decisions
        delegation only). The server answers with ``session.delegation.created`` naming this
        event id (``client_event_id``), then ``decision.event`` for that delegation."""
        self._require_active()
        if self.delegation_target != "decisions":
            raise InvalidState(
                "decision.create evaluates the questions of a Decisions delegation (this session "
                f"delegates to {self.delegation_target!r}): start the session with "
                "delegation {'type': 'decisions', 'decisions': {'model', 'questions'}}"
            )
        return self._queue(DecisionCreate(event_id=self._ids("event")))

    def send_decision_item_create(self, item: Mapping[str, Any]) -> str:
        """Queue ``decision.item.create``: context for later decisions (the server confirms
        with ``decision.item.created``, the item then in :attr:`decision_items`)."""
        self._require_active()
        problem = decision_item_problem(item)
        if problem is not None:
            raise ConfigurationError(f"{problem[0]}: {problem[1]}")
        return self._queue(DecisionItemCreate(event_id=self._ids("event"), item=dict(item)))

    def send_decision_item_delete(self, item_id: str) -> str:
        """Queue ``decision.item.delete``."""
        self._require_active()
        if not isinstance(item_id, str) or not item_id:
            raise ConfigurationError("item_id must be the non-empty id of a decision item")
        return self._queue(DecisionItemDelete(event_id=self._ids("event"), item_id=item_id))

    def send_dtmf(self, key: str) -> str:
        """Queue ``transport.dtmf.send``: one DTMF key (``0``-``9``, ``A``-``D``, ``*``, ``#``)
        to the SIP trunk; a sideband of a SIP call only. Send one event per key."""
        if self.attached_to is None:
            raise InvalidState(
                "transport.dtmf.send is a sideband command of a SIP call: attach with "
                "LiveProtocol.sideband(session_id, config)"
            )
        self._require_active()
        if not isinstance(key, str) or key.upper() not in DTMF_KEYS or len(key) != 1:
            raise ConfigurationError(
                f"DTMF key {key!r} is invalid: send one key per event, one of 0-9, A-D, * or #"
            )
        return self._queue(TransportDtmfSend(event_id=self._ids("event"), event=key.upper()))

    def send_close(self) -> str:
        """Queue ``session.close``; the server answers ``session.closed``."""
        self._require_active()
        self._state = "closing"
        return self._queue(SessionClose(event_id=self._ids("event")))

    # --- rules ----------------------------------------------------------------------------------

    def _queue(self, event: LiveClientEvent | ForkSessionStart | TransportDtmfSend) -> str:
        assert event.event_id is not None  # every queued command gets one from the factory
        self._outgoing.append(encode_event(event))
        self._pending[event.event_id] = str(type(event).__struct_config__.tag)
        return event.event_id

    def _require_primary(self, kind: str) -> None:
        if self.attached_to is not None:
            raise InvalidState(
                f"{kind} is not sent on a sideband: the session has already started and its "
                "audio travels on the primary transport (the SIP call, the WebRTC peer)"
            )

    def _require_active(self) -> None:
        if self._state in ("idle", "starting"):
            raise InvalidState(_START_FIRST)
        if self._state != "active":
            raise InvalidState(f"the Live session is {self._state}: nothing more can be sent")

    def _require_responses(self, kind: str) -> None:
        self._require_active()
        if self.delegation_target != "responses":
            raise InvalidState(
                f"{kind} requires Responses delegation (this session delegates to "
                f"{self.delegation_target!r}): answer a client delegation with "
                "send_commentary or send_thinking"
            )

    def _append(
        self,
        cls: type[InstructionsAppend | ThinkingAppend | CommentaryAppend],
        kind: Literal["commentary", "thinking", "instructions"],
        content: str,
        delegation_id: str | None,
    ) -> str:
        self._require_active()
        if not isinstance(content, str) or not content:
            raise ConfigurationError(f"{kind} content must be non-empty text")
        if self._fixture_playing:
            raise InvalidState(
                f"session.{kind}.append is refused while an audio fixture plays (API reference): "
                "send it after session.output_audio.fixture.played"
            )
        if delegation_id is not None:
            delegation = self.delegations.get(delegation_id)
            if delegation is None or delegation.target == "responses":
                owner = "unknown" if delegation is None else f"owned by {delegation.target!r}"
                raise InvalidState(
                    f"delegation {delegation_id!r} is {owner}: only a client or Decisions "
                    "delegation takes commentary, thinking or instructions by id (pass None for "
                    "the session)"
                )
        event_id = self._queue(
            cls(event_id=self._ids("event"), content=content, delegation_id=delegation_id)
        )
        if delegation_id is not None:
            self.delegations.answered(delegation_id, Answer(kind, content))
        return event_id

    def _check_delegation_update(self, delegation: object) -> None:
        if delegation is None:
            return
        kind = delegation.get("type") if isinstance(delegation, Mapping) else None
        if kind != self.delegation_target:
            raise ConfigurationError(
                f"session.update may change the delegation's settings, not its owner: this "
                f"session delegates to {self.delegation_target!r}, the update names {kind!r}; "
                "start a new session to change the owner"
            )
        assert isinstance(delegation, Mapping)
        update = delegation.get("decisions")
        questions = update.get("questions") if isinstance(update, Mapping) else None
        if questions is not None:
            checked = decisions_config({"model": "-", "questions": questions})
            if isinstance(checked, str):
                raise ConfigurationError(f"delegation.decisions: {checked}")

    # --- received events ------------------------------------------------------------------------

    def _answered(self, event: Any) -> None:
        client_event_id = getattr(event, "client_event_id", None)
        if client_event_id is not None:
            self._pending.pop(client_event_id, None)

    def _on_session(self, event: se.SessionStarted | se.SessionUpdated) -> None:
        self._answered(event)
        self._session = event.session
        if self._state in ("idle", "starting"):
            self._state = "active"

    def _on_closed(self, event: se.SessionClosed) -> None:
        self._answered(event)
        self._session = event.session
        self.usage = event.usage
        self.close_reason = event.reason
        self._state = "closed"
        self._pending.clear()
        self.delegations.abandon_open()

    def _on_error(self, event: se.LiveErrorEvent) -> None:
        refused = self._pending.pop(event.error.client_event_id or "", None)
        if refused == "session.start" and self._state == "starting":
            self._state = "idle"  # the start was refused: the application may send another
            self._requested = None
        elif refused == "session.output_audio.fixture.play":
            self._fixture_playing = False

    def _on_delegation(self, event: se.DelegationCreated) -> None:
        self._answered(event)
        info = event.delegation
        self.delegations.created(
            Delegation(
                id=info.id,
                target=info.target,
                offset_ms=event.offset_ms,
                response_id=info.response_id,
                client_event_id=event.client_event_id,
            )
        )

    def _on_decision(self, event: se.DecisionEvent) -> None:
        self.delegations.decided(event.delegation_id, parse_decision(event.event))

    def _on_decision_item(self, event: se.DecisionItemCreated | se.DecisionItemDeleted) -> None:
        self._answered(event)
        if isinstance(event, se.DecisionItemDeleted):
            self.decision_items.pop(event.item_id, None)
        elif isinstance(event.item.get("id"), str):
            self.decision_items[event.item["id"]] = event.item

    def _on_usage(self, event: se.SessionUsageUpdated) -> None:
        self.usage = event.usage
        if event.context_window is not None:
            self.context_usage_ratio = event.context_window.usage_ratio

    def _on_mute(self, event: se.InputAudioMuted | se.InputAudioUnmuted) -> None:
        self._answered(event)
        self.muted = isinstance(event, se.InputAudioMuted)

    def _on_fixture_played(self, event: se.OutputAudioFixturePlayed) -> None:
        self._answered(event)
        self._fixture_playing = False

    def _on_audio(self, event: se.OutputAudioDelta) -> None:
        if event.end_ms is not None:
            self.output_audio_end_ms = max(self.output_audio_end_ms, event.end_ms)

    def _on_response_event(self, event: se.ResponseEvent) -> None:
        self._answered(event)
        self.delegations.backend_event(event.delegation_id, event.event)


_Config = TypeVar("_Config", LiveSessionConfig, ForkSessionConfig)


def _checked(
    given: Mapping[str, Any], kind: type[_Config], what: str, unknown_note: str, invalid: str
) -> _Config:
    """``given`` as ``kind``, or a :class:`ConfigurationError` naming the unknown fields (after
    ``unknown_note``, which ends with the known ones) or what does not convert."""
    if not isinstance(given, Mapping):
        raise ConfigurationError(f"{what} a mapping, got {type(given).__name__}")
    known = kind.__struct_fields__
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ConfigurationError(
            unknown_note.format(unknown=", ".join(map(repr, unknown))) + ", ".join(known)
        )
    try:
        return msgspec.convert(dict(given), kind)
    except msgspec.ValidationError as exc:
        raise ConfigurationError(f"{invalid}: {exc}") from None


def _start_config(session: Mapping[str, Any]) -> LiveSessionConfig:
    return _checked(
        session,
        LiveSessionConfig,
        "the session is",
        "session.start does not know {unknown} (the Live endpoint rejects unknown fields); known: ",
        "invalid Live session configuration",
    )


def _fork_config(overrides: Mapping[str, Any]) -> ForkSessionConfig:
    return _checked(
        overrides,
        ForkSessionConfig,
        "the overrides are",
        "a fork's session.start does not take {unknown}: the model, voice, instructions and "
        "conversation come from the stored session; it may override only ",
        "invalid fork overrides",
    )


_Handler = Callable[[LiveProtocol, Any], None]

#: Server event class -> what it does to the state; the others change nothing.
_HANDLERS: Final[dict[type, _Handler]] = {
    se.SessionStarted: LiveProtocol._on_session,
    se.SessionUpdated: LiveProtocol._on_session,
    se.SessionClosed: LiveProtocol._on_closed,
    se.LiveErrorEvent: LiveProtocol._on_error,
    se.DelegationCreated: LiveProtocol._on_delegation,
    se.SessionUsageUpdated: LiveProtocol._on_usage,
    se.InputAudioMuted: LiveProtocol._on_mute,
    se.InputAudioUnmuted: LiveProtocol._on_mute,
    se.OutputAudioFixturePlayed: LiveProtocol._on_fixture_played,
    se.OutputAudioDelta: LiveProtocol._on_audio,
    se.ResponseEvent: LiveProtocol._on_response_event,
    se.InstructionsAppended: LiveProtocol._answered,
    se.ThinkingAppended: LiveProtocol._answered,
    se.CommentaryAppended: LiveProtocol._answered,
    se.OutputAudioFixturePlaying: LiveProtocol._answered,
    se.DecisionEvent: LiveProtocol._on_decision,
    se.DecisionItemCreated: LiveProtocol._on_decision_item,
    se.DecisionItemDeleted: LiveProtocol._on_decision_item,
    se.InfoEvent: LiveProtocol._answered,
    se.TransportDtmfSent: LiveProtocol._answered,
    se.TransportDtmfSend: LiveProtocol._answered,
}
