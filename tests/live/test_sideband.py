"""The sideband of a Live session (``/v1/live/sessions/{id}/attach``): what it may send (no
``session.start``, no input audio; ``transport.dtmf.send``), how ``transport.dtmf.sent`` and
errors answer a key, every frame checked against ``openai.types.live.ConnectClientEvent``, and
the sideband decoder fuzzed like the others (it never raises)."""

from __future__ import annotations

import json
import random
from typing import Any, get_args

import pytest
from openai.types.live import ConnectClientEvent, ConnectServerEvent
from pydantic import TypeAdapter

from tests.live.mutations import mutate
from tests.live.samples import CLIENT, SERVER, SESSION
from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.live import LiveProtocol, decode_sideband_client_event, encode_event, unknown_fields
from voxwire.live.client_events import (
    SIDEBAND_CLIENT_EVENT_TYPES,
    LiveClientEvent,
    TransportDtmfSend,
)
from voxwire.live.server_events import TransportDtmfReceived, TransportDtmfSent
from voxwire.protocol.server_events import ProtocolErrorEvent

CONNECT_CLIENT: TypeAdapter[Any] = TypeAdapter(ConnectClientEvent)
CONNECT_SERVER: TypeAdapter[Any] = TypeAdapter(ConnectServerEvent)
RESPONSES = {"type": "responses", "responses": {"model": "gpt-5.5"}}
ACCEPTED = {"type": "live", "model": "gpt-live-1", "delegation": RESPONSES}


def _sideband(config: dict[str, Any] | None = None) -> LiveProtocol:
    return LiveProtocol.sideband("sess_call_1", config or ACCEPTED)


def test_a_sideband_is_active_at_once_and_knows_the_accepted_configuration() -> None:
    live = _sideband()
    assert live.state == "active"
    assert live.session is None
    assert live.session_id == "sess_call_1"
    assert live.delegation_target == "responses"
    live.send_response_create()  # Responses delegation holds before the server reports it
    live.receive_text(json.dumps({**SERVER["session.started"], "session": SESSION}))
    live.events_received()
    assert live.session is not None
    assert live.session_id == SESSION["id"]


def test_the_sideband_sends_no_start_and_no_audio() -> None:
    live = _sideband()
    with pytest.raises(InvalidState, match="not sent on a sideband"):
        live.send_session_start({"model": "gpt-live-1"})
    with pytest.raises(InvalidState, match="not sent on a sideband"):
        live.send_fork_start()
    with pytest.raises(InvalidState, match="primary transport"):
        live.send_input_audio(b"\0\0")
    assert live.data_to_send() == []


@pytest.mark.parametrize("key", ["0", "9", "A", "d", "*", "#"])
def test_a_key_is_one_transport_dtmf_send_valid_against_the_official_type(key: str) -> None:
    live = _sideband()
    event_id = live.send_dtmf(key)
    (frame,) = live.data_to_send()
    official = CONNECT_CLIENT.validate_python(json.loads(frame))
    assert official.type == "transport.dtmf.send"
    assert official.event == key.upper()
    assert official.event_id == event_id
    assert live.pending_event_ids() == {event_id: "transport.dtmf.send"}


@pytest.mark.parametrize("key", ["", "12", "E", "x", 5, None])
def test_a_bad_key_is_refused_before_anything_is_queued(key: Any) -> None:
    live = _sideband()
    with pytest.raises(ConfigurationError, match="one key per event"):
        live.send_dtmf(key)
    assert live.data_to_send() == []


def test_dtmf_is_a_sideband_command_only() -> None:
    live = LiveProtocol()
    live.send_session_start({"model": "gpt-live-1"})
    live.receive_text(json.dumps({**SERVER["session.started"], "session": SESSION}))
    with pytest.raises(InvalidState, match="sideband command of a SIP call"):
        live.send_dtmf("1")


def test_sent_and_error_answer_the_key() -> None:
    live = _sideband()
    first, second = live.send_dtmf("1"), live.send_dtmf("2")
    sent = {"type": "transport.dtmf.sent", "event_id": "e1", "event": "1", "client_event_id": first}
    CONNECT_SERVER.validate_python(sent)
    live.receive_text(json.dumps(sent))
    error = {
        "type": "error",
        "event_id": "e2",
        "client_event_id": second,
        "error": {
            "type": "invalid_request_error",
            "code": "invalid_value",
            "message": "no",
            "client_event_id": second,
        },
    }
    live.receive_text(json.dumps(error))
    events = live.events_received()
    assert isinstance(events[0], TransportDtmfSent)
    assert events[0].client_event_id == first
    assert live.pending_event_ids() == {}
    live.receive_text(json.dumps(SERVER["transport.dtmf.received"]))
    (received,) = live.events_received()
    assert isinstance(received, TransportDtmfReceived)
    assert received.event == "5"


def test_closed_sideband_sends_nothing() -> None:
    live = _sideband({"model": "gpt-live-1"})
    live.send_close()
    with pytest.raises(InvalidState, match="closing"):
        live.send_dtmf("1")


@pytest.mark.parametrize("session_id", ["", "a/b", None])
def test_a_bad_session_id_is_refused(session_id: Any) -> None:
    with pytest.raises(ConfigurationError, match="session_id"):
        LiveProtocol.sideband(session_id, ACCEPTED)


def test_the_sideband_decoder_takes_exactly_the_official_sideband_events() -> None:
    official = {
        str(t.model_fields["type"].annotation.__args__[0])
        for t in get_args(get_args(ConnectClientEvent)[0])
    }
    assert set(SIDEBAND_CLIENT_EVENT_TYPES) == official
    for kind in official - {"transport.dtmf.send"}:
        event = decode_sideband_client_event(json.dumps(CLIENT[kind]))
        assert isinstance(event, get_args(LiveClientEvent)), kind
        assert event.type == kind
    dtmf = decode_sideband_client_event('{"type":"transport.dtmf.send","event":"#","x":1}')
    assert isinstance(dtmf, TransportDtmfSend)
    assert dtmf.event == "#"
    assert unknown_fields(dtmf) == {"x": 1}
    assert json.loads(encode_event(dtmf)) == {"type": "transport.dtmf.send", "event": "#"}
    for kind in ("session.start", "session.input_audio.append"):
        refused = decode_sideband_client_event(json.dumps(CLIENT[kind]))
        assert isinstance(refused, ProtocolErrorEvent)
        assert refused.event_type == kind


@pytest.mark.parametrize("seed", range(4))
def test_mutated_sideband_frames_never_raise(seed: int) -> None:
    rng = random.Random(7000 + seed)
    samples = [CLIENT[k] for k in sorted(SIDEBAND_CLIENT_EVENT_TYPES) if k in CLIENT]
    samples.append({"type": "transport.dtmf.send", "event_id": "c", "event": "1"})
    decoded = (*get_args(LiveClientEvent), TransportDtmfSend, ProtocolErrorEvent)
    errors = 0
    for _ in range(500):
        event = decode_sideband_client_event(mutate(rng, rng.choice(samples)))
        assert isinstance(event, decoded)
        unknown_fields(event)
        errors += isinstance(event, ProtocolErrorEvent)
    assert 0 < errors < 500
