"""The Decisions API in voxwire.live: questions and items checked before they go out, decisions
typed as they come in (and valid against the official types both ways), the delegation state
a decision leaves, the decision items the server confirmed."""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
import pytest
from openai.types.decision import Decision as OfficialDecision
from openai.types.live import DecisionsDelegationConfig
from openai.types.live.decision_item_create_event import DecisionItemCreateEvent
from openai.types.live.decision_item_created_event import DecisionItemCreatedEvent
from pydantic import TypeAdapter

from tests.live.mutations import mutate
from tests.live.test_protocol import DECISIONS, frame, started
from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.live import LiveProtocol
from voxwire.live.decisions import (
    ChoiceAnswer,
    ChoiceOption,
    ChoiceQuestion,
    Decision,
    DecisionQuestion,
    DecisionsConfig,
    PredicateQuestion,
    RefusalAnswer,
    ScoreLevel,
    ScoreQuestion,
    decision_item_problem,
    decisions_config,
    item_text,
    parse_decision,
)

USAGE = {
    "input_tokens": 12,
    "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
    "output_tokens": 3,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}
DECISION = {
    "answers": [
        {
            "type": "choice",
            "name": "temperature",
            "choice": "up",
            "confidence": 0.9,
            "probabilities": [{"value": "up", "probability": 0.9}],
        },
        {"type": "predicate", "name": "call_responses", "probability": 0.1},
        {
            "type": "score",
            "name": "urgency",
            "score": 1.2,
            "confidence": 0.8,
            "probabilities": [{"label": "low", "probability": 0.8, "value": 0}],
        },
        {"type": "refusal", "name": None},
    ],
    "model": "gpt-6-luna",
    "usage": USAGE,
}
QUESTIONS: list[DecisionQuestion] = [
    ChoiceQuestion(
        name="temperature",
        instructions="How should the cabin temperature change?",
        choices=[ChoiceOption(value="up"), ChoiceOption(value="down"), ChoiceOption(value=True)],
    ),
    PredicateQuestion(name="call_responses", instructions="Does it need navigation?"),
    ScoreQuestion(
        instructions=[{"type": "input_text", "text": "How urgent?"}],
        levels=[ScoreLevel(label="low"), ScoreLevel(label="high", description="now")],
    ),
]


def decisions_started() -> LiveProtocol:
    return started(DECISIONS)


def test_questions_are_the_official_shape_both_ways() -> None:
    config = DecisionsConfig(model="gpt-6-luna", questions=QUESTIONS)
    wire = msgspec.to_builtins(config)
    official = DecisionsDelegationConfig.model_validate(wire)
    assert official.model_dump(exclude_none=True) == wire
    assert decisions_config(wire) == config
    assert decisions_config(config) is config


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"model": "m"}, "invalid Decisions configuration"),
        ({"model": "m", "questions": []}, "1 to 400 questions"),
        ({"model": "m", "questions": [{"type": "predicate", "instructions": ""}]}, "empty"),
        (
            {
                "model": "m",
                "questions": [
                    {"type": "choice", "instructions": "x", "choices": [{"value": "a"}] * 2}
                ],
            },
            "two distinct options",
        ),
        (
            {
                "model": "m",
                "questions": [{"type": "score", "instructions": "x", "levels": [{"label": "a"}]}],
            },
            "two levels",
        ),
    ],
)
def test_bad_questions_are_refused_with_a_reason(config: dict[str, Any], message: str) -> None:
    problem = decisions_config(config)
    assert isinstance(problem, str)
    assert message in problem
    live = LiveProtocol()
    with pytest.raises(ConfigurationError, match=r"delegation\.decisions"):
        live.send_session_start(
            {"model": "gpt-live-1", "delegation": {"type": "decisions", "decisions": config}}
        )
    assert live.state == "idle"


