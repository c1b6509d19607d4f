"""Response gating: when a response.create may go, coalescing, release, cancel-once."""

from __future__ import annotations

import json

import pytest

from voxwire.protocol import (
    TRANSITIONS,
    GateState,
    GateTrigger,
    InputText,
    MessageItem,
    RealtimeProtocol,
    ResponseCreate,
    ResponseCreateParams,
    ResponseGate,
    next_state,
)

from .scenario import ScriptedServer, feed


def sent_types(protocol: RealtimeProtocol) -> list[str]:
    return [json.loads(frame)["type"] for frame in protocol.data_to_send()]


def test_transition_table_is_the_documented_one() -> None:
    idle, requested, active = GateState.IDLE, GateState.REQUESTED, GateState.ACTIVE
    assert {(s.value, t.value): n.value for (s, t), n in TRANSITIONS.items()} == {
        (idle.value, "create_sent"): requested.value,
        (idle.value, "response_created"): active.value,
        (requested.value, "response_created"): active.value,
        (requested.value, "create_failed"): idle.value,
        (active.value, "response_created"): active.value,
        (active.value, "last_response_done"): idle.value,
    }


@pytest.mark.parametrize("trigger", list(GateTrigger))
@pytest.mark.parametrize("state", list(GateState))
def test_unlisted_pairs_leave_the_state_alone(state: GateState, trigger: GateTrigger) -> None:
    if (state, trigger) in TRANSITIONS:
        assert next_state(state, trigger) is TRANSITIONS[(state, trigger)]
    else:
        assert next_state(state, trigger) is state


def test_the_gate_follows_the_table() -> None:
    gate = ResponseGate()
    assert gate.state is GateState.IDLE
    gate.response_done("never_started")
    assert gate.state is GateState.IDLE
    gate.create_sent("evt_1")
    assert (gate.state, gate.create_event_id) == (GateState.REQUESTED, "evt_1")
    gate.error("evt_other")
    assert gate.state is GateState.REQUESTED
    gate.error("evt_1")
    assert (gate.state, gate.create_event_id) == (GateState.IDLE, None)
    gate.response_created("resp_1")
    gate.response_created("resp_1")  # announced twice: still one response
    assert (gate.state, gate.in_progress) == (GateState.ACTIVE, ("resp_1",))
    gate.response_done("resp_1")
    assert gate.state is GateState.IDLE


def test_create_goes_at_once_when_idle() -> None:
    protocol = RealtimeProtocol()
    assert protocol.can_create_response
    event = protocol.send_response_create()
    assert isinstance(event, ResponseCreate)
    assert event.event_id == "vx_evt_1"
    assert sent_types(protocol) == ["response.create"]
    assert protocol.gate_state is GateState.REQUESTED
    assert not protocol.can_create_response


def test_requests_while_a_create_is_in_flight_are_held_and_coalesce() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    protocol.send_response_create()
    assert protocol.send_response_create() is None
    assert protocol.send_response_create() is None
    assert protocol.held_response_creates == 1  # three asks for "a response": one more create
    assert sent_types(protocol) == ["response.create"]
    feed(protocol, server.response_created("resp_1"))
    assert protocol.gate_state is GateState.ACTIVE
    assert sent_types(protocol) == []
    feed(protocol, server.response_done("resp_1"))
    # Released on response.done.
    assert sent_types(protocol) == ["response.create"]
    assert protocol.held_response_creates == 0
    assert protocol.gate_state is GateState.REQUESTED


def test_different_requests_are_kept_in_order() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.response_created("resp_vad"))  # server VAD started one
    first = ResponseCreateParams(instructions="one")
    second = ResponseCreateParams(instructions="two")
    for params in (first, second, first, None):
        assert protocol.send_response_create(params) is None
    assert protocol.held_response_creates == 3
    feed(protocol, server.response_done("resp_vad"))
    frames = protocol.data_to_send()
    assert [json.loads(f)["response"]["instructions"] for f in frames] == ["one"]
    feed(protocol, server.response_created("resp_1"), server.response_done("resp_1"))
    assert [json.loads(f)["response"]["instructions"] for f in protocol.data_to_send()] == ["two"]
    feed(protocol, server.response_created("resp_2"), server.response_done("resp_2"))
    assert [json.loads(f) for f in protocol.data_to_send()] == [
        {"type": "response.create", "event_id": "vx_evt_3"}
    ]


def test_unanswered_requests_are_the_one_in_flight_then_the_held_ones() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    assert protocol.unanswered_response_requests == ()
    first = ResponseCreateParams(instructions="one")
    second = ResponseCreateParams(instructions="two")
    protocol.send_response_create(first)  # in flight
    protocol.send_response_create(second)  # held
    protocol.send_response_create()  # held
    assert protocol.unanswered_response_requests == (first, second, None)
    feed(protocol, server.response_created("resp_1"))  # answers the first
    assert protocol.unanswered_response_requests == (second, None)
    feed(protocol, server.response_done("resp_1"))  # the second goes out: in flight
    assert protocol.unanswered_response_requests == (second, None)
    create = [json.loads(f) for f in protocol.data_to_send()][-1]
    feed(protocol, server.error(create["event_id"]))  # rejected: no longer awaited
    assert protocol.unanswered_response_requests == (None,)  # the held one went out


