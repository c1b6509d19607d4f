"""The local server's Decisions API inside a Live session, pure: decision items, scripted
decisions, transcript triggers.

What the hosted service does, as the Live reference and the "Connect voice to Decisions" guide
describe it, and how the emulation plays it:

* ``decision.item.create`` appends an item to the session's shared decision context (any
  delegation: triggers use it too); the server confirms with ``decision.item.created`` (the
  item with its ``id``, one made when the client gave none); ``decision.item.delete`` removes
  it (``decision.item.deleted``). A repeated id, an unknown id or a malformed item is an
  ``error`` naming the parameter.
* ``decision.create`` (Decisions delegation only; its ``event_id`` is required and may not be
  reused in the session) evaluates the configured questions: ``session.delegation.created``
  (target ``decisions``, ``client_event_id`` the command's id), then ``decision.event`` for
  that delegation. The model delegates to Decisions the same way when the scenario says so.
* ``session.triggers`` fire on every input or output transcript delta of their
  ``event_type``: ``decision.event`` with a fresh ``trigger_id`` and the delta's ``event_id``
  as ``source_event_id``.

The Decisions *model* is the scenario's ``decisions`` rules (:class:`DecisionRule`):
``{"match": regex, "say": text, "answers": {question name or index: answer}}``. For a
delegation of the model the rule whose ``match`` is found in the user's turn decides (its
``say`` is spoken first, as the acknowledgement); for ``decision.create`` and triggers, the
first rule whose ``match`` is found in the Decisions input (the conversation's transcript and
the decision items' text) or that has none. An answer is a choice's value, ``true``/``false``
or a probability for a predicate, a level's index or label for a score, ``null`` for a refusal;
a question without an answer, or with one that does not fit it, is refused — as the API may
refuse any question. Scripted answers are certain (probability 1 for the answer).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from voxwire.exceptions import ConfigurationError
from voxwire.live import server_events as se
from voxwire.live.decisions import (
    ChoiceQuestion,
    DecisionQuestion,
    DecisionsConfig,
    PredicateQuestion,
    decision_item_problem,
    decisions_config,
    item_text,
)
from voxwire.server.core.ids import ServerIds

__all__ = [
    "DecisionDesk",
    "DecisionRule",
    "decision_rules",
    "scripted_decision",
    "triggers_problem",
]

_TRIGGER_TYPES: Final = ("session.input_transcript.delta", "session.output_transcript.delta")
_RULE_KEYS: Final = frozenset({"match", "say", "answers"})


@dataclass(frozen=True)
class DecisionRule:
    """One scripted decision of the scenario (see the module docstring)."""

    match: re.Pattern[str] | None = None
    say: str | None = None
    answers: Mapping[str, Any] = field(default_factory=dict)


def decision_rules(raw: object) -> tuple[DecisionRule, ...]:
    """The scenario's ``decisions`` list, checked."""
    if not isinstance(raw, list):
        raise ConfigurationError("scenario 'decisions' must be a list of objects")
    rules = []
    for index, entry in enumerate(raw):
        where = f"scenario decision {index}"
        if not isinstance(entry, dict) or set(entry) - _RULE_KEYS:
            raise ConfigurationError(f"{where} must be an object with 'match', 'say', 'answers'")
        answers = entry.get("answers", {})
        if not isinstance(answers, dict) or not all(
            v is None or isinstance(v, str | bool | int | float) for v in answers.values()
        ):
            raise ConfigurationError(
                f"{where}: 'answers' maps question names (or indexes) to a choice's value, "
                "true/false or a probability, a score's level (index or label), or null"
            )
        say, match = entry.get("say"), entry.get("match")
        if (say is not None and not isinstance(say, str)) or (
            match is not None and not isinstance(match, str)
        ):
            raise ConfigurationError(f"{where}: 'match' and 'say' are strings")
        try:
            pattern = re.compile(match, re.IGNORECASE) if match is not None else None
        except re.error as exc:
            raise ConfigurationError(
                f"{where}: 'match' is not a regular expression: {exc}"
            ) from None
        rules.append(DecisionRule(match=pattern, say=say, answers=dict(answers)))
    return tuple(rules)


