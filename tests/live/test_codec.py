"""The Live codec against the official types: every server and client event decodes to its
class, encodes back to the same JSON, and validates as ``openai.types.live``; unknown types and
fields are kept; bad frames become protocol errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.live import ClientEvent as OfficialClientEvent
from openai.types.live import ServerEvent as OfficialServerEvent
from pydantic import TypeAdapter

from tests.live.samples import CLIENT, SERVER
from voxwire.live import client_events as ce
from voxwire.live import server_events as se
from voxwire.live.codec import (
    decode_client_event,
    decode_server_event,
    encode_event,
    unknown_fields,
)
from voxwire.protocol.server_events import ProtocolErrorEvent, UnknownServerEvent

OFFICIAL_SERVER: TypeAdapter[Any] = TypeAdapter(OfficialServerEvent)
OFFICIAL_CLIENT: TypeAdapter[Any] = TypeAdapter(OfficialClientEvent)


def test_every_official_type_has_a_sample_and_a_class() -> None:
    official_server = {
        t.model_fields["type"].annotation.__args__[0]
        for t in OfficialServerEvent.__origin__.__args__  # type: ignore[attr-defined]
    }
    official_client = {
        t.model_fields["type"].annotation.__args__[0]
        for t in OfficialClientEvent.__origin__.__args__  # type: ignore[attr-defined]
    }
    assert set(se.SERVER_EVENT_TYPES) == official_server == set(SERVER)
    assert set(ce.CLIENT_EVENT_TYPES) == official_client == set(CLIENT)


@pytest.mark.parametrize("kind", sorted(SERVER))
@pytest.mark.parametrize("as_bytes", [False, True])
def test_server_event_round_trip(kind: str, as_bytes: bool) -> None:
    frame = json.dumps(SERVER[kind])
    official = OFFICIAL_SERVER.validate_json(frame)
    assert official.type == kind
    event = decode_server_event(frame.encode() if as_bytes else frame)
    assert type(event) is se.SERVER_EVENT_TYPES[kind]
    assert event.type == kind
    assert unknown_fields(event) == {}
    again = encode_event(event)  # type: ignore[arg-type]
    assert json.loads(again) == SERVER[kind]
    OFFICIAL_SERVER.validate_json(again)


@pytest.mark.parametrize("kind", sorted(CLIENT))
def test_client_event_round_trip(kind: str) -> None:
    frame = json.dumps(CLIENT[kind])
    OFFICIAL_CLIENT.validate_json(frame)
    event = decode_client_event(frame)
    assert type(event) is ce.CLIENT_EVENT_TYPES[kind]
    assert event.type == kind
    again = encode_event(event)  # type: ignore[arg-type]
    assert json.loads(again) == CLIENT[kind]
    OFFICIAL_CLIENT.validate_json(again)


def test_appends_always_send_delegation_id() -> None:
    frame = json.loads(encode_event(ce.CommentaryAppend(content="hi", delegation_id=None)))
    assert frame == {"type": "session.commentary.append", "content": "hi", "delegation_id": None}


def test_audio_is_base64_on_the_wire_and_bytes_in_the_event() -> None:
    event = decode_server_event(json.dumps(SERVER["session.output_audio.delta"]))
    assert isinstance(event, se.OutputAudioDelta)
    assert event.delta == b"\x00\x00\x00\x00"
    sent = json.loads(encode_event(ce.InputAudioAppend(audio=b"\x01\x02")))
    assert sent["audio"] == "AQI="


def test_unknown_fields_are_kept_by_path() -> None:
    raw = json.loads(json.dumps(SERVER["session.started"]))
    raw["session"]["audio"]["output"]["speed"] = 1.1
    raw["brand_new"] = {"x": 1}
    event = decode_server_event(json.dumps(raw))
    assert isinstance(event, se.SessionStarted)
    assert unknown_fields(event) == {"session.audio.output.speed": 1.1, "brand_new": {"x": 1}}
    assert unknown_fields(se.InfoEvent(event_id="e", code="c", message="m")) == {}


def test_unknown_type_is_kept_whole() -> None:
    event = decode_server_event('{"type": "session.future", "event_id": "e9", "x": [1]}')
    assert isinstance(event, UnknownServerEvent)
    assert event.type == "session.future"
    assert event.event_id == "e9"
    assert unknown_fields(event) == {"x": [1]}


@pytest.mark.parametrize(
    ("frame", "says"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "not an object"),
        ('{"event_id": "e"}', "no string 'type'"),
        ('{"type": 5}', "no string 'type'"),
        ('{"type": "error", "event_id": "e1"}', "error event is invalid"),
        ('{"type": "session.output_audio.delta", "delta": "!!"}', "invalid"),
        (b"\xff\xfe{", "not UTF-8"),
        (b'{"type": "info", "event_id": "e", "code": "c", "message": "m", "x": "\xda"}', "UTF-8"),
        ('{"type": "info", "x": "\ud800"}', "not Unicode"),
        ("[" * 50_000 + "]" * 50_000, "deep"),
    ],
)
def test_bad_frames_become_protocol_errors(frame: str | bytes, says: str) -> None:
    event = decode_server_event(frame)
    assert isinstance(event, ProtocolErrorEvent)
    assert says in event.message or (says == "deep" and "nest" in event.message)
    assert unknown_fields(event) == {}


def test_client_decoder_refuses_unknown_and_invalid_events() -> None:
    unknown = decode_client_event('{"type": "conversation.item.create", "event_id": "c9"}')
    assert isinstance(unknown, ProtocolErrorEvent)
    assert "unknown Live client event type" in unknown.message
    assert unknown.event_id == "c9"
    bad = decode_client_event('{"type": "session.commentary.append", "content": 3}')
    assert isinstance(bad, ProtocolErrorEvent)
    assert bad.event_type == "session.commentary.append"
    missing = decode_client_event('{"type": "session.thinking.append", "content": "x"}')
    assert isinstance(missing, ProtocolErrorEvent)
    assert "delegation_id" in missing.message
    assert isinstance(decode_client_event("[" * 50_000), ProtocolErrorEvent)
    assert isinstance(
        decode_client_event(b'{"type": "session.close", "x": "\xda"}'), ProtocolErrorEvent
    )


def test_pcm_rates_are_checked() -> None:
    raw = json.loads(json.dumps(SERVER["session.started"]))
    raw["session"]["audio"]["format"]["rate"] = 44100
    event = decode_server_event(json.dumps(raw))
    assert isinstance(event, ProtocolErrorEvent)
    assert "16000 or 24000" in event.message


def test_utf8_bytes_frames_decode() -> None:
    frame = json.dumps({**SERVER["info"], "message": "déjà vu"}, ensure_ascii=False).encode()
    event = decode_server_event(frame)
    assert isinstance(event, se.InfoEvent)
    assert event.message == "déjà vu"
