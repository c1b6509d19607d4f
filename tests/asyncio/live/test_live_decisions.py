"""LiveSession with Decisions delegation against the local server's emulation (real websocket;
for the spoken request also webrtcvad, Whisper and hibari): the model delegates a spoken request
to Decisions, the decision arrives as a typed event, the application's handler acts, records the
new state as a decision item and reports, and the model says it; decision items and ``decide()``
through ``session.decisions``; refusals are clear."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest

from tests.asyncio.live.speech import say
from tests.asyncio.live.test_live_session import until
from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import ErrorEvent
from voxwire.asyncio.live import (
    DecisionItemEvent,
    DecisionRefused,
    DecisionRequest,
    DelegationAnswer,
    DelegationAnsweredEvent,
    DelegationStartedEvent,
    LiveDecisionEvent,
    LiveDecisions,
    LiveSession,
    LiveTranscriptEvent,
)
from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.live import ChoiceOption, ChoiceQuestion, DecisionQuestion, PredicateQuestion
from voxwire.live.decisions import ChoiceAnswer, PredicateAnswer
from voxwire.server import RealtimeServer, Scenario
from voxwire.server.engines.transcribe import WhisperTranscriber

QUESTIONS: list[DecisionQuestion] = [
    ChoiceQuestion(
        name="temperature",
        instructions="How should the cabin temperature change?",
        choices=[ChoiceOption(value="up"), ChoiceOption(value="down"), ChoiceOption(value="none")],
    ),
    PredicateQuestion(name="call_responses", instructions="Does it need navigation or search?"),
]
SCENARIO = Scenario.from_mapping(
    {
        "decisions": [
            {"match": "cold", "say": "One moment.", "answers": {"temperature": "up"}},
            {"match": "defog", "answers": {"temperature": "none", "call_responses": True}},
        ]
    }
)
DRIVER = RealtimeAgent(name="Driver", instructions="Delegate the driver's requests.")
needs_whisper = pytest.mark.skipif(
    not WhisperTranscriber.installed(), reason="needs the transcribe extra (faster-whisper)"
)


@asynccontextmanager
async def local_server(tts: str | None = None) -> AsyncIterator[str]:
    """The local server; with ``tts`` it also listens (Whisper) and speaks."""
    transcriber: Any = "auto" if tts is not None else None
    async with RealtimeServer(scenario=SCENARIO, tts=tts, transcriber=transcriber) as server:
        yield f"{server.base_url}/live/sessions"


@asynccontextmanager
async def decisions_session() -> AsyncIterator[LiveSession]:
    """A Decisions session (no handler) against the local server, text only."""
    decisions = LiveDecisions(questions=QUESTIONS)
    async with (
        local_server() as url,
        LiveSession(DRIVER, url=url, delegation="decisions", decisions=decisions) as session,
    ):
        yield session


async def say_cold(session: LiveSession) -> None:
    await say(session, "It is cold in here.")


def said(events: list[Any]) -> str:
    return "".join(
        e.delta for e in events if isinstance(e, LiveTranscriptEvent) and e.role == "assistant"
    )


@needs_whisper
def test_the_model_delegates_a_spoken_request_and_the_handler_reports() -> None:
    sessions: list[LiveSession] = []
    requests: list[DecisionRequest] = []

    async def on_decision(request: DecisionRequest) -> str:
        requests.append(request)
        answer = request.decision.answer("temperature")
        assert isinstance(answer, ChoiceAnswer)
        # Act (here: a thermostat of 21 degrees), record the new state, then report.
        await sessions[0].decisions.add_item(
            {"type": "message", "role": "user", "content": "Cabin: 21 degrees."}
        )
        return f"I turned the heat {answer.choice} to 21 degrees."

    decisions = LiveDecisions(questions=QUESTIONS, on_decision=on_decision)

    async def body() -> None:
        async with (
            local_server("hibari") as url,
            LiveSession(
                DRIVER, url=url, delegation="decisions", decisions=decisions, context="car"
            ) as session,
        ):
            sessions.append(session)
            await say_cold(session)
            events = await until(session, lambda seen: "21 degrees." in said(seen))
        started = next(e for e in events if isinstance(e, DelegationStartedEvent))
        decided = next(e for e in events if isinstance(e, LiveDecisionEvent))
        assert (started.target, decided.delegation_id) == ("decisions", started.delegation_id)
        assert not decided.requested
        refused = decided.decision.answers[1]
        assert refused.type == "refusal"  # the scenario does not answer it
        [request] = requests
        assert "cold" in request.transcript.lower()
        assert request.context == "car"
        answered = next(e for e in events if isinstance(e, DelegationAnsweredEvent))
        assert (answered.delegation_id, answered.spoken) == (started.delegation_id, True)
        assert any(isinstance(e, DecisionItemEvent) and e.action == "created" for e in events)
        assert said(events).startswith("One moment.")

    asyncio.run(body())


def test_items_and_decide_through_session_decisions() -> None:
    async def body() -> None:
        async with decisions_session() as session:
            item_id = await session.decisions.add_item(
                {"role": "developer", "content": "The driver asked to defog the windshield."}
            )
            assert list(session.decisions.items) == [item_id]
            decision = await session.decisions.decide()
            choice, predicate = decision.answers
            assert isinstance(choice, ChoiceAnswer)
            assert choice.choice == "none"
            assert isinstance(predicate, PredicateAnswer)
            assert predicate.probability == 1.0
            await session.decisions.delete_item(item_id)
            assert session.decisions.items == {}
            with pytest.raises(DecisionRefused, match="no decision item") as refused:
                await session.decisions.delete_item(item_id)
            assert refused.value.param == "item_id"
            with pytest.raises(ConfigurationError, match=r"item\.role"):
                await session.decisions.add_item({"role": "robot", "content": "x"})
            events = await until(
                session, lambda seen: sum(isinstance(e, DecisionItemEvent) for e in seen) == 2
            )
            decided = [e for e in events if isinstance(e, LiveDecisionEvent)]
            assert [e.requested for e in decided] == [True]
            assert [e.action for e in events if isinstance(e, DecisionItemEvent)] == [
                "created",
                "deleted",
            ]

    asyncio.run(body())


def test_decide_needs_decisions_delegation_items_do_not() -> None:
    async def answer(request: Any) -> str:
        return "ok"

    async def body() -> None:
        async with (
            local_server() as url,
            LiveSession(DRIVER, url=url, delegation="client", backend=answer) as session,
        ):
            with pytest.raises(InvalidState, match="Decisions delegation"):
                await session.decisions.decide()
            item_id = await session.decisions.add_item({"role": "user", "content": "x"})
            assert item_id in session.decisions.items

    asyncio.run(body())


@needs_whisper
def test_a_failing_handler_is_reported_and_the_model_told_silently() -> None:
    async def on_decision(request: DecisionRequest) -> DelegationAnswer:
        raise RuntimeError("thermostat offline")

    decisions = LiveDecisions(questions=QUESTIONS, on_decision=on_decision)

    async def body() -> None:
        async with (
            local_server("hibari") as url,
            LiveSession(DRIVER, url=url, delegation="decisions", decisions=decisions) as session,
        ):
            await say_cold(session)
            events = await until(
                session, lambda seen: any(isinstance(e, DelegationAnsweredEvent) for e in seen)
            )
            [error] = [e for e in events if isinstance(e, ErrorEvent)]
            assert "thermostat offline" in error.message
            answered = events[-1]
            assert not answered.spoken  # silent context: the model knows, nothing is made up
            delegation = session.protocol.delegations.get(answered.delegation_id)
            assert delegation is not None
            assert [a.kind for a in delegation.answers] == ["thinking"]

    asyncio.run(body())


@function_tool
async def set_temperature(degrees: int) -> str:
    """Set the cabin temperature."""
    return "ok"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"delegation": "decisions"}, "needs decisions=LiveDecisions"),
        ({"decisions": LiveDecisions(questions=QUESTIONS)}, "with delegation='decisions' only"),
        ({"delegation": "voice"}, "expected 'responses', 'client' or 'decisions'"),
        (
            {"delegation": "decisions", "decisions": LiveDecisions(questions=[])},
            "1 to 400 questions",
        ),
    ],
)
def test_bad_options_are_refused_at_construction(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        LiveSession(DRIVER, url="ws://127.0.0.1:9/live/sessions", **options)


def test_an_agent_with_tools_cannot_use_decisions_delegation() -> None:
    agent = RealtimeAgent(name="Car", instructions="x", tools=[set_temperature])

    async def body() -> None:
        async with local_server() as url:
            session = LiveSession(
                agent, url=url, delegation="decisions", decisions=LiveDecisions(questions=QUESTIONS)
            )
            with pytest.raises(ConfigurationError, match="delegation='decisions'"):
                await session.connect()

    asyncio.run(body())


def test_trigger_decisions_arrive_as_events_and_a_refused_update_raises() -> None:
    trigger = {
        "type": "decisions",
        "event_type": "session.output_transcript.delta",
        "decisions": {"questions": [msgspec.to_builtins(QUESTIONS[1])]},
    }

    async def body() -> None:
        async with decisions_session() as session:
            protocol = session.protocol
            bad = protocol.send_session_update({"triggers": [{**trigger, "event_type": "x"}]})
            with pytest.raises(DecisionRefused, match="event_type") as refused:
                await session.replies.wait(bad, session.flush)
            assert refused.value.param == "session.triggers"
            await session.decisions.set_triggers(on_user=[])  # nothing: disables them
            with pytest.raises(ConfigurationError, match="set_triggers: invalid Decisions"):
                await session.decisions.set_triggers(on_assistant=[{"type": "predicate"}])
            await session.decisions.set_triggers(on_assistant=QUESTIONS[1:])
            assert protocol.session is not None
            assert protocol.session.triggers == [trigger]
            await session.add_context("Defogging now.", spoken=True)
            events = await until(
                session,
                lambda seen: any(isinstance(e, LiveDecisionEvent) and e.trigger_id for e in seen),
            )
            fired = events[-1]
            assert fired.delegation_id is None
            assert fired.source_event_id is not None
            [answer] = fired.decision.answers
            assert isinstance(answer, PredicateAnswer)
            assert answer.probability == 1.0  # the scenario's "defog" rule

    asyncio.run(body())


def test_questions_as_mappings_and_the_acknowledgement_delay() -> None:
    predicate = {"type": "predicate", "name": "p", "instructions": "Is it urgent?"}
    decisions = LiveDecisions(questions=[predicate], model="m", acknowledgement_delay_ms=0)
    assert decisions.delegation() == {
        "type": "decisions",
        "decisions": {"model": "m", "questions": [predicate]},
        "acknowledgement_delay_ms": 0,
    }