def test_a_choice_takes_a_string_and_a_boolean_with_the_same_text() -> None:
    question = {
        "type": "choice",
        "instructions": "x",
        "choices": [{"value": "true"}, {"value": True}],
    }
    assert isinstance(decisions_config({"model": "m", "questions": [question]}), DecisionsConfig)


def test_decisions_are_typed_and_official() -> None:
    OfficialDecision.model_validate(DECISION)
    decision = parse_decision({"type": "decision.completed", "decision": DECISION})
    assert isinstance(decision, Decision)
    assert [a.type for a in decision.answers] == ["choice", "predicate", "score", "refusal"]
    temperature = decision.answer("temperature")
    assert isinstance(temperature, ChoiceAnswer)
    assert temperature.choice == "up"
    assert decision.answer("nothing") is None
    assert isinstance(decision.answers[3], RefusalAnswer)
    assert decision.usage.total_tokens == 15
    assert msgspec.to_builtins(decision)["answers"][1] == DECISION["answers"][1]  # type: ignore[index]


@pytest.mark.parametrize(
    "event",
    [
        {"type": "decision.failed"},
        {"type": "decision.completed"},
        {"type": "decision.completed", "decision": {"answers": "no"}},
        {"type": "decision.completed", "decision": {**DECISION, "answers": [{"type": "x"}]}},
    ],
)
def test_odd_decisions_are_none_never_an_exception(event: dict[str, Any]) -> None:
    assert parse_decision(event) is None


ITEMS_OK: list[dict[str, Any]] = [
    {"type": "message", "role": "user", "content": "Cabin: 18 degrees, defogger off."},
    {"role": "developer", "content": [{"type": "input_text", "text": "x"}], "id": "it_1"},
    {"type": "function_call", "call_id": "c", "name": "set_temp", "arguments": "{}"},
    {
        "type": "function_call_output",
        "call_id": "c",
        "output": [{"type": "input_text", "text": "ok"}],
    },
    {"type": "custom_tool_call", "call_id": "c", "name": "n", "input": "i"},
    {"type": "custom_tool_call_output", "call_id": "c", "output": "o"},
]


@pytest.mark.parametrize("item", ITEMS_OK)
def test_every_official_item_shape_passes(item: dict[str, Any]) -> None:
    assert decision_item_problem(item) is None
    DecisionItemCreateEvent.model_validate({"type": "decision.item.create", "item": item})


@pytest.mark.parametrize(
    ("item", "param"),
    [
        ("text", "item"),
        ({"role": "user", "content": "x", "id": ""}, "item.id"),
        ({"role": "robot", "content": "x"}, "item.role"),
        ({"role": "user", "content": 3}, "item.content"),
        ({"type": "image"}, "item.type"),
        ({"type": 7}, "item.type"),
        ({"type": "function_call", "call_id": "c", "name": "n"}, "item.arguments"),
        ({"type": "function_call_output", "call_id": "c", "output": 1}, "item.output"),
    ],
)
def test_bad_items_name_the_field(item: Any, param: str) -> None:
    problem = decision_item_problem(item)
    assert problem is not None
    assert problem[0] == param
    live = decisions_started()
    with pytest.raises(ConfigurationError, match=param.replace(".", r"\.")):
        live.send_decision_item_create(item)
    assert live.data_to_send() == []


def test_item_text_reads_every_readable_part() -> None:
    item = {
        "content": [
            {"type": "input_text", "text": "cabin"},
            {"type": "refusal", "refusal": "no"},
            {"type": "input_json", "data": {"t": 18}},
            "stray",
        ],
        "arguments": "{}",
        "output": "done",
    }
    assert item_text(item) == 'cabin no {"t":18} {} done'