def scripted_decision(
    questions: Sequence[DecisionQuestion],
    answers: Mapping[str, Any],
    model: str,
    input_text: str,
) -> dict[str, Any]:
    """The ``decision`` of a ``decision.completed`` (``openai.types.decision.Decision``)."""
    out = [
        _answer(q, answers.get(q.name if q.name is not None else str(i)))
        for i, q in enumerate(questions)
    ]
    input_tokens = max(1, len(input_text.split()))
    return {
        "answers": out,
        "model": model,
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
            "output_tokens": len(out),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + len(out),
        },
    }


def _answer(question: DecisionQuestion, value: object) -> dict[str, Any]:
    name = question.name
    refusal = {"type": "refusal", "name": name}
    if value is None:
        return refusal
    if isinstance(question, ChoiceQuestion):
        options = [o.value for o in question.choices]
        if not any(type(o) is type(value) and o == value for o in options):
            return refusal
        return {
            "type": "choice",
            "name": name,
            "choice": value,
            "confidence": 1.0,
            "probabilities": [
                {"value": o, "probability": 1.0 if type(o) is type(value) and o == value else 0.0}
                for o in options
            ],
        }
    if isinstance(question, PredicateQuestion):
        if isinstance(value, bool):
            return {"type": "predicate", "name": name, "probability": 1.0 if value else 0.0}
        if isinstance(value, int | float) and 0.0 <= value <= 1.0:
            return {"type": "predicate", "name": name, "probability": float(value)}
        return refusal
    labels = [level.label for level in question.levels]
    if isinstance(value, str) and value in labels:
        level = labels.index(value)
    elif isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(labels):
        level = value
    else:
        return refusal
    return {
        "type": "score",
        "name": name,
        "score": float(level),
        "confidence": 1.0,
        "probabilities": [
            {"label": label, "value": i, "probability": 1.0 if i == level else 0.0}
            for i, label in enumerate(labels)
        ],
    }


def triggers_problem(triggers: object) -> str | None:
    """What is wrong with ``session.triggers`` (``None``: nothing)."""
    if triggers is None:
        return None
    if not isinstance(triggers, list):
        return "triggers is a list"
    seen: set[object] = set()
    for index, trigger in enumerate(triggers):
        kind = trigger.get("event_type") if isinstance(trigger, dict) else None
        if not isinstance(trigger, dict) or trigger.get("type") != "decisions":
            return f"triggers[{index}]: a trigger is {{'type': 'decisions', ...}}"
        if kind not in _TRIGGER_TYPES:
            return f"triggers[{index}].event_type must be one of {', '.join(_TRIGGER_TYPES)}"
        if kind in seen:
            return f"at most one trigger per transcript event type ({kind} twice)"
        seen.add(kind)
        decisions = trigger.get("decisions")
        questions = decisions.get("questions") if isinstance(decisions, dict) else None
        checked = decisions_config({"model": "-", "questions": questions})
        if isinstance(checked, str):
            return f"triggers[{index}].decisions: {checked}"
    return None


class ErrorMaker(Protocol):
    def __call__(
        self, code: str, message: str, client_event_id: str | None = None, param: str | None = None
    ) -> se.LiveErrorEvent: ...


