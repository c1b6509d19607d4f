"""The protocol core owns the wire: ``send()`` takes every client event (typed or raw), session
updates are tracked from sent to settled by event id, every response request carries its source
to the response that answers it, and a lost connection is a protocol input that returns the
settling events and the restoration plan as objects."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import (
    ConversationItemCreate,
    ConversationItemDelete,
    ConversationItemRetrieve,
    ConversationItemTruncate,
    InputAudioBufferAppend,
    InputAudioBufferClear,
    InputAudioBufferCommit,
    OutputAudioBufferClear,
    RealtimeProtocol,
    ResponseCancel,
    ResponseCreate,
    ResponseCreateParams,
    SessionConfig,
    SessionUpdate,
    user_message,
)
from voxwire.protocol import (
    server_events as se,
)
from voxwire.protocol.gate import ResponseRequest
from voxwire.protocol.updates import SessionUpdateLog, UpdateState

from .scenario import ScriptedServer, feed, ga_turn_with_audio


def sent(protocol: RealtimeProtocol) -> list[dict[str, Any]]:
    return [json.loads(frame) for frame in protocol.data_to_send()]


# --- send() ---------------------------------------------------------------------------------------


def test_send_takes_every_typed_client_event_through_the_same_path_as_the_send_methods() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.session_created(), server.item_added("item_u", None))
    events = [
        SessionUpdate(session=SessionConfig(instructions="Be brief.")),
        InputAudioBufferAppend(audio=b"\x00\x01"),
        InputAudioBufferCommit(),
        InputAudioBufferClear(),
        OutputAudioBufferClear(),
        ConversationItemCreate(item=user_message("hi", id="m1"), previous_item_id="item_u"),
        ConversationItemRetrieve(item_id="item_u"),
        ConversationItemTruncate(item_id="item_u", content_index=0, audio_end_ms=0),
        ConversationItemDelete(item_id="m1"),
        ResponseCreate(response=ResponseCreateParams(instructions="Go.")),
        ResponseCreate(),  # held: the first one is in flight
        ResponseCancel(),  # nothing in progress: not sent
    ]
    returned = [protocol.send(event) for event in events]
    assert [type(r).__name__ if r is not None else None for r in returned] == [
        *(type(e).__name__ for e in events[:10]),
        None,
        None,
    ]
    types = [frame["type"] for frame in sent(protocol)]
    assert types == [e.type for e in events[:10]]
    # The state followed: the create, the delete and the truncate wait for their answers, the
    # update is in flight, the second response request is held.
    assert [c.item.id for c in protocol.unacknowledged_item_creates] == ["m1"]
    assert [d.item_id for d in protocol.unacknowledged_item_deletes] == ["m1"]
    assert len(protocol.unacknowledged_item_truncates) == 1
    assert [u.config.instructions for u in protocol.updates_in_flight] == ["Be brief."]
    assert protocol.held_response_creates == 1


def test_send_decodes_a_mapping_and_queues_an_unknown_type_as_given_in_order() -> None:
    protocol = RealtimeProtocol()
    create = protocol.send({"type": "response.create", "response": {"instructions": "Hi."}})
    assert isinstance(create, ResponseCreate)
    assert protocol.send({"type": "vendor.ping", "payload": [1, 2]}) is None
    frames = sent(protocol)
    assert [f["type"] for f in frames] == ["response.create", "vendor.ping"]
    assert frames[1] == {"type": "vendor.ping", "payload": [1, 2]}


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"payload": 1}, "needs a 'type'"),
        ({"type": 7}, "needs a 'type'"),
        ({"type": {"name": "response.create"}}, r"not \{'name': 'response.create'\}"),
        ({"type": ["response.create"]}, "needs a 'type'"),
        ({"type": "conversation.item.delete"}, "item_id"),
    ],
)
def test_send_refuses_a_mapping_it_cannot_send_and_says_why(
    event: dict[str, Any], message: str
) -> None:
    protocol = RealtimeProtocol()
    with pytest.raises(ConfigurationError, match=message):
        protocol.send(event)
    assert protocol.data_to_send() == []


# --- session updates ------------------------------------------------------------------------------


def test_updates_are_acknowledged_in_order_and_rejected_by_event_id() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.session_created())
    first = protocol.send_session_update({"instructions": "one"})
    second = protocol.send_session_update({"instructions": "two"}, origin="agent")
    third = protocol.send_session_update({"instructions": "three"})
    assert [u.event_id for u in protocol.updates_in_flight] == [
        first.event_id,
        second.event_id,
        third.event_id,
    ]
    error = json.loads(server.error(second.event_id, message="bad voice"))
    error["error"]["param"] = "session.audio.output.voice"
    feed(protocol, json.dumps(error), server.session_updated(instructions="one"))
    settled = protocol.updates_settled()
    assert [(u.event_id, u.state) for u in settled] == [
        (second.event_id, UpdateState.REJECTED),
        (first.event_id, UpdateState.ACKNOWLEDGED),
    ]
    assert settled[0].error_message == "bad voice (param session.audio.output.voice)"
    assert protocol.updates_settled() == []  # handed out once
    # An acknowledgement nobody waits for (another client's update) settles nothing.
    feed(protocol, server.session_updated(), server.session_updated())
    assert [u.event_id for u in protocol.updates_settled()] == [third.event_id]


def test_the_core_feeds_the_update_log_and_replays_it_on_a_new_connection() -> None:
    server = ScriptedServer()
    log = SessionUpdateLog()
    lost = RealtimeProtocol(update_log=log)
    feed(lost, server.session_created())
    lost.send_session_update({"instructions": "app before"})
    agent = lost.send_session_update({"instructions": "agent"}, origin="agent")
    rejected = lost.send_session_update({"instructions": "refused"})
    lost.send_session_update({"instructions": "app after"})
    lost.send_session_update({"instructions": "resumed"}, origin="session")  # not logged
    feed(lost, server.session_updated(), server.session_updated())  # the agent's is accepted
    feed(lost, server.error(rejected.event_id))
    assert agent.event_id is not None
    assert len(log) == 2
    loss = lost.connection_lost()
    assert [u.state for u in lost.updates_settled()][-2:] == [UpdateState.LOST] * 2

    new = RealtimeProtocol(update_log=log)
    assert new.replay_session_updates() == 2
    replayed = [f["session"]["instructions"] for f in sent(new)]
    assert replayed == ["app before", "agent", "app after"]
    assert all(u.origin == "replay" for u in new.updates_in_flight)
    assert loss.plan.requests == ()
    assert RealtimeProtocol().replay_session_updates() == 0  # no log: nothing kept


# --- response sources -----------------------------------------------------------------------------


def test_each_response_carries_the_source_of_the_request_it_answers() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.session_created())
    protocol.send_response_create(ResponseCreateParams(instructions="Say hi."), source="say")
    protocol.send_response_create(source="tool_response")  # held behind it
    feed(protocol, server.response_created("r1"), server.response_done("r1"))
    feed(protocol, server.response_created("r2"), server.response_done("r2"))
    feed(protocol, server.response_created("vad"))  # nobody here asked for it
    records = {r.id: r.source for r in protocol.responses.all()}
    assert records == {"r1": "say", "r2": "tool_response", "vad": None}


def test_a_request_that_lost_the_race_with_server_vad_keeps_its_source_when_asked_again() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.session_created())
    create = protocol.send_response_create(ResponseCreateParams(instructions="x"), source="say")
    assert create is not None
    feed(protocol, server.response_created("vad"))  # taken as the answer...
    feed(protocol, server.error(create.event_id, code="conversation_already_has_active_response"))
    feed(protocol, server.response_done("vad"))  # ...it was not: asked again
    assert [f["type"] for f in sent(protocol)] == ["response.create", "response.create"]
    feed(protocol, server.response_created("again"))
    assert protocol.responses.get("again").source == "say"  # type: ignore[union-attr]


def test_out_of_band_responses_are_told_apart() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    protocol.send_response_create(ResponseCreateParams(conversation="none"), source="say")
    frame = json.loads(server.response_created("oob"))
    frame["response"]["conversation_id"] = None
    feed(protocol, json.dumps(frame))
    assert protocol.is_out_of_band("oob")
    assert not protocol.is_out_of_band("unknown")
    assert protocol.responses.get("oob").source is None  # type: ignore[union-attr]


# --- connection loss ------------------------------------------------------------------------------


def test_connection_lost_settles_what_was_in_flight_and_plans_the_next_connection() -> None:
    server = ScriptedServer()
    protocol = ga_turn_with_audio(server)  # resp_a in progress, 1 s of audio of item_a
    feed(protocol, server.item_added("item_x", "item_a"))
    protocol.send_item_delete("item_x")
    protocol.interrupt({("item_a", 0): 12_000}, cancel_response=False)  # truncate to 500 ms
    protocol.send_item_create(user_message("unanswered", id="m_new"))
    protocol.send_response_create(ResponseCreateParams(instructions="again"), source="say")
    protocol.send_session_update({"instructions": "pending"})

    loss = protocol.connection_lost()

    assert protocol.data_to_send() == []  # frames for the lost server go nowhere
    kinds = [type(e) for e in loss.events]
    assert kinds == [se.ResponseDone, se.ConversationItemDeleted, se.ConversationItemTruncated]
    done = loss.events[0]
    assert isinstance(done, se.ResponseDone)
    assert done.response.status == "cancelled"
    assert done.response.status_details is not None
    assert done.response.status_details.reason == "connection_lost"
    # Applied to the state: nothing in progress, item_x gone, item_a cut at what was heard.
    assert protocol.responses_in_progress == ()
    assert "item_x" not in protocol.conversation
    assert protocol.conversation.truncated_at_ms("item_a", 0) == 500
    assert [u.state for u in protocol.updates_settled()] == [UpdateState.LOST]

    plan = loss.plan
    assert plan.lost_responses == ("resp_a",)
    # item_u restored; item_a was in progress in the lost response: not restorable.
    assert [item.id for item in plan.items] == ["item_u"]
    assert plan.skipped == ("item_a",)
    assert [c.item.id for c in plan.resend] == ["m_new"]
    assert plan.requests == (ResponseRequest(ResponseCreateParams(instructions="again"), "say"),)


def test_a_new_core_sends_again_what_the_lost_server_never_answered() -> None:
    server = ScriptedServer()
    lost = RealtimeProtocol()
    feed(lost, server.session_created(), server.item_added("item_u", None))
    lost.send_item_create(user_message("first", id="m1"), previous_item_id="item_u")
    lost.send_item_create(user_message("second", id="m2"), previous_item_id="m1")
    lost.send_response_create(source="tool_response")
    plan = lost.connection_lost().plan

    new = RealtimeProtocol()
    feed(new, server.session_created(), server.item_added("item_u", None))
    new.send_item_create(user_message("by the runner", id="m2"))  # already queued here
    new.data_to_send()
    assert new.resend_unanswered(plan) == 2
    frames = sent(new)
    assert [(f["type"], f.get("item", {}).get("id")) for f in frames] == [
        ("conversation.item.create", "m1"),
        ("response.create", None),
    ]
    assert frames[0]["previous_item_id"] == "item_u"
    feed(new, server.response_created("r"))
    assert new.responses.get("r").source == "tool_response"  # type: ignore[union-attr]


def test_response_params_take_none_as_the_official_types_do() -> None:
    from voxwire.protocol.client_events import response_params

    params = response_params(
        {"instructions": None, "tools": None, "metadata": None, "audio": {"output": {"voice": "x"}}}
    )
    assert params.instructions is msgspec.UNSET
    assert params.tools is msgspec.UNSET
    assert params.metadata is None  # null has a meaning there: sent as null
    assert params.audio is not msgspec.UNSET
    with pytest.raises(msgspec.ValidationError, match="instructions"):
        response_params({"instructions": 3})