def test_an_error_naming_the_create_releases_the_gate() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    create = protocol.send_response_create()
    assert create is not None
    protocol.send_response_create(ResponseCreateParams(instructions="again"))
    protocol.data_to_send()
    feed(protocol, server.error("someone_else"))
    assert protocol.gate_state is GateState.REQUESTED  # not ours: still waiting
    assert protocol.data_to_send() == []
    feed(protocol, server.error(create.event_id, code="conversation_already_has_active_response"))
    # The failed create no longer blocks; the held request goes.
    frames = protocol.data_to_send()
    assert [json.loads(f)["response"]["instructions"] for f in frames] == ["again"]
    assert protocol.gate_state is GateState.REQUESTED


def test_an_error_without_event_id_changes_nothing() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    protocol.send_response_create()
    feed(protocol, server.error(None, code="session_expired"))
    assert protocol.gate_state is GateState.REQUESTED


def test_done_of_an_unknown_response_does_not_open_the_gate() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.response_created("resp_1"), server.response_done("resp_other"))
    assert protocol.gate_state is GateState.ACTIVE
    feed(protocol, server.response_done("resp_1"))
    assert protocol.gate_state is GateState.IDLE


def test_the_gate_waits_for_every_response_in_progress() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.response_created("resp_1"), server.response_created("resp_2"))
    active = protocol.active_response
    assert active is not None
    assert active.id == "resp_2"
    feed(protocol, server.response_done("resp_2"))
    assert protocol.gate_state is GateState.ACTIVE
    feed(protocol, server.response_done("resp_1"))
    assert protocol.gate_state is GateState.IDLE
    assert protocol.active_response is None


def test_cancel_only_while_active_and_only_once() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    assert protocol.send_response_cancel() is None  # nothing in progress
    protocol.send_response_create()
    assert protocol.send_response_cancel() is None  # requested, not yet created
    protocol.data_to_send()
    feed(protocol, server.response_created("resp_1"))
    cancel = protocol.send_response_cancel()
    assert cancel is not None
    assert cancel.response_id == "resp_1"
    assert protocol.send_response_cancel() is None
    assert sent_types(protocol) == ["response.cancel"]
    feed(
        protocol,
        server.response_done(
            "resp_1",
            status="cancelled",
            status_details={"type": "cancelled", "reason": "client_cancelled"},
        ),
    )
    record = protocol.responses.get("resp_1")
    assert record is not None
    assert record.status == "cancelled"
    assert record.cancel_sent
    assert record.status_details is not None
    assert record.status_details.reason == "client_cancelled"
    assert protocol.send_response_cancel() is None


def test_a_done_response_that_claims_in_progress_still_ends() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(
        protocol,
        server.response_created("resp_1"),
        server.response_done("resp_1", status="in_progress"),
    )
    record = protocol.responses.get("resp_1")
    assert record is not None
    assert not record.in_progress
    assert record.status is None
    assert protocol.can_create_response


def test_events_about_a_response_before_its_start_are_kept() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.output_item_added("resp_9", "item_9"))
    record = protocol.responses.get("resp_9")
    assert record is not None
    assert record.output_item_ids == ["item_9"]
    feed(protocol, server.response_created("resp_9"))
    assert protocol.active_response is record


def test_response_without_id_changes_no_state() -> None:
    protocol = RealtimeProtocol()
    feed(protocol, json.dumps({"type": "response.created", "event_id": "e", "response": {}}))
    feed(protocol, json.dumps({"type": "response.done", "event_id": "e2", "response": {}}))
    assert protocol.responses.all() == []
    assert protocol.can_create_response


def oob(instructions: str = "Summarise.") -> ResponseCreateParams:
    return ResponseCreateParams(conversation="none", instructions=instructions)


def out_of_band_created(server: ScriptedServer, response_id: str) -> str:
    frame = json.loads(server.response_created(response_id))
    frame["response"]["conversation_id"] = None
    return json.dumps(frame)


def conversation_created(server: ScriptedServer, response_id: str) -> str:
    frame = json.loads(server.response_created(response_id))
    frame["response"]["conversation_id"] = "conv_1"
    return json.dumps(frame)