class DecisionDesk:
    """One Live session's decision context: items by id, used ``decision.create`` ids, the
    transcript so far (what the Decisions model reads)."""

    def __init__(self, ids: ServerIds, error: ErrorMaker) -> None:
        self._ids = ids
        self.error = error  # the session's: (code, message, client_event_id, param) -> error
        self.items: dict[str, dict[str, Any]] = {}
        self.used_event_ids: set[str] = set()
        self.transcript: list[str] = []

    def _new_id(self, prefix: str) -> str:
        return self._ids.item().replace("item_", prefix, 1)

    def heard(self, role: str, text: str) -> None:
        """A line of the conversation (the pump's: what was said, by whom)."""
        if text.strip():
            self.transcript.append(f"{role}: {text.strip()}")

    def input_text(self) -> str:
        """What the Decisions model reads: the transcript, then the items' text."""
        return "\n".join([*self.transcript, *(item_text(i) for i in self.items.values())])

    def create_item(self, item: dict[str, Any], client_event_id: str | None) -> se.LiveServerEvent:
        problem = decision_item_problem(item)
        item_id = item.get("id") if problem is None else None
        if problem is None and item_id in self.items:
            problem = ("item.id", f"a decision item with id {str(item_id)[:64]!r} exists already")
        if problem is not None:
            return self.error("invalid_value", problem[1], client_event_id, problem[0])
        stored = {**item, "id": item_id if isinstance(item_id, str) else self._new_id("ditem_")}
        self.items[stored["id"]] = stored
        return se.DecisionItemCreated(
            event_id=self._ids.event(), client_event_id=client_event_id, item=stored
        )

    def delete_item(self, item_id: str, client_event_id: str | None) -> se.LiveServerEvent:
        if self.items.pop(item_id, None) is None:
            return self.error(
                "invalid_value",
                f"no decision item has id {item_id[:64]!r}",
                client_event_id,
                "item_id",
            )
        return se.DecisionItemDeleted(
            event_id=self._ids.event(), client_event_id=client_event_id, item_id=item_id
        )

    def create_problem(self, event_id: str | None, config: object) -> se.LiveErrorEvent | None:
        """Why a ``decision.create`` is refused, or ``None`` (its id is then used up)."""
        if not isinstance(config, DecisionsConfig):
            return self.error(
                "invalid_request_error", "decision.create requires Decisions delegation.", event_id
            )
        if not event_id:
            return self.error(
                "missing_required_parameter", "decision.create needs an event_id", None, "event_id"
            )
        if event_id in self.used_event_ids:
            return self.error(
                "invalid_value",
                f"event_id {event_id[:64]!r} was already used by decision.create in this session",
                event_id,
                "event_id",
            )
        self.used_event_ids.add(event_id)
        return None

    def decision_event(
        self,
        rule: DecisionRule | None,
        config: DecisionsConfig,
        *,
        delegation_id: str | None = None,
        trigger: tuple[str, str] | None = None,
    ) -> se.DecisionEvent:
        """``decision.event`` for a delegation, or for a trigger (``(source event id,
        source event type)``), answered by ``rule`` (``None``: every question refused)."""
        text = self.input_text()
        decision = scripted_decision(
            config.questions, rule.answers if rule else {}, config.model, text
        )
        return se.DecisionEvent(
            event_id=self._ids.event(),
            event={"type": "decision.completed", "decision": decision},
            delegation_id=delegation_id,
            trigger_id=self._new_id("trig_") if trigger else None,
            source_event_id=trigger[0] if trigger else None,
            source_event_type=trigger[1] if trigger else None,
        )

    def rule_for_input(self, rules: Sequence[DecisionRule]) -> DecisionRule | None:
        """The rule deciding ``decision.create`` and triggers."""
        text = self.input_text()
        return next((r for r in rules if r.match is None or r.match.search(text)), None)


def rule_for_turn(rules: Sequence[DecisionRule], user_text: str) -> DecisionRule | None:
    """The rule by which the model delegates a user's turn to Decisions (``match`` found)."""
    return next((r for r in rules if r.match is not None and r.match.search(user_text)), None)


def session_decisions(session: object) -> DecisionsConfig | None:
    """The session's Decisions configuration (``None`` unless it delegates to Decisions)."""
    delegation = getattr(session, "delegation", None)
    raw = getattr(delegation, "decisions", None)
    if raw is None:
        return None
    checked = decisions_config(raw)
    return checked if isinstance(checked, DecisionsConfig) else None


def trigger_config(trigger: Mapping[str, Any], model: str) -> DecisionsConfig | None:
    """A trigger's questions as a configuration (the session's Decisions model, else
    ``model``)."""
    decisions = trigger.get("decisions")
    questions = decisions.get("questions") if isinstance(decisions, Mapping) else None
    checked = decisions_config({"model": model, "questions": questions})
    return checked if isinstance(checked, DecisionsConfig) else None
