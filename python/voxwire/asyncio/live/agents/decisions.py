"""Decisions delegation for a :class:`~voxwire.asyncio.live.LiveSession`
(``delegation="decisions"``).

The application gives the questions (:class:`LiveDecisions`: ``choice``, ``predicate`` and
``score`` questions of :mod:`voxwire.live.decisions`, the Decisions model) and, optionally, a
handler. When the model hands a request to Decisions, the decision arrives as a
:class:`~voxwire.asyncio.live.LiveDecisionEvent`; the handler (an async function of a
:class:`DecisionRequest`) acts on it and says what happened — text (spoken: the model tells
the user, ``session.commentary.append`` for the delegation), a
:class:`~voxwire.asyncio.live.DelegationAnswer` (``spoken=False``: silent context), or ``None``
— as in the guide "Connect voice to Decisions": act, record the new state as a decision item
(:meth:`SessionDecisions.add_item`, which waits for ``decision.item.created``), then report.

``session.decisions`` (:class:`SessionDecisions`) is the public face: ``add_item`` /
``delete_item`` (the shared decision context, any delegation: triggers read it too),
``decide()`` (evaluate the questions now: ``decision.create``), ``items``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

import voxwire.asyncio.events as ev
from voxwire.asyncio.live.agents.delegation import (
    ClientWork,
    DelegationAnswer,
    DelegationRequest,
    WorkHost,
)
from voxwire.asyncio.live.decision_events import DecisionItemEvent, LiveDecisionEvent
from voxwire.asyncio.live.events import LiveHistoryItem
from voxwire.asyncio.live.replies import CommandRefused, Replies
from voxwire.exceptions import ConfigurationError
from voxwire.live import server_events as se
from voxwire.live.decisions import Decision, DecisionQuestion, decisions_config, parse_decision

__all__ = [
    "DecisionHandler",
    "DecisionRefused",
    "DecisionRequest",
    "LiveDecisions",
    "SessionDecisions",
]

#: The Decisions API's model (``DecisionCreateParams.model``: "Only gpt-6-luna is supported").
DEFAULT_DECISIONS_MODEL = "gpt-6-luna"


#: The server refused a Decisions command (``code``, ``param``).
DecisionRefused = CommandRefused


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    """What the decision handler gets: the delegation, the decision, what the user said so
    far (``transcript``), the application's ``context``."""

    delegation_id: str
    decision: Decision
    transcript: str
    context: Any


DecisionHandler = Callable[[DecisionRequest], Awaitable[DelegationAnswer | str | None]]
"""An async function acting on a decision: text (spoken), a
:class:`~voxwire.asyncio.live.DelegationAnswer`, or ``None`` (nothing to report)."""


@dataclass(frozen=True)
class LiveDecisions:
    """Decisions delegation: the ``questions`` (in order; mappings in the official shape or
    the typed questions of :mod:`voxwire.live.decisions`), the Decisions ``model``, the
    handler of the model's delegations (``on_decision``), ``acknowledgement_delay_ms``
    (the API's default: 400)."""

    questions: Sequence[DecisionQuestion | Mapping[str, Any]]
    model: str = DEFAULT_DECISIONS_MODEL
    on_decision: DecisionHandler | None = None
    acknowledgement_delay_ms: int | None = None

    def delegation(self) -> dict[str, Any]:
        """The ``session.start`` delegation (raises :class:`ConfigurationError` with what is
        wrong with the questions)."""
        wire = {"model": self.model, "questions": _questions(self.questions, "LiveDecisions")}
        delegation: dict[str, Any] = {"type": "decisions", "decisions": wire}
        if self.acknowledgement_delay_ms is not None:
            delegation["acknowledgement_delay_ms"] = self.acknowledgement_delay_ms
        return delegation


def _questions(
    questions: Sequence[DecisionQuestion | Mapping[str, Any]], where: str
) -> list[dict[str, Any]]:
    """Questions in the wire shape, checked (:class:`ConfigurationError` saying what is wrong)."""
    wire = [q if isinstance(q, Mapping) else msgspec.to_builtins(q) for q in questions]
    checked = decisions_config({"model": "-", "questions": wire})
    if isinstance(checked, str):
        raise ConfigurationError(f"{where}: {checked}")
    questions_wire: list[dict[str, Any]] = msgspec.to_builtins(checked.questions)
    return questions_wire


def check_delegation_mode(delegation: str, decisions: LiveDecisions | None) -> None:
    """``LiveSession(delegation=..., decisions=...)``: a known mode, and the Decisions
    configuration with ``"decisions"`` only."""
    if delegation not in ("responses", "client", "decisions"):
        raise ConfigurationError(
            f"delegation={delegation!r} is invalid: expected 'responses', 'client' or 'decisions'"
        )
    if (delegation == "decisions") != (decisions is not None):
        raise ConfigurationError(
            "delegation='decisions' needs decisions=LiveDecisions(questions=...), and "
            "decisions= goes with delegation='decisions' only"
        )
    if decisions is not None:
        decisions.delegation()  # the questions are checked now, not at connect()