def test_decision_create_names_the_delegation_it_answers() -> None:
    live = decisions_started()
    event_id = live.send_decision_create()
    assert json.loads(live.data_to_send()[0]) == {"type": "decision.create", "event_id": event_id}
    assert live.pending_event_ids() == {event_id: "decision.create"}
    delegation = {"id": "del_9", "type": "delegation", "target": "decisions"}
    live.receive_text(
        frame("session.delegation.created", delegation=delegation, client_event_id=event_id)
    )
    assert live.pending_event_ids() == {}
    [record] = live.delegations
    assert (record.client_event_id, record.status) == (event_id, "open")
    event = {"type": "decision.completed", "decision": DECISION}
    live.receive_text(frame("decision.event", delegation_id="del_9", event=event))
    assert record.status == "completed"
    assert record.decision is not None
    assert record.decision.model == "gpt-6-luna"
    # The application reports what it did, by the delegation's id (not refused: only
    # Responses delegation refuses ids).
    live.send_commentary("I turned the heat up.", "del_9")
    assert [a.kind for a in record.answers] == ["commentary"]
    # A malformed decision, a trigger's decision and an unknown delegation change nothing.
    live.receive_text(frame("decision.event", delegation_id="del_9", event={"type": "x"}))
    live.receive_text(frame("decision.event", delegation_id=None, trigger_id="t1"))
    live.receive_text(frame("decision.event", delegation_id="del_404"))
    assert record.decision.model == "gpt-6-luna"
    assert live.delegations.decided("del_9", None) is record


def test_a_responses_delegation_still_refuses_ids() -> None:
    live = decisions_started()
    responses = {"id": "del_r", "type": "delegation", "target": "responses"}
    live.receive_text(frame("session.delegation.created", delegation=responses))
    with pytest.raises(InvalidState, match="client or Decisions delegation"):
        live.send_thinking("x", "del_r")


def test_decision_items_follow_the_server() -> None:
    live = decisions_started()
    created = live.send_decision_item_create(ITEMS_OK[0])
    stored = {**ITEMS_OK[0], "id": "ditem_1"}
    live.receive_text(frame("decision.item.created", item=stored, client_event_id=created))
    assert live.decision_items == {"ditem_1": stored}
    live.receive_text(frame("decision.item.created", item={"role": "user", "content": "no id"}))
    assert list(live.decision_items) == ["ditem_1"]
    deleted = live.send_decision_item_delete("ditem_1")
    live.receive_text(frame("decision.item.deleted", item_id="ditem_1", client_event_id=deleted))
    assert live.decision_items == {}
    assert live.pending_event_ids() == {}
    with pytest.raises(ConfigurationError, match="item_id"):
        live.send_decision_item_delete("")


def test_questions_in_an_update_are_checked() -> None:
    live = decisions_started()
    with pytest.raises(ConfigurationError, match="1 to 400"):
        live.send_session_update(
            {"delegation": {"type": "decisions", "decisions": {"questions": []}}}
        )
    live.send_session_update(
        {"delegation": {"type": "decisions", "decisions": {"model": "gpt-6-luna"}}}
    )
    live.send_session_update({"delegation": {"type": "decisions", "acknowledgement_delay_ms": 0}})
    assert len(live.data_to_send()) == 2


@pytest.mark.parametrize("seed", range(4))
def test_mutated_items_and_decisions_never_raise(seed: int) -> None:
    """An item that passes the check is one the official types take, stored with its id; any
    other gets a reason. A mutated decision is typed or ``None``."""
    rng = random.Random(seed)
    created = TypeAdapter(DecisionItemCreatedEvent)
    for _ in range(300):
        try:
            item = json.loads(mutate(rng, rng.choice(ITEMS_OK)))
        except (ValueError, RecursionError):
            continue
        problem = decision_item_problem(item)
        if problem is None:
            DecisionItemCreateEvent.model_validate({"type": "decision.item.create", "item": item})
            stored = {**item, "id": item.get("id") or "ditem_1"}
            created.validate_python(
                {"type": "decision.item.created", "event_id": "e", "item": stored}
            )
        else:
            assert problem[0].startswith("item")
        try:
            decision = json.loads(mutate(rng, DECISION))
        except (ValueError, RecursionError):
            continue
        parse_decision({"type": "decision.completed", "decision": decision})