def test_out_of_band_responses_run_beside_the_conversation() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, conversation_created(server, "resp_conv"))
    # GA: only one response may write to the conversation; out-of-band ones run in parallel.
    event = protocol.send_response_create(oob())
    assert event is not None
    assert event.response is not None
    assert protocol.held_response_creates == 0
    feed(protocol, out_of_band_created(server, "resp_oob"))
    record = protocol.responses.get("resp_oob")
    assert record is not None
    assert record.out_of_band
    assert record.in_progress
    assert protocol.responses_in_progress == ("resp_conv",)
    active = protocol.active_response
    assert active is not None
    assert active.id == "resp_conv"
    feed(protocol, server.response_done("resp_conv"))
    assert protocol.can_create_response  # the out-of-band response does not hold the gate
    cancel = protocol.send_response_cancel("resp_oob")
    assert cancel is not None
    assert cancel.response_id == "resp_oob"
    assert protocol.send_response_cancel("resp_oob") is None
    assert protocol.send_response_cancel("resp_conv") is None  # over already
    assert protocol.send_response_cancel("never_seen") is None


def test_a_null_conversation_id_without_an_out_of_band_request_is_the_conversation() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, out_of_band_created(server, "resp_1"))
    assert protocol.responses_in_progress == ("resp_1",)


def test_a_rejected_out_of_band_request_is_forgotten() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    event = protocol.send_response_create(oob())
    assert event is not None
    feed(protocol, server.error(event.event_id))
    feed(protocol, out_of_band_created(server, "resp_1"))
    # Nothing out of band was pending any more, so this response is the conversation's.
    assert protocol.responses_in_progress == ("resp_1",)


# --- server VAD wins the race with a create in flight ---------------------------------------------

RACE = "conversation_already_has_active_response"


def user_message(protocol: RealtimeProtocol, text: str) -> str:
    """Send a user text message; its item id."""
    event = protocol.send_item_create(MessageItem(role="user", content=[InputText(text=text)]))
    assert event.item.id is not None
    return event.item.id


def test_a_plain_create_beaten_by_a_response_that_saw_its_items_is_answered_by_it() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    item_id = user_message(protocol, "hi")
    feed(protocol, server.item_added(item_id, None))  # in the conversation before the winner
    create = protocol.send_response_create()
    assert create is not None
    protocol.data_to_send()
    # Server VAD started a response, then read our create and rejected it.
    events = feed(
        protocol, server.response_created("resp_vad"), server.error(create.event_id, RACE)
    )
    assert [e.type for e in events] == ["response.created"]  # the rejection is handled here
    feed(protocol, server.response_done("resp_vad"))
    assert protocol.data_to_send() == []  # the winner answered what the create was for
    assert protocol.gate_state is GateState.IDLE
    assert protocol.unanswered_response_requests == ()


def test_a_plain_create_beaten_by_a_response_that_missed_its_item_is_asked_again() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    item_id = user_message(protocol, "the tool's answer")
    create = protocol.send_response_create()
    assert create is not None
    protocol.data_to_send()
    # The winner started before the server read our item: it cannot have answered it.
    events = feed(
        protocol,
        server.response_created("resp_vad"),
        server.item_added(item_id, None),
        server.error(create.event_id, RACE),
    )
    assert [e.type for e in events] == ["response.created", "conversation.item.added"]
    assert protocol.unanswered_response_requests == (None,)
    assert protocol.data_to_send() == []  # not while the winner runs
    feed(protocol, server.response_done("resp_vad"))
    (again,) = [json.loads(f) for f in protocol.data_to_send()]
    assert again["type"] == "response.create"
    assert again["event_id"] != create.event_id
    assert protocol.gate_state is GateState.REQUESTED


def test_a_create_with_parameters_beaten_by_server_vad_goes_again_first() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    say = ResponseCreateParams(instructions="Say exactly: hello.")
    create = protocol.send_response_create(say)
    assert create is not None
    protocol.data_to_send()
    feed(protocol, server.response_created("resp_vad"))
    later = ResponseCreateParams(instructions="later")
    assert protocol.send_response_create(later) is None  # held behind the winner
    assert protocol.send_response_create(say) is None  # an equal one, asked for again
    events = feed(protocol, server.error(create.event_id, RACE))
    assert events == []
    assert protocol.unanswered_response_requests == (say, later)  # first asked, first again
    feed(protocol, server.response_done("resp_vad"))
    (again,) = [json.loads(f) for f in protocol.data_to_send()]
    assert again["response"]["instructions"] == "Say exactly: hello."


def test_other_rejections_reach_the_application() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    create = protocol.send_response_create()
    assert create is not None
    feed(protocol, server.response_created("resp_1"))
    # The same code naming another event, another code naming ours: both are errors as usual.
    events = feed(protocol, server.error("evt_other", RACE), server.error(create.event_id))
    assert [e.type for e in events] == ["error", "error"]
    # A second rejection naming the same create is not a race lost twice.
    feed(protocol, server.response_done("resp_1"))
    create = protocol.send_response_create()
    assert create is not None
    feed(protocol, server.response_created("resp_vad"), server.error(create.event_id, RACE))
    events = feed(protocol, server.error(create.event_id, RACE))
    assert [e.type for e in events] == ["error"]
