"""The Decisions API inside a Live session: questions, decisions, decision items.

GPT-Live can hand a request to the Decisions API instead of a Responses model or the
application (``delegation: {"type": "decisions", "decisions": {"model", "questions"}}``). The
Decisions model answers the configured *questions* — ``choice`` (one of fixed options),
``predicate`` (how likely a statement is true), ``score`` (a level of a rubric) — from the
conversation and the session's shared *decision items* (context the application adds with
``decision.item.create`` and removes with ``decision.item.delete``). A decision arrives as
``decision.event`` (``event.type == "decision.completed"``): for a delegation (the model's, or
one the application asked for with ``decision.create``) or for a transcript trigger
(``session.triggers``).

This module types what voxwire acts on (``openai.types.live.DecisionQuestion``,
``openai.types.decision.Decision``) and checks what goes out, so that a bad question or item is
refused here with a message rather than by the server. Pure data: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal

import msgspec
from msgspec import Struct

__all__ = [
    "ChoiceAnswer",
    "ChoiceOption",
    "ChoiceProbability",
    "ChoiceQuestion",
    "Decision",
    "DecisionAnswer",
    "DecisionQuestion",
    "DecisionUsage",
    "DecisionsConfig",
    "PredicateAnswer",
    "PredicateQuestion",
    "RefusalAnswer",
    "ScoreAnswer",
    "ScoreLevel",
    "ScoreProbability",
    "ScoreQuestion",
    "decision_item_problem",
    "decisions_config",
    "parse_decision",
]

#: The Decisions API takes 1 to 400 questions per request (``DecisionCreateParams``).
MAX_QUESTIONS: Final = 400


class _Object(Struct, kw_only=True, frozen=True, omit_defaults=True):
    pass


class _Tagged(_Object, frozen=True, kw_only=True):
    @property
    def type(self) -> str:
        """The wire ``type`` (the tag), as the official types have it."""
        return str(self.__struct_config__.tag)


# --- questions ----------------------------------------------------------------------------------


class ChoiceOption(_Object, frozen=True, kw_only=True):
    """One option of a ``choice`` question; values are typed (``"true"`` is not ``True``)."""

    value: str | bool
    description: str | None = None


class ChoiceQuestion(_Tagged, tag="choice", tag_field="type", frozen=True, kw_only=True):
    """Pick one of ``choices``."""

    instructions: str | list[dict[str, Any]]
    choices: list[ChoiceOption]
    name: str | None = None


class PredicateQuestion(_Tagged, tag="predicate", tag_field="type", frozen=True, kw_only=True):
    """How likely is the statement in ``instructions`` true?"""

    instructions: str | list[dict[str, Any]]
    name: str | None = None


class ScoreLevel(_Object, frozen=True, kw_only=True):
    """One level of a ``score`` rubric (levels are indexed from 0, in order)."""

    label: str
    description: str | None = None


class ScoreQuestion(_Tagged, tag="score", tag_field="type", frozen=True, kw_only=True):
    """Rate on the rubric ``levels``."""

    instructions: str | list[dict[str, Any]]
    levels: list[ScoreLevel]
    name: str | None = None


DecisionQuestion = ChoiceQuestion | PredicateQuestion | ScoreQuestion


class DecisionsConfig(_Object, frozen=True, kw_only=True):
    """``delegation.decisions``: the Decisions model and the questions it answers, in order."""

    model: str
    questions: list[DecisionQuestion]


# --- answers ------------------------------------------------------------------------------------


class PredicateAnswer(_Tagged, tag="predicate", tag_field="type", frozen=True, kw_only=True):
    probability: float
    name: str | None = None


class ChoiceProbability(_Object, frozen=True, kw_only=True):
    value: str | bool
    probability: float


class ChoiceAnswer(_Tagged, tag="choice", tag_field="type", frozen=True, kw_only=True):
    choice: str | bool
    confidence: float
    probabilities: list[ChoiceProbability]
    name: str | None = None


class ScoreProbability(_Object, frozen=True, kw_only=True):
    label: str
    probability: float
    value: int


class ScoreAnswer(_Tagged, tag="score", tag_field="type", frozen=True, kw_only=True):
    """``score``: the probability-weighted level index; ``probabilities`` per level."""

    score: float
    confidence: float
    probabilities: list[ScoreProbability]
    name: str | None = None


class RefusalAnswer(_Tagged, tag="refusal", tag_field="type", frozen=True, kw_only=True):
    """The model declined this question (the others can still have answers)."""

    name: str | None = None


DecisionAnswer = PredicateAnswer | ChoiceAnswer | ScoreAnswer | RefusalAnswer


class DecisionUsage(_Object, frozen=True, kw_only=True):
    input_tokens: int
    output_tokens: int
    total_tokens: int
    input_tokens_details: dict[str, Any] | None = None
    output_tokens_details: dict[str, Any] | None = None


class Decision(_Object, frozen=True, kw_only=True):
    """A Decisions API response: the answers in question order, the model, token usage."""

    answers: list[DecisionAnswer]
    model: str
    usage: DecisionUsage

    def answer(self, name: str) -> DecisionAnswer | None:
        """The answer to the question called ``name``, or ``None``."""
        return next((a for a in self.answers if a.name == name), None)


def parse_decision(event: Mapping[str, Any]) -> Decision | None:
    """The decision a ``decision.event``'s ``event`` carries (``decision.completed``), or
    ``None`` for another or malformed event. Never raises."""
    if event.get("type") != "decision.completed":
        return None
    try:
        return msgspec.convert(event.get("decision"), Decision)
    except (msgspec.ValidationError, ValueError):  # ValueError: text that is not Unicode
        return None


# --- what goes out ------------------------------------------------------------------------------


def decisions_config(value: object) -> DecisionsConfig | str:
    """``value`` as a :class:`DecisionsConfig`, or what is wrong with it (a sentence)."""
    if isinstance(value, DecisionsConfig):
        config = value
    else:
        try:
            config = msgspec.convert(value, DecisionsConfig)
        except (msgspec.ValidationError, ValueError) as exc:
            return f"invalid Decisions configuration: {exc}"
    problem = questions_problem(config.questions)
    return config if problem is None else problem


def questions_problem(questions: list[DecisionQuestion]) -> str | None:
    """What is wrong with a question list (``None``: nothing)."""
    if not 1 <= len(questions) <= MAX_QUESTIONS:
        return f"Decisions take 1 to {MAX_QUESTIONS} questions, got {len(questions)}"
    for index, question in enumerate(questions):
        where = f"questions[{index}]"
        if not question.instructions:
            return f"{where}: instructions must not be empty"
        if isinstance(question, ChoiceQuestion):
            values = [(type(o.value), o.value) for o in question.choices]
            if len(values) < 2 or len(set(values)) != len(values):
                return f"{where}: a choice needs at least two distinct options"
        elif isinstance(question, ScoreQuestion) and len(question.levels) < 2:
            return f"{where}: a score needs at least two levels"
    return None


class _Strict(Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    pass


class _InputText(_Strict, tag="input_text", tag_field="type", frozen=True, kw_only=True):
    text: str


class _TextPart(_Strict, frozen=True, kw_only=True):
    # Not a tagged struct: alone in a list, msgspec would not require a tag.
    type: Literal["input_text"]
    text: str


class _InputImage(_Strict, tag="input_image", tag_field="type", frozen=True, kw_only=True):
    image_url: str
    detail: Literal["low", "high", "auto", "original"] | None = None


class _InputJSON(_Strict, tag="input_json", tag_field="type", frozen=True, kw_only=True):
    data: dict[str, Any] | list[dict[str, Any]]


class _OutputText(_Strict, tag="output_text", tag_field="type", frozen=True, kw_only=True):
    text: str


class _Refusal(_Strict, tag="refusal", tag_field="type", frozen=True, kw_only=True):
    refusal: str


class _Item(_Strict, frozen=True, kw_only=True):
    id: str | None = None


class _Message(_Item, frozen=True, kw_only=True):
    type: Literal["message"] | None = None


class _UserMessage(_Message, frozen=True, kw_only=True):
    role: Literal["user"]
    content: str | list[_InputText | _InputImage | _InputJSON]


class _InstructionMessage(_Message, frozen=True, kw_only=True):
    role: Literal["developer", "system"]
    content: str | list[_TextPart]


class _AssistantMessage(_Message, frozen=True, kw_only=True):
    role: Literal["assistant"]
    content: str | list[_OutputText | _Refusal]
    phase: Literal["commentary", "final_answer"] | None = None


_Status = Literal["in_progress", "completed", "incomplete"] | None


class _FunctionCall(_Item, frozen=True, kw_only=True):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str
    namespace: str | None = None
    status: _Status = None


class _CustomToolCall(_Item, frozen=True, kw_only=True):
    type: Literal["custom_tool_call"]
    call_id: str
    name: str
    input: str
    namespace: str | None = None
    status: _Status = None


class _ToolOutput(_Item, frozen=True, kw_only=True):
    type: Literal["function_call_output", "custom_tool_call_output"]
    call_id: str
    output: str | list[_InputText | _InputImage]
    status: _Status = None


_MESSAGES: Final[dict[object, type[_Item]]] = {
    "user": _UserMessage,
    "developer": _InstructionMessage,
    "system": _InstructionMessage,
    "assistant": _AssistantMessage,
}
_OTHER_ITEMS: Final[dict[object, type[_Item]]] = {
    "function_call": _FunctionCall,
    "custom_tool_call": _CustomToolCall,
    "function_call_output": _ToolOutput,
    "custom_tool_call_output": _ToolOutput,
}
_AT: Final = re.compile(r" - at `\$(.*)`$")
_FIELD: Final = re.compile(r"field `([^`]+)`")


def decision_item_problem(item: object) -> tuple[str, str] | None:
    """What is wrong with a ``decision.item.create`` item, as ``(param, message)``, or
    ``None``: the shapes of ``DecisionItemCreateEvent.item`` (a user, developer, system or
    assistant message with text or typed parts; a function or custom tool call, or its
    output), no unknown field, a non-empty ``id`` if any."""
    if not isinstance(item, Mapping):
        return "item", f"a decision item is an object, got {type(item).__name__}"
    kind = item.get("type", "message")
    if kind in (None, "message"):
        role = item.get("role")
        shape = _MESSAGES.get(role) if isinstance(role, str) else None
        if shape is None:
            return "item.role", "a decision message's role is user, developer, system or assistant"
    else:
        shape = _OTHER_ITEMS.get(kind) if isinstance(kind, str) else None
        if shape is None:
            return "item.type", (
                "a decision item is a message, function_call, function_call_output, "
                f"custom_tool_call or custom_tool_call_output, got {str(kind)[:64]!r}"
            )
    try:
        checked = msgspec.convert(item, shape)
    except (msgspec.ValidationError, ValueError) as exc:  # ValueError: text that is not Unicode
        where, field = _AT.search(str(exc)), _FIELD.search(str(exc))
        path = (where.group(1) if where else "") + (f".{field.group(1)}" if field else "")
        return f"item{path}", f"invalid {kind} decision item: {exc}"
    if checked.id == "":
        return "item.id", "a decision item's id is non-empty text"
    return None


def item_text(item: Mapping[str, Any]) -> str:
    """The readable text of a decision item (message text, call arguments, outputs)."""
    pieces: list[str] = []
    for key in ("content", "arguments", "input", "output"):
        _collect(item.get(key), pieces)
    return " ".join(pieces)


def _collect(value: object, pieces: list[str]) -> None:
    if isinstance(value, str):
        pieces.append(value)
    elif isinstance(value, list):
        for part in value:
            if isinstance(part, Mapping):
                for key in ("text", "refusal"):
                    if isinstance(part.get(key), str):
                        pieces.append(part[key])
                if "data" in part:
                    pieces.append(msgspec.json.encode(part["data"]).decode())
