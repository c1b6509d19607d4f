"""The local server's Decisions API over Live: decision items, ``decision.create``, the model's
delegation of a spoken request to Decisions, transcript triggers — against the pure core and
through the official client (``client.live.connect()``, unchanged). Every server frame is
validated against ``openai.types.live.ServerEvent`` and, for the Decisions events, has no field
the official class does not define."""

from __future__ import annotations

import asyncio
import json
import random
import signal
from pathlib import Path
from typing import Any

import msgspec
import pytest
from openai import AsyncOpenAI
from openai.types.decision import Decision as OfficialDecision
from websockets.asyncio.client import connect

from tests.live.mutations import mutate
from tests.live.samples import CLIENT
from tests.server.helpers import realtime_url, run, start_serve
from tests.server.live.test_core import checked, error_of
from tests.server.live.test_server import OFFICIAL, Listener, _speak, live_connection, needs_whisper
from voxwire.exceptions import ConfigurationError
from voxwire.live import client_events as ce
from voxwire.live import server_events as se
from voxwire.live.codec import encode_event
from voxwire.live.decisions import decisions_config
from voxwire.live.objects import LiveSessionConfig
from voxwire.server import RealtimeServer, Scenario
from voxwire.server.core.ids import ServerIds
from voxwire.server.engines.tts import Voice
from voxwire.server.live.core.decisions import decision_rules, scripted_decision
from voxwire.server.live.core.session import Decide, LiveServerSession, Speak

QUESTIONS = [
    {
        "type": "choice",
        "name": "temperature",
        "instructions": "How should the cabin temperature change?",
        "choices": [{"value": "up"}, {"value": "down"}, {"value": "none"}],
    },
    {"type": "predicate", "name": "call_responses", "instructions": "Needs navigation?"},
    {
        "type": "score",
        "name": "urgency",
        "instructions": "How urgent?",
        "levels": [{"label": "low"}, {"label": "high"}],
    },
]
DECISIONS = {"type": "decisions", "decisions": {"model": "gpt-6-luna", "questions": QUESTIONS}}
SCENARIO = Scenario.from_mapping(
    {
        "decisions": [
            {
                "match": "cold",
                "say": "One moment.",
                "answers": {"temperature": "up", "call_responses": False, "urgency": "low"},
            },
            {"match": "defog", "answers": {"temperature": "none", "call_responses": 0.8}},
        ],
        "fallback": "You said: {text}",
    }
)
CABIN = {"type": "message", "role": "user", "content": "Cabin: 18 degrees, defogger on."}


def strict(raw: str | bytes) -> Any:
    """The official event, with no field its class does not define."""
    event = OFFICIAL.validate_json(raw)
    assert event.model_dump(mode="json", exclude_unset=True) == json.loads(raw)
    return event


def started(delegation: dict[str, Any] | None = DECISIONS, **extra: Any) -> LiveServerSession:
    core = LiveServerSession(ServerIds(seed=3))
    raw: dict[str, Any] = {"model": "gpt-live-1", **extra}
    if delegation is not None:
        raw["delegation"] = delegation
    start = ce.SessionStart(event_id="s1", session=msgspec.convert(raw, LiveSessionConfig))
    [event] = checked(core.receive(start, 0.0, 0))
    assert isinstance(event, se.SessionStarted), event
    return core


def start_error(**session: Any) -> Any:
    core = LiveServerSession(ServerIds(seed=3))
    config = msgspec.convert({"model": "gpt-live-1", **session}, LiveSessionConfig)
    return error_of(core.receive(ce.SessionStart(event_id="s1", session=config), 0.0, 0))


# --- the pure core --------------------------------------------------------------------------------


def test_a_bad_decisions_session_is_refused_with_the_parameter() -> None:
    bad = {"type": "decisions", "decisions": {"model": "gpt-6-luna", "questions": []}}
    error = start_error(delegation=bad)
    assert (error.param, error.code) == ("session.delegation.decisions", "invalid_value")
    assert "1 to 400 questions" in error.message
    trigger = {"type": "decisions", "event_type": "session.input_transcript.delta"}
    assert "questions" in start_error(triggers=[{**trigger, "decisions": {}}]).message
    twice = [{**trigger, "decisions": {"questions": QUESTIONS}}] * 2
    assert "at most one trigger" in start_error(triggers=twice).message
    assert start_error(triggers=[{**trigger, "type": "x"}]).param == "session.triggers"
    odd = {**trigger, "event_type": "session.output_audio.delta"}
    assert "event_type" in start_error(triggers=[odd]).message