class DecisionsHost(WorkHost, Protocol):
    """What the Decisions work needs of the session (its answers go through the client
    delegation's work: :class:`WorkHost`)."""

    @property
    def history(self) -> tuple[LiveHistoryItem, ...]: ...

    @property
    def replies(self) -> Replies: ...

    def emit(self, event: Any) -> None: ...

    async def flush(self) -> None: ...

    def spawn(self, work: Awaitable[None], name: str) -> None: ...


class SessionDecisions:
    """``session.decisions``: the decision items, ``decide()``, and the model's delegations
    to Decisions answered by the handler."""

    def __init__(
        self,
        host: DecisionsHost,
        config: LiveDecisions | None,
        context: Any,
    ) -> None:
        self._host = host
        self._config = config
        self._context = context

    def start_delegation(self) -> dict[str, Any] | None:
        """The ``session.start`` delegation of a Decisions session (``None`` otherwise)."""
        return self._config.delegation() if self._config is not None else None

    @property
    def items(self) -> dict[str, dict[str, Any]]:
        """The decision items the server confirmed, by id, oldest first."""
        return dict(self._host.protocol.decision_items)

    async def add_item(self, item: Mapping[str, Any]) -> str:
        """Add context for later decisions (``decision.item.create``: a message, a tool call or
        its output, in the official shape); returns the item's id once the server confirmed it
        (``decision.item.created``). Raises :class:`DecisionRefused` if the server refuses."""
        event_id = self._host.protocol.send_decision_item_create(item)
        answer: str = await self._wait(event_id)
        return answer

    async def delete_item(self, item_id: str) -> None:
        """Remove a decision item (``decision.item.delete``), once the server confirmed it."""
        await self._wait(self._host.protocol.send_decision_item_delete(item_id))

    async def decide(self) -> Decision:
        """Evaluate the session's questions now (``decision.create``; Decisions delegation
        only) and return the decision. It is also emitted as a ``live_decision`` event with
        ``requested=True``; the handler is not called (the application asked)."""
        decision: Decision = await self._wait(self._host.protocol.send_decision_create())
        return decision

    async def set_triggers(
        self,
        *,
        on_user: Sequence[DecisionQuestion | Mapping[str, Any]] = (),
        on_assistant: Sequence[DecisionQuestion | Mapping[str, Any]] = (),
    ) -> None:
        """Transcript triggers (``session.triggers``, any delegation): the questions evaluated
        on every delta of what the user says (``on_user``) or the model says
        (``on_assistant``), with the session's decision items; their decisions arrive as
        ``live_decision`` events with a ``trigger_id``. Replaces the triggers; none given
        disables them. Returns once the server accepted (``session.updated``)."""
        triggers = []
        for event_type, questions in (
            ("session.input_transcript.delta", on_user),
            ("session.output_transcript.delta", on_assistant),
        ):
            if questions:
                checked = _questions(questions, "set_triggers")
                trigger = {"type": "decisions", "event_type": event_type}
                triggers.append({**trigger, "decisions": {"questions": checked}})
        await self._wait(self._host.protocol.send_session_update({"triggers": triggers}))

    async def _wait(self, event_id: str) -> Any:
        return await self._host.replies.wait(event_id, self._host.flush)

    # --- what the session feeds in ---------------------------------------------------------

    def on_event(self, event: se.LiveReceivedEvent) -> None:
        """A Decisions server event (the protocol core has already folded it in)."""
        if isinstance(event, se.DecisionItemCreated):
            item_id = event.item.get("id")
            if isinstance(item_id, str):
                created = DecisionItemEvent(action="created", item_id=item_id, item=event.item)
                self._host.emit(created)
                self._host.replies.settle(event.client_event_id, item_id)
        elif isinstance(event, se.DecisionItemDeleted):
            self._host.emit(DecisionItemEvent(action="deleted", item_id=event.item_id))
            self._host.replies.settle(event.client_event_id, None)
        elif isinstance(event, se.DecisionEvent):
            self._on_decision(event)

    def _on_decision(self, event: se.DecisionEvent) -> None:
        decision = parse_decision(event.event)
        if decision is None:
            self._host.emit(
                ev.ErrorEvent(
                    message=f"a decision.event without a decision: {event.event.get('type')!r}",
                    source="server",
                )
            )
            return
        delegation = self._host.protocol.delegations.get(event.delegation_id or "")
        asked_by = delegation.client_event_id if delegation is not None else None
        self._host.emit(
            LiveDecisionEvent(
                decision=decision,
                delegation_id=event.delegation_id,
                trigger_id=event.trigger_id,
                source_event_id=event.source_event_id,
                requested=asked_by is not None,
            )
        )
        if asked_by is not None:
            self._host.replies.settle(asked_by, decision)
        elif delegation is not None and self._config and self._config.on_decision:
            handler = self._config.on_decision

            async def act(request: DelegationRequest) -> DelegationAnswer | str | None:
                return await handler(
                    DecisionRequest(
                        request.delegation_id, decision, request.transcript, request.context
                    )
                )

            # Answered like a client delegation: commentary (spoken) or thinking by its id.
            said = " ".join(item.text for item in self._host.history if item.role == "user")
            ClientWork(self._host, act, self._context).start(delegation, said)
