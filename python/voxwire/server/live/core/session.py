"""The local server's GPT-Live session, pure: client events in, server events and commands out.

Rules (the Live reference and guides; ``openai.types.live``):

* ``session.start`` first; anything else before it is refused (``session_not_started``), a
  second start too (``session_already_started``); a Responses delegation needs its
  ``responses.model``; the model must be a Live model;
* after startup ``session.update`` changes only ``delegation`` (same owner) and ``triggers``:
  other fields are immutable (``immutable_parameter``), unknown ones ``unknown_parameter``;
* ``session.commentary.append`` is spoken; with a ``delegation_id`` it answers that client
  or Decisions delegation; ``session.thinking.append`` is silent; a non-null ``delegation_id``
  must name a client or Decisions delegation ("not accepted with Responses delegation");
* ``response.item.create`` / ``response.create`` require Responses delegation;
* the Decisions API (items, ``decision.create``, triggers): :mod:`.decisions`;
* a SIP call accepted as Live starts with the accept's configuration (:meth:`accepted`); its
  sideband's ``transport.dtmf.send`` gets ``transport.dtmf.sent``, a bad key ``invalid_value``;
* on a fork connection (``/v1/live/sessions/{id}/fork``) ``session.start`` carries overrides
  of a stored session, which must have ended (:mod:`voxwire.server.live.core.forks`); a
  session started with ``store: true`` is kept for forking.

Commands tell the pump what takes time: :class:`Speak` (voice a text), :class:`ContinueBackend`
(run the scripted Responses backend again for a delegation whose tool outputs arrived),
:class:`Decide` (the scenario's Decisions model answers a delegation), :class:`Close`. Time
comes in as arguments (``now_s``, the timeline position).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import msgspec

from voxwire.live import client_events as ce
from voxwire.live import server_events as se
from voxwire.live.codec import unknown_fields
from voxwire.live.objects import (
    IMMUTABLE_FIELDS,
    UPDATABLE_FIELDS,
    AudioFormat,
    DelegationInfo,
    DelegationTarget,
    LiveErrorInfo,
    LiveSessionConfig,
    LiveSessionResource,
    ResponsesDelegation,
    SessionUsage,
)
from voxwire.live.protocol import DTMF_KEYS, MAX_FIXTURE_BYTES
from voxwire.protocol.server_events import ProtocolErrorEvent
from voxwire.server.core.ids import ServerIds
from voxwire.server.live.core.config import (
    DEFAULT_FORMAT,
    DEFAULT_VOICE,
    session_resource,
    start_problem,
)
from voxwire.server.live.core.decisions import DecisionDesk, session_decisions
from voxwire.server.live.core.forks import (
    ForkRefused,
    LiveSessionStore,
    Role,
    fork_resource,
)

__all__ = [
    "BackendDelegation",
    "Close",
    "Command",
    "ContinueBackend",
    "Decide",
    "LiveServerSession",
    "Speak",
]

SESSION_LIFETIME_S: Final = 60 * 60
CloseReason = Literal["close_requested", "expired", "content", "remote_hangup", "connection_lost"]
BYTES_PER_MS: Final = 48  # PCM16 at 24 kHz, the one format this server speaks


@dataclass(frozen=True)
class Speak:
    """Voice ``text`` (a delegation's answer when ``delegation_id`` is set)."""

    text: str
    delegation_id: str | None = None


@dataclass(frozen=True)
class ContinueBackend:
    """Every tool output of the delegation's backend call arrived and ``response.create``
    asked for more: run the backend again."""

    delegation_id: str


@dataclass(frozen=True)
class Decide:
    """The Decisions model answers the delegation (``decision.event``)."""

    delegation_id: str


@dataclass(frozen=True)
class Close:
    """End the connection after the events that precede this command."""


Command = Speak | ContinueBackend | Decide | Close
Out = se.LiveServerEvent | Command


@dataclass
class BackendDelegation:
    """A delegation the server made: its owner, and for Responses its calls and outputs."""

    id: str
    target: DelegationTarget
    user_text: str
    response_id: str | None = None
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (call_id, name, args)
    outputs: dict[str, str] = field(default_factory=dict)  # call_id -> output
    answered: bool = False


class LiveServerSession:
    """One Live connection's state on the server side."""

    def __init__(
        self, ids: ServerIds, stored: LiveSessionStore | None = None, fork_of: str | None = None
    ) -> None:
        self._ids = ids
        self._stored = stored if stored is not None else LiveSessionStore()
        self._fork_of = fork_of  # the stored session this connection forks (its path's id)
        self.session: LiveSessionResource | None = None
        self.muted = False
        self.closed = False
        self.delegations: dict[str, BackendDelegation] = {}
        self.decisions = DecisionDesk(ids, self.error)
        #: ``session.instructions.append`` for the session (not a delegation), in order: they
        #: stay in the conversation, after the startup instructions (the responder reads both).
        self.appended_instructions: list[str] = []
        self._started_s = 0.0

    @property
    def target(self) -> DelegationTarget:
        return self.session.delegation_target if self.session is not None else "client"

    @property
    def voice(self) -> str:
        audio = self.session.audio if self.session is not None else None
        voice = audio.output.voice if audio is not None and audio.output is not None else None
        return voice if isinstance(voice, str) else DEFAULT_VOICE

    @property
    def audio_format(self) -> AudioFormat:
        audio = self.session.audio if self.session is not None else None
        return audio.format if audio is not None and audio.format is not None else DEFAULT_FORMAT

    def tool_names(self) -> tuple[str, ...]:
        """The function tools declared to the Responses backend."""
        session = self.session
        if session is None or not isinstance(session.delegation, ResponsesDelegation):
            return ()
        backend = session.delegation.responses
        tools = backend.tools if backend is not None and backend.tools else []
        return tuple(str(t["name"]) for t in tools if t.get("type") == "function" and "name" in t)

    def event_id(self) -> str:
        """A fresh server event id (for the events the pump makes)."""
        return self._ids.event()

    def usage(self, now_s: float) -> SessionUsage:
        return SessionUsage(seconds=round(max(0.0, now_s - self._started_s), 3))

    # --- client events ----------------------------------------------------------------------

    def receive(
        self,
        event: ce.LiveClientEvent | ce.ForkSessionStart | ce.TransportDtmfSend | ProtocolErrorEvent,
        now_s: float,
        timeline_ms: int,
    ) -> list[Out]:
        """What the server answers to one client event."""
        if isinstance(event, ProtocolErrorEvent):
            return [self.error("invalid_event", event.message, event.event_id)]
        if isinstance(event, ce.ForkSessionStart):
            return self._fork(event, now_s)
        if isinstance(event, ce.SessionStart):
            return self._start(event, now_s)
        if self.session is None or self.closed:
            return [
                self.error(
                    "session_not_started",
                    f"{event.__struct_config__.tag} before session.start: send session.start "
                    "first and wait for session.started",
                    event.event_id,
                )
            ]
        handler = _HANDLERS.get(type(event))
        if handler is None:
            return [
                self.error(
                    "unsupported",
                    f"{event.__struct_config__.tag} is not emulated by the local voxwire server",
                    event.event_id,
                )
            ]
        outs: list[Out] = handler(self, event, now_s, timeline_ms)
        return outs

    def _start(self, event: ce.SessionStart, now_s: float) -> list[Out]:
        if self.session is not None:
            return [self.error("session_already_started", "session.start was already sent")]
        config = event.session
        problem = start_problem(config)
        if problem is not None:
            param, message = problem
            return [self.error("invalid_value", message, event.event_id, param)]
        resource = session_resource(config, self._ids.session(), int(now_s) + SESSION_LIFETIME_S)
        return self._started(resource, event.event_id, now_s, [])

    def accepted(self, config: LiveSessionConfig, session_id: str, now_s: float) -> list[Out]:
        """Start the session of a SIP call accepted with ``config`` (checked by the accept
        endpoint): ``session.started`` for the call's sideband."""
        resource = session_resource(config, session_id, int(now_s) + SESSION_LIFETIME_S)
        return self._started(resource, None, now_s, [])

    def _dtmf(self, event: ce.TransportDtmfSend, now_s: float, timeline_ms: int) -> list[Out]:
        if len(event.event) != 1 or event.event not in DTMF_KEYS:
            why = f"Invalid DTMF key {event.event[:16]!r}: send one of 0-9, A-D, * or # per event"
            return [self.error("invalid_value", why, event.event_id, "event")]
        return [
            se.TransportDtmfSent(
                event_id=self._ids.event(), event=event.event, client_event_id=event.event_id
            )
        ]

    def _fork(self, event: ce.ForkSessionStart, now_s: float) -> list[Out]:
        if self.session is not None:
            return [self.error("session_already_started", "session.start was already sent")]
        source = self._fork_of or ""
        stored = self._stored.get(source)
        audio = event.session.audio
        if audio is not None and audio.format is not None and audio.format != DEFAULT_FORMAT:
            refused: LiveSessionResource | ForkRefused = ForkRefused(
                "invalid_value",
                "the local voxwire server speaks audio/pcm at 24000 Hz only",
                "session.audio.format",
            )
        else:
            refused = fork_resource(
                stored,
                source,
                event.session,
                unknown_fields(event),
                self._ids.session,
                int(now_s) + SESSION_LIFETIME_S,
            )
        if isinstance(refused, ForkRefused):
            return [self.error(refused.code, refused.message, event.event_id, refused.param)]
        assert stored is not None
        return self._started(refused, event.event_id, now_s, stored.conversation)

    def _started(
        self,
        resource: LiveSessionResource,
        client_event_id: str | None,
        now_s: float,
        conversation: list[tuple[Role, str]],
    ) -> list[Out]:
        self._started_s = now_s
        self.session = resource
        if resource.store:
            self._stored.begin(resource, conversation)
        return [
            se.SessionStarted(
                event_id=self._ids.event(), client_event_id=client_event_id, session=resource
            )
        ]

    def said(self, role: Role, text: str) -> None:
        """Part of the conversation, kept when the session is stored."""
        if self.session is not None:
            self._stored.said(self.session.id, role, text)

    def ended(self) -> None:
        """The connection is gone: a stored session is final from now on (forkable)."""
        if self.session is not None:
            self._stored.finalize(self.session)

    def _update(self, event: ce.SessionUpdate, now_s: float, timeline_ms: int) -> list[Out]:
        assert self.session is not None
        fixed = sorted(set(event.session) & IMMUTABLE_FIELDS)
        unknown = sorted(set(event.session) - IMMUTABLE_FIELDS - UPDATABLE_FIELDS)
        if fixed or unknown:
            code = "immutable_parameter" if fixed else "unknown_parameter"
            name = (fixed or unknown)[0]
            message = (
                f"session.{name} cannot change after startup"
                if fixed
                else f"Unknown parameter: 'session.{name}'"
            )
            return [self.error(code, message, event.event_id, f"session.{name}")]
        merged = self._merged(event.session)
        if isinstance(merged, tuple):
            return [self.error("invalid_value", merged[1], event.event_id, merged[0])]
        self.session = merged
        return [
            se.SessionUpdated(
                event_id=self._ids.event(), client_event_id=event.event_id, session=merged
            )
        ]

    def _merged(self, update: dict[str, Any]) -> LiveSessionResource | tuple[str, str]:
        assert self.session is not None
        current = msgspec.to_builtins(self.session)
        delegation = update.get("delegation")
        if delegation is not None:
            if not isinstance(delegation, dict) or delegation.get("type") != self.target:
                return "session.delegation", (
                    f"session.update cannot change the delegation owner ({self.target!r}); "
                    "start a new session"
                )
            old = current.get("delegation") or {}
            current["delegation"] = {**old, **delegation}
            for key in ("responses", "decisions"):  # omitted settings keep their values
                if isinstance(old.get(key), dict) and isinstance(delegation.get(key), dict):
                    current["delegation"][key] = {**old[key], **delegation[key]}
        if "triggers" in update:
            current["triggers"] = update["triggers"]
        try:
            merged = msgspec.convert(current, LiveSessionResource)
        except msgspec.ValidationError as exc:
            return "session", f"invalid session.update: {exc}"
        problem = start_problem(merged)
        return merged if problem is None else (problem[0], f"invalid session.update: {problem[1]}")

    def _mute(
        self, event: ce.InputAudioMute | ce.InputAudioUnmute, now_s: float, timeline_ms: int
    ) -> list[Out]:
        self.muted = isinstance(event, ce.InputAudioMute)
        cls = se.InputAudioMuted if self.muted else se.InputAudioUnmuted
        return [cls(event_id=self._ids.event(), client_event_id=event.event_id)]

    def _append(
        self,
        event: ce.InstructionsAppend | ce.ThinkingAppend | ce.CommentaryAppend,
        now_s: float,
        timeline_ms: int,
    ) -> list[Out]:
        if event.delegation_id is not None:
            owner = self.delegations.get(event.delegation_id)
            if owner is None or owner.target == "responses":
                why = (
                    "Non-null delegation IDs are not accepted with Responses delegation"
                    if self.target == "responses"
                    else f"no delegation has id {event.delegation_id[:64]!r}"
                )
                return [self.error("invalid_value", why, event.event_id, "delegation_id")]
            if isinstance(event, ce.CommentaryAppend):
                owner.answered = True
        if isinstance(event, ce.InstructionsAppend) and event.delegation_id is None:
            self.appended_instructions.append(event.content)
        kind: type[se.InstructionsAppended | se.ThinkingAppended | se.CommentaryAppended] = {
            ce.InstructionsAppend: se.InstructionsAppended,
            ce.ThinkingAppend: se.ThinkingAppended,
            ce.CommentaryAppend: se.CommentaryAppended,
        }[type(event)]  # type: ignore[assignment]
        out: list[Out] = [
            kind(
                event_id=self._ids.event(),
                client_event_id=event.event_id,
                start_ms=timeline_ms,
                end_ms=timeline_ms,
            )
        ]
        if isinstance(event, ce.CommentaryAppend):
            out.append(Speak(event.content, event.delegation_id))
        return out

    def _fixture(
        self, event: ce.OutputAudioFixturePlay, now_s: float, timeline_ms: int
    ) -> list[Out]:
        if len(event.audio) % 2 or len(event.audio) > MAX_FIXTURE_BYTES:
            return [
                self.error(
                    "invalid_value",
                    "a fixture is raw mono PCM16 at 24 kHz, at most 30 seconds",
                    event.event_id,
                    "audio",
                )
            ]
        end_ms = timeline_ms + len(event.audio) // BYTES_PER_MS
        return [
            se.OutputAudioFixturePlaying(
                event_id=self._ids.event(), client_event_id=event.event_id
            ),
            se.OutputAudioDelta(delta=event.audio, start_ms=timeline_ms, end_ms=end_ms),
            se.OutputAudioFixturePlayed(event_id=self._ids.event(), client_event_id=event.event_id),
        ]

    def _response_item(
        self, event: ce.ResponseItemCreate, now_s: float, timeline_ms: int
    ) -> list[Out]:
        refused = self._needs_responses("response.item.create", event.event_id)
        if refused:
            return refused
        item = event.item
        call_id = item.get("call_id")
        if item.get("type") != "function_call_output" or not isinstance(call_id, str):
            return [
                self.error(
                    "invalid_value",
                    "the local server's Responses backend takes function_call_output items",
                    event.event_id,
                    "item.type",
                )
            ]
        owner = self._call_owner(call_id)
        if owner is None:
            return [
                self.error(
                    "invalid_value",
                    f"no pending function call has call_id {call_id[:64]!r}",
                    event.event_id,
                    "item.call_id",
                )
            ]
        output = item.get("output")
        owner.outputs[call_id] = output if isinstance(output, str) else str(output)
        return []

    def _response_create(
        self, event: ce.ResponseCreate, now_s: float, timeline_ms: int
    ) -> list[Out]:
        refused = self._needs_responses("response.create", event.event_id)
        if refused:
            return refused
        for delegation in self.delegations.values():
            waiting = [c for c, _, _ in delegation.calls if c not in delegation.outputs]
            if delegation.calls and not waiting and not delegation.answered:
                delegation.answered = True
                return [ContinueBackend(delegation.id)]
        return [
            self.error(
                "invalid_value",
                "response.create: no delegated response is waiting for tool results",
                event.event_id,
            )
        ]

    def _decision_item(
        self, event: ce.DecisionItemCreate | ce.DecisionItemDelete, now_s: float, timeline_ms: int
    ) -> list[Out]:
        if isinstance(event, ce.DecisionItemCreate):
            return [self.decisions.create_item(event.item, event.event_id)]
        return [self.decisions.delete_item(event.item_id, event.event_id)]

    def _decision_create(
        self, event: ce.DecisionCreate, now_s: float, timeline_ms: int
    ) -> list[Out]:
        config = session_decisions(self.session)
        refused = self.decisions.create_problem(event.event_id, config)
        if refused is not None:
            return [refused]
        delegation, events = self.delegate("", timeline_ms, [], client_event_id=event.event_id)
        return [*events, Decide(delegation.id)]

    def _close(self, event: ce.SessionClose, now_s: float, timeline_ms: int) -> list[Out]:
        return [self.closed_event("close_requested", now_s, event.event_id), Close()]

    # --- what the pump asks ----------------------------------------------------------------

    def closed_event(
        self, reason: CloseReason, now_s: float, client_event_id: str | None = None
    ) -> se.SessionClosed:
        assert self.session is not None
        self.closed = True
        self._stored.finalize(self.session)  # session.closed comes after finalization
        return se.SessionClosed(
            event_id=self._ids.event(),
            client_event_id=client_event_id,
            reason=reason,
            session=self.session,
            usage=self.usage(now_s),
        )

    def delegate(
        self,
        user_text: str,
        offset_ms: int,
        calls: Sequence[tuple[str, str]],
        client_event_id: str | None = None,
    ) -> tuple[BackendDelegation, list[se.LiveServerEvent]]:
        """The model hands the user's task to the session's delegation owner; for Responses,
        the backend's first stream (its function calls) comes with it."""
        target = self.target
        delegation = BackendDelegation(
            id=self._ids.item().replace("item_", "deleg_", 1),
            target=target,
            user_text=user_text,
            response_id=self._ids.response() if target == "responses" else None,
        )
        self.delegations[delegation.id] = delegation
        info = DelegationInfo(
            id=delegation.id,
            target=target,
            type="delegation",
            response_id=delegation.response_id,
        )
        events: list[se.LiveServerEvent] = [
            se.DelegationCreated(
                event_id=self._ids.event(),
                client_event_id=client_event_id,
                delegation=info,
                offset_ms=offset_ms,
            )
        ]
        if target == "responses":
            events.append(self.backend_event(delegation, "response.created", {}))
            for name, arguments in calls:
                call_id = self._ids.call()
                delegation.calls.append((call_id, name, arguments))
                item = {
                    "id": self._ids.item(),
                    "type": "function_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": name,
                    "arguments": arguments,
                }
                events.append(
                    self.backend_event(delegation, "response.output_item.done", {"item": item})
                )
        return delegation, events

    def backend_event(
        self, delegation: BackendDelegation, kind: str, fields: dict[str, Any]
    ) -> se.ResponseEvent:
        status = "completed" if kind == "response.completed" else "in_progress"
        payload = {
            "type": kind,
            "response": {"id": delegation.response_id, "object": "response", "status": status},
            **fields,
        }
        return se.ResponseEvent(
            event_id=self._ids.event(), event=payload, delegation_id=delegation.id
        )

    def error(
        self, code: str, message: str, client_event_id: str | None = None, param: str | None = None
    ) -> se.LiveErrorEvent:
        return se.LiveErrorEvent(
            event_id=self._ids.event(),
            client_event_id=client_event_id,
            error=LiveErrorInfo(
                type="invalid_request_error",
                code=code,
                message=message,
                client_event_id=client_event_id,
                param=param,
            ),
        )

    def _needs_responses(self, kind: str, event_id: str | None) -> list[Out]:
        if self.target == "responses":
            return []
        return [
            self.error("invalid_request_error", f"{kind} requires Responses delegation.", event_id)
        ]

    def _call_owner(self, call_id: str) -> BackendDelegation | None:
        for delegation in self.delegations.values():
            if any(c == call_id for c, _, _ in delegation.calls):
                return delegation
        return None


_HANDLERS: Final[dict[type, Any]] = {
    ce.SessionUpdate: LiveServerSession._update,
    ce.InputAudioMute: LiveServerSession._mute,
    ce.InputAudioUnmute: LiveServerSession._mute,
    ce.InstructionsAppend: LiveServerSession._append,
    ce.ThinkingAppend: LiveServerSession._append,
    ce.CommentaryAppend: LiveServerSession._append,
    ce.OutputAudioFixturePlay: LiveServerSession._fixture,
    ce.ResponseItemCreate: LiveServerSession._response_item,
    ce.ResponseCreate: LiveServerSession._response_create,
    ce.SessionClose: LiveServerSession._close,
    ce.TransportDtmfSend: LiveServerSession._dtmf,  # decoded on a SIP call's sideband only
    ce.DecisionCreate: LiveServerSession._decision_create,
    ce.DecisionItemCreate: LiveServerSession._decision_item,
    ce.DecisionItemDelete: LiveServerSession._decision_item,
    # session.input_audio.append is the pump's (turn detection); it never reaches here.
}