def test_decision_items_are_stored_and_confirmed() -> None:
    core = started(None)  # items belong to the session whatever its delegation
    [created] = checked(core.receive(ce.DecisionItemCreate(event_id="i1", item=CABIN), 0.0, 0))
    assert isinstance(created, se.DecisionItemCreated)
    assert created.client_event_id == "i1"
    item_id = created.item["id"]
    assert item_id.startswith("ditem_")
    strict(encode_event(created))
    again = ce.DecisionItemCreate(item={**CABIN, "id": item_id})
    assert error_of(core.receive(again, 0.0, 0)).param == "item.id"
    bad = ce.DecisionItemCreate(event_id="i2", item={"type": "image"})
    assert error_of(core.receive(bad, 0.0, 0)).param == "item.type"
    assert "18 degrees" in core.decisions.input_text()
    [deleted] = checked(core.receive(ce.DecisionItemDelete(item_id=item_id), 0.0, 0))
    assert isinstance(deleted, se.DecisionItemDeleted)
    gone = error_of(core.receive(ce.DecisionItemDelete(event_id="d", item_id=item_id), 0.0, 0))
    assert (gone.param, gone.client_event_id) == ("item_id", "d")


def test_decision_create_delegates_and_asks_the_pump_to_decide() -> None:
    core = started()
    outs = core.receive(ce.DecisionCreate(event_id="dc1"), 0.0, 1500)
    created, decide = outs
    checked([created])
    assert isinstance(created, se.DelegationCreated)
    assert (created.client_event_id, created.delegation.target, created.offset_ms) == (
        "dc1",
        "decisions",
        1500,
    )
    assert decide == Decide(created.delegation.id)
    reused = error_of(core.receive(ce.DecisionCreate(event_id="dc1"), 0.0, 0))
    assert (reused.param, reused.client_event_id) == ("event_id", "dc1")
    assert error_of(core.receive(ce.DecisionCreate(), 0.0, 0)).code == "missing_required_parameter"
    # The application reports what it did: commentary by the delegation's id is spoken.
    report = ce.CommentaryAppend(content="Heat is up.", delegation_id=created.delegation.id)
    assert core.receive(report, 0.0, 2000)[1] == Speak("Heat is up.", created.delegation.id)


def test_an_update_keeps_the_model_and_checks_the_questions() -> None:
    core = started()
    update = {"delegation": {"type": "decisions", "decisions": {"questions": QUESTIONS[:1]}}}
    [updated] = checked(core.receive(ce.SessionUpdate(session=update), 0.0, 0))
    assert isinstance(updated, se.SessionUpdated)
    decisions = updated.session.delegation.decisions  # type: ignore[union-attr]
    assert decisions == {"model": "gpt-6-luna", "questions": QUESTIONS[:1]}
    empty = {"delegation": {"type": "decisions", "decisions": {"questions": []}}}
    assert "1 to 400" in error_of(core.receive(ce.SessionUpdate(session=empty), 0.0, 0)).message


