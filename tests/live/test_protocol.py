"""LiveProtocol: the session lifecycle, the local refusals, delegation state, usage — driven by
plain method calls, no event loop."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.live.samples import SERVER, SESSION
from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.live import Answer, LiveProtocol, LiveSessionConfig
from voxwire.live import server_events as se
from voxwire.protocol.ids import CounterIds


def frame(kind: str, **changes: Any) -> str:
    raw = json.loads(json.dumps(SERVER[kind]))
    raw.update(changes)
    return json.dumps(raw)


def session(delegation: dict[str, Any] | None) -> dict[str, Any]:
    return {**SESSION, "delegation": delegation}


def started(delegation: dict[str, Any] | None = None) -> LiveProtocol:
    live = LiveProtocol(ids=CounterIds("t"))
    config: dict[str, Any] = {"model": "gpt-live-1"}
    if delegation is not None:
        config["delegation"] = delegation
    start_id = live.send_session_start(config)
    live.receive_text(
        frame("session.started", session=session(delegation), client_event_id=start_id)
    )
    live.events_received()
    live.data_to_send()
    return live


RESPONSES = {"type": "responses", "responses": {"model": "gpt-5.5"}}
DECISIONS = {
    "type": "decisions",
    "decisions": {"model": "gpt-6-luna", "questions": [{"type": "predicate", "instructions": "x"}]},
}


def test_session_start_goes_first_and_nothing_before_started() -> None:
    live = LiveProtocol()
    assert live.state == "idle"
    assert live.session is None
    assert live.delegation_target == "client"
    with pytest.raises(InvalidState, match=r"send session\.start first"):
        live.send_input_audio(b"\x00\x00")
    event_id = live.send_session_start({"model": "gpt-live-1", "instructions": "Hi."})
    assert live.state == "starting"
    [sent] = live.data_to_send()
    assert json.loads(sent) == {
        "type": "session.start",
        "event_id": event_id,
        "session": {"model": "gpt-live-1", "instructions": "Hi."},
    }
    assert live.pending_event_ids() == {event_id: "session.start"}
    with pytest.raises(InvalidState, match=r"send session\.start first"):
        live.send_commentary("hello")
    with pytest.raises(InvalidState, match="already sent"):
        live.send_session_start({"model": "gpt-live-1"})
    live.receive_text(frame("session.started", client_event_id=event_id))
    [event] = live.events_received()
    assert isinstance(event, se.SessionStarted)
    assert live.state == "active"
    assert live.pending_event_ids() == {}
    assert live.session is not None
    assert live.session.id == "sess_1"
    assert live.delegation_target == "responses"


def test_session_start_takes_a_typed_config() -> None:
    live = LiveProtocol()
    live.send_session_start(LiveSessionConfig(model="gpt-live-1.1"))
    assert json.loads(live.data_to_send()[0])["session"] == {"model": "gpt-live-1.1"}


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"model": "gpt-live-1", "voice": "marin"}, "does not know 'voice'"),
        ({"instructions": "x"}, "invalid Live session configuration"),
        (
            {"model": "gpt-live-1", "audio": {"format": {"type": "audio/pcm", "rate": 8000}}},
            "16000",
        ),
        ({"model": "gpt-live-1", "delegation": {"type": "elsewhere"}}, "invalid"),
        ("gpt-live-1", "mapping"),
    ],
)
def test_bad_start_configs_are_refused_before_anything_is_queued(config: Any, says: str) -> None:
    live = LiveProtocol()
    with pytest.raises(ConfigurationError, match=says):
        live.send_session_start(config)
    assert live.data_to_send() == []
    assert live.state == "idle"


def test_a_refused_start_may_be_sent_again() -> None:
    live = LiveProtocol()
    event_id = live.send_session_start({"model": "gpt-live-9"})
    error = json.loads(frame("error"))
    error["error"]["client_event_id"] = event_id
    live.receive_text(json.dumps(error))
    assert live.state == "idle"
    live.send_session_start({"model": "gpt-live-1"})
    assert live.state == "starting"


@pytest.mark.parametrize("field", ["model", "instructions", "audio", "input", "store"])
def test_immutable_fields_are_refused_locally(field: str) -> None:
    live = started()
    with pytest.raises(ConfigurationError, match=f"{field} cannot change after startup"):
        live.send_session_update({field: "x", "triggers": []})
    assert live.data_to_send() == []


def test_update_rules() -> None:
    live = started(RESPONSES)
    with pytest.raises(ConfigurationError, match="does not know 'speed'"):
        live.send_session_update({"speed": 2})
    with pytest.raises(ConfigurationError, match="not its owner"):
        live.send_session_update({"delegation": {"type": "client"}})
    with pytest.raises(ConfigurationError, match="not its owner"):
        live.send_session_update({"delegation": "client"})
    event_id = live.send_session_update(
        {"delegation": {"type": "responses", "responses": {"instructions": "Be exact."}}}
    )
    assert json.loads(live.data_to_send()[0])["session"]["delegation"]["type"] == "responses"
    live.receive_text(frame("session.updated", client_event_id=event_id))
    assert live.pending_event_ids() == {}
    live.send_session_update({"triggers": []})


def test_client_delegation_answered_by_commentary_and_thinking() -> None:
    live = started()
    assert live.delegation_target == "client"
    live.receive_text(frame("session.delegation.created"))
    [delegation] = live.delegations.open()
    assert (delegation.id, delegation.target, delegation.offset_ms) == ("del_1", "client", 1200)
    live.send_thinking("Checking the forecast.", "del_1")
    assert live.delegations.get("del_1").status == "open"  # type: ignore[union-attr]
    live.send_commentary("It is sunny in Paris.", "del_1")
    live.send_instructions("Mention the source.", "del_1")
    done = live.delegations.get("del_1")
    assert done is not None
    assert done.status == "answered"
    assert not done.is_open
    assert [a.kind for a in done.answers] == ["thinking", "commentary", "instructions"]
    frames = [json.loads(f) for f in live.data_to_send()]
    assert [f["type"] for f in frames] == [
        "session.thinking.append",
        "session.commentary.append",
        "session.instructions.append",
    ]
    assert all(f["delegation_id"] == "del_1" for f in frames)
    live.send_commentary("General remark.")  # session-wide: delegation_id null
    assert json.loads(live.data_to_send()[0])["delegation_id"] is None
    with pytest.raises(InvalidState, match="requires Responses delegation"):
        live.send_function_output("call_1", "{}")
    with pytest.raises(InvalidState, match="requires Responses delegation"):
        live.send_response_create()


def test_appends_check_their_delegation_and_content() -> None:
    live = started(RESPONSES)
    with pytest.raises(InvalidState, match="'del_9' is unknown"):
        live.send_commentary("x", "del_9")
    live.receive_text(
        frame(
            "session.delegation.created",
            delegation={"id": "del_2", "type": "delegation", "target": "responses"},
        )
    )
    with pytest.raises(InvalidState, match="owned by 'responses'"):
        live.send_thinking("x", "del_2")
    with pytest.raises(ConfigurationError, match="non-empty text"):
        live.send_commentary("")


def responses_event(event: dict[str, Any], delegation_id: str | None = "del_2") -> str:
    raw: dict[str, Any] = {"type": "response.event", "event_id": "ev", "event": event}
    if delegation_id is not None:
        raw["delegation_id"] = delegation_id
    return json.dumps(raw)


def call_item(call_id: str = "call_1", **extra: Any) -> dict[str, Any]:
    item = {"type": "function_call", "call_id": call_id, "name": "weather", "arguments": "{}"}
    return {"type": "response.output_item.done", "item": {**item, **extra}}


def test_responses_delegation_function_calls_and_completion() -> None:
    live = started(RESPONSES)
    live.receive_text(
        frame(
            "session.delegation.created",
            delegation={
                "id": "del_2",
                "type": "delegation",
                "target": "responses",
                "response_id": "resp_1",
            },
        )
    )
    live.receive_text(responses_event(call_item(id="item_1")))
    delegation = live.delegations.get("del_2")
    assert delegation is not None
    call = delegation.pending_calls["call_1"]
    assert (call.name, call.arguments, call.item_id) == ("weather", "{}", "item_1")
    assert live.delegations.call_for("call_1") is delegation
    live.send_function_output("call_1", '{"sky": "clear"}')
    live.send_response_create()
    frames = [json.loads(f) for f in live.data_to_send()]
    assert frames[0]["item"] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": '{"sky": "clear"}',
    }
    assert frames[1]["type"] == "response.create"
    assert delegation.pending_calls == {}
    assert delegation.answered_calls == ["call_1"]
    live.receive_text(responses_event(call_item()))  # a replay of an answered call
    assert delegation.pending_calls == {}
    # Found by the response id when the envelope has no delegation_id.
    live.receive_text(
        responses_event({"type": "response.completed", "response": {"id": "resp_1"}}, None)
    )
    assert delegation.status == "completed"
    assert delegation.backend_events == 3
    assert live.delegations.open() == []
    assert list(live.delegations) == [delegation]


@pytest.mark.parametrize(
    "event",
    [
        {"type": "response.output_item.done", "item": {"type": "message"}},
        {"type": "response.output_item.done", "item": {"type": "function_call", "call_id": 3}},
        {"type": "response.output_item.done", "item": "junk"},
        {"type": 7},
    ],
)
def test_odd_backend_events_are_skipped(event: dict[str, Any]) -> None:
    live = started(RESPONSES)
    live.receive_text(
        frame(
            "session.delegation.created",
            delegation={"id": "del_2", "type": "delegation", "target": "responses"},
        )
    )
    live.receive_text(responses_event(event))
    delegation = live.delegations.get("del_2")
    assert delegation is not None
    assert delegation.pending_calls == {}
    assert delegation.status == "open"
    assert delegation.backend_events == 1


def test_backend_events_without_an_owner_change_nothing() -> None:
    live = started(RESPONSES)
    live.receive_text(responses_event({"type": "response.failed"}, "del_404"))
    live.receive_text(responses_event({"type": "response.failed", "response": {"id": 1}}, None))
    live.receive_text(responses_event({"type": "response.failed", "response": {"id": "r"}}, None))
    assert list(live.delegations) == []
    assert live.delegations.call_answered("call_404", "x") is None


def test_function_output_and_items_are_checked() -> None:
    live = started(RESPONSES)
    with pytest.raises(ConfigurationError, match="function output is text"):
        live.send_function_output("call_1", {"x": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="string 'type'"):
        live.send_response_item({"call_id": "c"})
    with pytest.raises(ConfigurationError, match="must be bytes"):
        live.send_input_audio("AAAA")  # type: ignore[arg-type]


def test_audio_mute_fixture_decisions_usage() -> None:
    live = started()
    live.send_input_audio(b"\x01\x00")
    assert json.loads(live.data_to_send()[0]) == {
        "type": "session.input_audio.append",
        "audio": "AQA=",
    }
    mute = live.send_mute()
    live.receive_text(frame("session.input_audio.muted", client_event_id=mute))
    assert live.muted
    live.send_unmute()
    live.receive_text(frame("session.input_audio.unmuted"))
    assert not live.muted
    with pytest.raises(ConfigurationError, match="at most 30 s"):
        live.send_fixture(b"\x00" * (30 * 48_000 + 2))
    with pytest.raises(ConfigurationError, match="whole PCM16 samples"):
        live.send_fixture(b"\x00\x00\x00")
    live.send_fixture(b"\x00\x00")
    with pytest.raises(InvalidState, match="only one audio fixture"):
        live.send_fixture(b"\x00\x00")
    with pytest.raises(InvalidState, match="fixture"):
        live.send_thinking("x")
    with pytest.raises(InvalidState, match=r"session\.commentary\.append is refused"):
        live.send_commentary("x")
    with pytest.raises(InvalidState, match="fixture"):
        live.send_instructions("x")
    live.receive_text(frame("session.output_audio.fixture.played"))
    live.send_thinking("x")
    fixture = live.send_fixture(b"\x00\x00")
    error = json.loads(frame("error"))
    error["error"]["client_event_id"] = fixture
    live.receive_text(json.dumps(error))
    live.send_thinking("refused fixture: thinking allowed again")
    with pytest.raises(InvalidState, match="Decisions delegation"):
        live.send_decision_create()
    live.send_decision_item_create({"type": "message", "role": "user", "content": []})
    live.send_decision_item_delete("i1")
    live.receive_text(frame("session.output_audio.delta"))
    live.receive_text(frame("session.output_audio.delta", end_ms=20))
    assert live.output_audio_end_ms == 40
    live.receive_text(frame("session.usage.updated"))
    assert live.usage is not None
    assert live.usage.seconds == 3.5
    assert live.context_usage_ratio == 0.1
    live.receive_text(frame("session.usage.updated", context_window=None))
    live.receive_text(frame("info"))
    assert len(live.events_received()) == 9


def test_close_then_closed() -> None:
    live = started()
    live.receive_text(frame("session.delegation.created"))
    live.send_close()
    assert live.state == "closing"
    with pytest.raises(InvalidState, match="closing: nothing more"):
        live.send_commentary("late")
    live.receive_text(frame("session.closed"))
    assert live.state == "closed"
    assert live.close_reason == "close_requested"
    assert live.usage is not None
    assert live.usage.active_seconds == 8
    assert live.delegations.get("del_1").status == "abandoned"  # type: ignore[union-attr]


def test_connection_lost_abandons_open_delegations() -> None:
    live = started()
    live.receive_text(frame("session.delegation.created"))
    live.send_mute()
    abandoned = live.connection_lost()
    assert [d.id for d in abandoned] == ["del_1"]
    assert live.state == "closed"
    assert live.pending_event_ids() == {}
    with pytest.raises(InvalidState, match="closed"):
        live.send_unmute()


def test_bad_frames_leave_the_state_alone() -> None:
    live = started()
    before = (live.state, live.session, live.muted)
    for bad in ("{", '{"type": "session.started", "event_id": 3}', '{"type": "nope"}'):
        live.receive_text(bad)
    assert (live.state, live.session, live.muted) == before
    kinds = [type(e).__name__ for e in live.events_received()]
    assert kinds == ["ProtocolErrorEvent", "ProtocolErrorEvent", "UnknownServerEvent"]


def test_a_repeated_delegation_id_keeps_the_first() -> None:
    live = started()
    live.receive_text(frame("session.delegation.created"))
    live.receive_text(frame("session.delegation.created", offset_ms=9999))
    assert [d.offset_ms for d in live.delegations] == [1200]
    live.delegations.answered("del_404", Answer("thinking", "nobody asked"))
    assert [len(d.answers) for d in live.delegations] == [0]


@pytest.mark.parametrize(
    ("delegation", "target"),
    [
        ({"type": "client"}, "client"),
        (DECISIONS, "decisions"),
        (RESPONSES, "responses"),
    ],
)
def test_the_delegation_owner_comes_from_the_session(
    delegation: dict[str, Any], target: str
) -> None:
    assert started(delegation).delegation_target == target
