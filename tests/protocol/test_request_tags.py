"""Request tags: which response answers which caller's ``response.create`` (speech handles)."""

from __future__ import annotations

import json

from voxwire.protocol import RealtimeProtocol, ResponseCreateParams, ResponseGate
from voxwire.protocol.gate import ResponseRequest

from .scenario import ScriptedServer, feed

RACE = "conversation_already_has_active_response"


def out_of_band_created(server: ScriptedServer, response_id: str) -> str:
    frame = json.loads(server.response_created(response_id))
    frame["response"]["conversation_id"] = None
    return json.dumps(frame)


def test_the_response_that_answers_a_request_carries_its_tags() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    assert protocol.send_response_create(tags=["speech_1"]) is not None
    feed(protocol, server.response_created("resp_1"))
    record = protocol.responses.get("resp_1")
    assert record is not None
    assert (record.source, record.tags) == ("response", ("speech_1",))
    # A response nobody asked for has none.
    feed(protocol, server.response_done("resp_1"), server.response_created("resp_vad"))
    vad = protocol.responses.get("resp_vad")
    assert vad is not None
    assert (vad.source, vad.tags) == (None, ())


def test_coalesced_requests_keep_every_tag() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    say = ResponseCreateParams(instructions="Say: hi.")
    protocol.send_response_create(tags=["first"])
    feed(protocol, server.response_created("resp_1"))
    assert protocol.send_response_create(say, source="say", tags=["a"]) is None
    assert protocol.send_response_create(say, source="say", tags=["b"]) is None  # absorbed
    protocol.data_to_send()
    feed(protocol, server.response_done("resp_1"))
    (again,) = [json.loads(f) for f in protocol.data_to_send()]
    assert again["response"]["instructions"] == "Say: hi."
    feed(protocol, server.response_created("resp_2"))
    record = protocol.responses.get("resp_2")
    assert record is not None
    assert (record.source, record.tags) == ("say", ("a", "b"))


def test_a_refused_create_reports_its_tags_once() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    create = protocol.send_response_create(tags=["speech_1"])
    assert create is not None
    feed(protocol, server.error("evt_other"))
    assert protocol.failed_request_tags() == []
    feed(protocol, server.error(create.event_id))
    assert protocol.failed_request_tags() == ["speech_1"]
    assert protocol.failed_request_tags() == []


def test_out_of_band_requests_carry_tags_and_report_refusals() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    params = ResponseCreateParams(conversation="none", instructions="Summarise.")
    first = protocol.send_response_create(params, tags=["oob_1"])
    second = protocol.send_response_create(params, tags=["oob_2"])
    untagged = protocol.send_response_create(params)
    assert first is not None
    assert second is not None
    assert untagged is not None
    feed(protocol, out_of_band_created(server, "resp_a"))
    record = protocol.responses.get("resp_a")
    assert record is not None
    assert (record.out_of_band, record.tags) == (True, ("oob_1",))
    feed(protocol, server.error(second.event_id), server.error(untagged.event_id))
    assert protocol.failed_request_tags() == ["oob_2"]


def test_tags_leave_a_winner_that_did_not_answer_and_go_with_the_request_again() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    say = ResponseCreateParams(instructions="Say exactly: hello.")
    create = protocol.send_response_create(say, source="say", tags=["speech_1"])
    assert create is not None
    protocol.data_to_send()
    feed(protocol, server.response_created("resp_vad"))
    winner = protocol.responses.get("resp_vad")
    assert winner is not None
    assert winner.tags == ("speech_1",)
    assert protocol.send_response_create(say, source="say", tags=["speech_2"]) is None
    feed(protocol, server.error(create.event_id, RACE))
    assert winner.tags == ()
    feed(protocol, server.response_done("resp_vad"), server.response_created("resp_2"))
    record = protocol.responses.get("resp_2")
    assert record is not None
    assert record.tags == ("speech_1", "speech_2")


def test_a_lost_race_names_the_response_taken_as_its_answer() -> None:
    gate = ResponseGate()
    request = ResponseRequest(ResponseCreateParams(instructions="x"), "say", ("t",))
    gate.create_sent("evt_1", request)
    answered = gate.answer("resp_1")
    assert answered == request
    lost = gate.lost_race("evt_1")
    assert lost is not None
    assert lost.response_id == "resp_1"


def test_unanswered_requests_keep_their_tags_for_the_next_connection() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    protocol.send_response_create(tags=["first"])
    feed(protocol, server.response_created("resp_1"))
    protocol.send_response_create(ResponseCreateParams(instructions="x"), tags=["held"])
    loss = protocol.connection_lost()
    fresh = RealtimeProtocol()
    fresh.resend_unanswered(loss.plan)
    feed(fresh, server.response_created("resp_new"))
    record = fresh.responses.get("resp_new")
    assert record is not None
    assert record.tags == ("held",)