def test_scripted_answers_fit_their_questions_or_are_refused() -> None:
    config = decisions_config({"model": "gpt-6-luna", "questions": QUESTIONS})
    assert not isinstance(config, str)
    cases: list[dict[str, Any]] = [
        {"temperature": "up", "call_responses": True, "urgency": 1},
        {"temperature": True, "call_responses": 2.0, "urgency": "medium"},
        {"temperature": "none", "call_responses": 0.25, "urgency": 5},
        {},
    ]
    for answers in cases:
        decision = scripted_decision(config.questions, answers, "gpt-6-luna", "a b c")
        OfficialDecision.model_validate(decision)
        assert decision["usage"]["input_tokens"] == 3
    first = scripted_decision(config.questions, cases[0], "m", "")["answers"]
    assert [a["type"] for a in first] == ["choice", "predicate", "score"]
    assert first[0]["probabilities"][0] == {"value": "up", "probability": 1.0}
    assert (first[1]["probability"], first[2]["score"]) == (1.0, 1.0)
    wrong = scripted_decision(config.questions, cases[1], "m", "")["answers"]
    assert [a["type"] for a in wrong] == ["refusal"] * 3  # True is not "true"; 2.0 > 1
    third = scripted_decision(config.questions, cases[2], "m", "")["answers"]
    assert [a["type"] for a in third] == ["choice", "predicate", "refusal"]
    assert third[1]["probability"] == 0.25
    unnamed = decisions_config(
        {"model": "m", "questions": [{"type": "predicate", "instructions": "x"}]}
    )
    assert not isinstance(unnamed, str)
    by_index = scripted_decision(unnamed.questions, {"0": False}, "m", "")["answers"]
    assert by_index == [{"type": "predicate", "name": None, "probability": 0.0}]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "must be a list"),
        ([{"matches": "x"}], "must be an object"),
        ([{"answers": {"a": [1]}}], "'answers' maps"),
        ([{"say": 3}], "are strings"),
        ([{"match": "("}], "not a regular expression"),
    ],
)
def test_scenario_decisions_are_checked(raw: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        decision_rules(raw)
    with pytest.raises(ConfigurationError, match=message):
        Scenario.from_mapping({"decisions": raw})


# --- the official client against `voxwire serve` ----------------------------------------------


def test_official_client_decision_create_items_and_triggers() -> None:
    async def body() -> None:
        async with live_connection(scenario=SCENARIO, tts=None, transcriber=None) as connection:
            live = Listener(connection)
            await connection.session.start(session={"model": "gpt-live-1", "delegation": DECISIONS})
            await live.until("session.started")
            await connection.decision.item.create(item=CABIN, event_id="i1")
            created = await live.until("decision.item.created", client_event_id="i1")
            await connection.decision.item.create(
                item={"role": "developer", "content": "The driver said: defog the windshield."},
                event_id="i2",
            )
            await live.until("decision.item.created", client_event_id="i2")
            await connection.decision.create(event_id="dc1")
            delegated = await live.until("session.delegation.created", client_event_id="dc1")
            assert delegated.delegation.target == "decisions"
            decided = await live.until("decision.event")
            assert decided.delegation_id == delegated.delegation.id
            assert (decided.trigger_id, decided.source_event_id) == (None, None)
            answers = decided.event.decision.answers
            assert [a.type for a in answers] == ["choice", "predicate", "refusal"]
            assert (answers[0].choice, answers[1].probability) == ("none", 0.8)
            await connection.decision.create(event_id="dc1")
            assert (await live.until("error")).error.param == "event_id"
            await connection.decision.item.delete(item_id=created.item.id, event_id="x1")
            await live.until("decision.item.deleted", client_event_id="x1")
            trigger = {
                "type": "decisions",
                "event_type": "session.output_transcript.delta",
                "decisions": {"questions": QUESTIONS[1:2]},
            }
            await connection.session.update(session={"triggers": [trigger]}, event_id="u1")
            await live.until("session.updated", client_event_id="u1")
            await connection.session.commentary.append(
                content="Defogger on.", delegation_id=delegated.delegation.id
            )
            words = await live.until("session.output_transcript.delta")
            fired = await live.until("decision.event")
            assert (fired.delegation_id, fired.source_event_id) == (None, words.event_id)
            assert fired.source_event_type == "session.output_transcript.delta"
            assert fired.trigger_id.startswith("trig_")
            assert fired.event.decision.answers[0].probability == 0.8
            await connection.session.close()
            await live.until("session.closed")
            for event in live.events:
                if event.type.startswith("decision."):
                    strict(event.model_dump_json(exclude_unset=True))

    run(body())


def test_decision_create_needs_decisions_delegation() -> None:
    async def body() -> None:
        async with live_connection(tts=None, transcriber=None) as connection:
            live = Listener(connection)
            await connection.session.start(session={"model": "gpt-live-1"})
            await live.until("session.started")
            await connection.decision.create(event_id="dc1")
            error = await live.until("error")
            assert error.error.message == "decision.create requires Decisions delegation."
            assert error.error.client_event_id == "dc1"

    run(body())


@needs_whisper
def test_official_client_spoken_request_delegated_to_decisions() -> None:
    """The guide's flow: the driver speaks, the model delegates to Decisions (saying so), the
    decision comes back, the app acts, records the new state as a decision item, waits for it,
    and reports to the model, which says it."""
    voice = Voice.load("hibari")
    try:
        spoken = voice.speak_blocking("It is cold in here.", "alloy", 1.0, "audio/pcm")
    finally:
        voice.close()
    audio = bytes(24_000) + spoken.audio + bytes(24_000 * 4)

    async def body() -> None:
        async with live_connection(scenario=SCENARIO, tts="hibari") as connection:
            live = Listener(connection)
            await connection.session.start(session={"model": "gpt-live-1", "delegation": DECISIONS})
            await live.until("session.started")
            await _speak(connection, audio)
            delegated = await live.until("session.delegation.created")
            assert delegated.delegation.target == "decisions"
            assert delegated.client_event_id is None  # the model's own delegation
            decided = await live.until("decision.event", delegation_id=delegated.delegation.id)
            temperature, needs_responses, urgency = decided.event.decision.answers
            assert (temperature.choice, needs_responses.probability) == ("up", 0.0)
            assert urgency.score == 0.0
            assert live.text("session.output_transcript.delta").startswith("One moment.")
            await connection.decision.item.create(
                item={"type": "message", "role": "user", "content": "Cabin: 21 degrees."},
                event_id="state",
            )
            await live.until("decision.item.created", client_event_id="state")
            await connection.session.commentary.append(
                content="I turned the heat up to 21 degrees.",
                delegation_id=delegated.delegation.id,
            )
            while "21 degrees" not in live.text("session.output_transcript.delta"):
                await live.until("session.usage.updated")
            assert "cold" in live.text("session.input_transcript.delta").lower()

    run(body())


@pytest.mark.parametrize("seed", [0, 1])
def test_mutated_decision_frames_never_close_the_connection(seed: int) -> None:
    """Hostile Decisions commands (and session updates) in a Decisions session with a trigger:
    each is answered or refused, every frame stays valid, the session goes on."""
    rng = random.Random(seed)
    samples = [CLIENT[k] for k in ("decision.create", "decision.item.create", "session.update")]
    samples.append({"type": "decision.item.create", "item": CABIN})
    samples.append({"type": "decision.create", "event_id": "dc"})
    hostile = [mutate(rng, rng.choice(samples)) for _ in range(200)]
    trigger = {
        "type": "decisions",
        "event_type": "session.output_transcript.delta",
        "decisions": {"questions": QUESTIONS[:1]},
    }
    start = {"model": "gpt-live-1", "delegation": DECISIONS, "triggers": [trigger]}

    async def body() -> None:
        server = RealtimeServer(scenario=SCENARIO, tts=None, transcriber=None)
        async with server, connect(f"{server.base_url}/live/sessions") as ws:
            await ws.send(json.dumps({"type": "session.start", "session": start}))
            assert OFFICIAL.validate_json(await ws.recv()).type == "session.started"
            for frame in [*hostile, json.dumps({"type": "decision.create", "event_id": "z"})]:
                await ws.send(frame)
            say = {
                "type": "session.commentary.append",
                "content": "Done.",
                "delegation_id": None,
            }
            await ws.send(json.dumps(say))
            kinds: list[str] = []
            while "session.output_transcript.delta" not in kinds or kinds[-1] != "decision.event":
                kinds.append(strict(await asyncio.wait_for(ws.recv(), 30)).type)
            assert {"error", "decision.event", "session.delegation.created"} <= set(kinds)

    run(body())


def test_voxwire_serve_drives_a_decision_for_the_official_client(tmp_path: Path) -> None:
    """``voxwire serve --scenario`` (a real subprocess) with a scenario ``decisions`` list: the
    official client, unchanged, adds an item, asks for a decision, gets the scripted one."""
    scenario = tmp_path / "scenario.json"
    scenario.write_text(
        json.dumps(
            {"decisions": [{"match": "defog", "answers": {"temperature": "down", "urgency": 1}}]}
        )
    )
    options = ("--port", "0", "--scenario", str(scenario), "--pace", "0", "--no-audio")
    process, line = start_serve(*options)
    try:
        base = realtime_url(line).split("/v1/")[0]

        async def body() -> None:
            client = AsyncOpenAI(
                api_key="sk-dummy",
                base_url=base.replace("ws://", "http://") + "/v1",
                websocket_base_url=base + "/v1",
            )
            async with client.live.connect() as connection:
                live = Listener(connection)
                await connection.session.start(
                    session={"model": "gpt-live-1", "delegation": DECISIONS}
                )
                await live.until("session.started")
                await connection.decision.item.create(
                    item={"role": "user", "content": "Please defog the windshield."}
                )
                await live.until("decision.item.created")
                await connection.decision.create(event_id="ask")
                await live.until("session.delegation.created", client_event_id="ask")
                decided = await live.until("decision.event")
                answers = decided.event.decision.answers
                assert [a.type for a in answers] == ["choice", "refusal", "score"]
                assert (answers[0].choice, answers[2].score) == ("down", 1.0)
                await connection.session.close()
                await live.until("session.closed")

        run(body())
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 130, stderr  # Ctrl-C's status
