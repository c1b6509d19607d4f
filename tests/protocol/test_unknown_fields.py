"""Unknown fields are kept where the official types keep them, and read back on demand; beta
servers are told from GA ones by their first frames; a damaged response.done keeps what can be
read of it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from voxwire.protocol import (
    InputAudioBufferCleared,
    ProtocolErrorEvent,
    RealtimeProtocol,
    ResponseDone,
    ResponseOutputAudioDelta,
    SessionCreated,
    UnknownServerEvent,
    decode_beta_server_event,
    decode_server_event,
    encode_event,
    raw_fields,
    salvage_response,
    unknown_fields,
)

from .scenario import ScriptedServer, feed
from .traces import (
    BETA_BANYAN_SERVER,
    BETA_LIUSIDA,
    GA_DOCS_SERVER,
    GA_ISSUES,
    GA_SIP_FILEORDER,
    GA_SIP_TURN,
    frames,
)

openai_realtime = pytest.importorskip("openai.types.realtime")
OFFICIAL = TypeAdapter(openai_realtime.RealtimeServerEvent)

# Fields voxwire models that the official pydantic types leave to their extras: real GA traffic
# carries ``obfuscation`` on deltas, and every session object has ``object``/``id``/``expires_at``
# (kept in SessionConfig.extra).
MODELLED_HERE = {"obfuscation", "session.object", "session.id", "session.expires_at"}


def official_extras(model: object, path: str = "") -> dict[str, Any]:
    """Every field the official types keep as an extra, by the same JSON paths."""
    found: dict[str, Any] = {}
    if isinstance(model, BaseModel):
        for key, value in (model.model_extra or {}).items():
            found[f"{path}.{key}" if path else key] = value
        for name, info in type(model).model_fields.items():
            key = info.alias or name
            found.update(official_extras(getattr(model, name), f"{path}.{key}" if path else key))
    elif isinstance(model, list):
        for index, element in enumerate(model):
            found.update(official_extras(element, f"{path}[{index}]"))
    return found


RESPONSE_DONE = {
    "type": "response.done",
    "event_id": "event_1",
    "added_later": {"nested": [1, 2]},
    "response": {
        "object": "realtime.response",
        "id": "resp_1",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "item_1",
                "object": "realtime.item",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_audio", "transcript": "Hi.", "voice_style": "warm"}],
                "priority": 3,
            }
        ],
        "usage": {
            "total_tokens": 30,
            "input_tokens": 10,
            "output_tokens": 20,
            "output_token_details": {"text_tokens": 5, "audio_tokens": 15, "music_tokens": 0},
        },
    },
}
EXPECTED_UNKNOWN = {
    "added_later": {"nested": [1, 2]},
    "response.output[0].content[0].voice_style": "warm",
    "response.output[0].priority": 3,
    "response.usage.output_token_details.music_tokens": 0,
}


def test_unknown_fields_at_every_depth_are_kept_by_path() -> None:
    event = decode_server_event(json.dumps(RESPONSE_DONE))
    assert isinstance(event, ResponseDone)
    assert unknown_fields(event) == EXPECTED_UNKNOWN


def test_unknown_fields_match_the_official_types_extras() -> None:
    frame = json.dumps(RESPONSE_DONE)
    assert official_extras(OFFICIAL.validate_json(frame)) == EXPECTED_UNKNOWN


@pytest.mark.parametrize("name", [GA_SIP_TURN, GA_SIP_FILEORDER, GA_ISSUES, GA_DOCS_SERVER])
def test_on_real_traffic_nothing_the_official_types_keep_is_lost(name: str) -> None:
    compared = 0
    for frame in frames(name):
        try:
            official = OFFICIAL.validate_json(frame)
        except ValueError:
            continue  # the docs placeholders the official types reject too
        ours = unknown_fields(decode_server_event(frame))
        theirs = official_extras(official)
        assert ours.items() <= theirs.items(), frame[:120]
        assert set(theirs) - set(ours) <= MODELLED_HERE, frame[:120]
        compared += 1
    assert compared > 3


def test_raw_fields_give_the_whole_mapping_and_a_fresh_copy() -> None:
    event = decode_server_event(json.dumps(RESPONSE_DONE).encode())
    raw = raw_fields(event)
    assert raw == RESPONSE_DONE
    assert raw is not None
    raw["response"]["id"] = "changed"
    assert raw_fields(event) == RESPONSE_DONE


def test_the_kept_frame_is_never_encoded_and_does_not_change_equality() -> None:
    frame = json.dumps({"type": "input_audio_buffer.cleared", "event_id": "e1", "extra_x": 1})
    event = decode_server_event(frame)
    built = InputAudioBufferCleared(event_id="e1")
    assert event == built
    wire = json.loads(encode_event(event))
    assert wire == {"type": "input_audio_buffer.cleared", "event_id": "e1"}
    assert unknown_fields(built) == {}
    assert raw_fields(built) is None


def test_audio_delta_keeps_its_frame_and_known_obfuscation() -> None:
    frame = json.dumps(
        {
            "type": "response.output_audio.delta",
            "event_id": "e",
            "response_id": "r",
            "item_id": "i",
            "output_index": 0,
            "content_index": 0,
            "delta": "AAAA",
            "obfuscation": "xyz",
        }
    )
    event = decode_server_event(frame)
    assert isinstance(event, ResponseOutputAudioDelta)
    assert event.delta == b"\x00\x00\x00"
    assert unknown_fields(event) == {}
    assert raw_fields(event) == json.loads(frame)


def test_session_objects_list_their_unmodelled_fields() -> None:
    frame = json.dumps(
        {
            "type": "session.created",
            "event_id": "e",
            "session": {
                "type": "realtime",
                "object": "realtime.session",
                "id": "sess_1",
                "expires_at": 1,
                "instructions": "x",
                "service_tier": "fast",
            },
        }
    )
    event = decode_server_event(frame)
    assert isinstance(event, SessionCreated)
    assert unknown_fields(event) == {"session.service_tier": "fast"}
    assert event.session.extra["id"] == "sess_1"


def test_unknown_and_broken_events() -> None:
    unknown = decode_server_event('{"type": "future.event", "event_id": "e", "a": 1, "b": [2]}')
    assert isinstance(unknown, UnknownServerEvent)
    assert unknown_fields(unknown) == {"a": 1, "b": [2]}
    assert raw_fields(unknown) == {"type": "future.event", "event_id": "e", "a": 1, "b": [2]}
    broken = decode_server_event('{"type": "response.done", "event_id": "e", "response": 3}')
    assert isinstance(broken, ProtocolErrorEvent)
    assert unknown_fields(broken) == {}
    assert raw_fields(broken) == {"type": "response.done", "event_id": "e", "response": 3}
    assert raw_fields(decode_server_event("not json")) is None


def test_beta_mapped_events_keep_their_unknown_fields_too() -> None:
    (event,) = decode_beta_server_event(
        json.dumps(
            {
                "type": "response.audio_transcript.delta",
                "event_id": "e",
                "response_id": "r",
                "item_id": "i",
                "output_index": 0,
                "content_index": 0,
                "delta": "Hel",
                "beta_only_field": True,
            }
        )
    )
    assert unknown_fields(event) == {"beta_only_field": True}


# --- beta or GA, told from the first frames -------------------------------------------------------


def auto_beside_fixed(name: str, beta: bool) -> None:
    """Auto mode decides ``beta`` on a trace and then gives what the fixed mode gives."""
    auto = RealtimeProtocol()
    assert auto.beta is None
    fixed = RealtimeProtocol(beta=beta)
    for frame in frames(name):
        auto.receive_text(frame)
        fixed.receive_text(frame)
    assert auto.beta is beta
    assert auto.events_received() == fixed.events_received()
    assert auto.conversation.item_ids == fixed.conversation.item_ids


def test_auto_detects_a_beta_server_from_its_first_frame() -> None:
    auto = RealtimeProtocol()
    auto.receive_text(frames(BETA_BANYAN_SERVER)[0])  # session.created, flat session
    assert auto.beta is True
    auto_beside_fixed(BETA_BANYAN_SERVER, True)


def test_auto_detects_a_beta_server_from_its_response_when_joining_late() -> None:
    auto_beside_fixed(BETA_LIUSIDA, True)  # starts with response.created (modalities)


@pytest.mark.parametrize("name", [GA_SIP_TURN, GA_SIP_FILEORDER, GA_DOCS_SERVER])
def test_auto_on_a_ga_server_gives_what_ga_mode_gives(name: str) -> None:
    auto_beside_fixed(name, False)


def test_a_beta_only_event_name_decides_for_beta() -> None:
    protocol = RealtimeProtocol()
    protocol.receive_text(
        '{"type": "response.text.delta", "event_id": "e", "response_id": "r", "item_id": "i",'
        ' "output_index": 0, "content_index": 0, "delta": "x"}'
    )
    assert protocol.beta is True
    (event,) = protocol.events_received()
    assert event.type == "response.output_text.delta"


def test_undecided_frames_that_are_not_json_are_reported() -> None:
    protocol = RealtimeProtocol()
    protocol.receive_text("{")
    (event,) = protocol.events_received()
    assert isinstance(event, ProtocolErrorEvent)
    assert protocol.beta is None


def test_beta_argument_is_checked() -> None:
    with pytest.raises(ValueError, match="beta='yes' is invalid"):
        RealtimeProtocol(beta="yes")  # type: ignore[arg-type]


# --- a damaged response.done keeps what can be read -----------------------------------------------


def test_damaged_response_done_keeps_status_usage_and_intact_items() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol(beta=False)
    protocol.send_response_create()
    protocol.data_to_send()
    done = {
        "type": "response.done",
        "event_id": "e",
        "response": {
            "id": "resp_1",
            "status": "completed",
            "status_details": "[Object]",
            "output": [{"type": "message", "role": "assistant", "id": "item_1"}, {"type": 7}],
            "usage": {"total_tokens": 9, "input_tokens": 4, "output_tokens": 5},
        },
    }
    (event,) = feed(protocol, server.response_created("resp_1"), json.dumps(done))[-1:]
    assert isinstance(event, ProtocolErrorEvent)
    record = protocol.responses.get("resp_1")
    assert record is not None
    assert record.status == "completed"
    assert record.usage is not None
    assert record.usage.output_tokens == 5
    assert not record.in_progress


def test_salvage_response_reads_field_by_field() -> None:
    response = salvage_response(
        {"id": "r", "status": "exploded", "usage": {"total_tokens": "many"}, "metadata": {"k": "v"}}
    )
    assert response is not None
    assert (response.status, response.usage, response.metadata) == (None, None, {"k": "v"})
    assert salvage_response({"status": "completed"}) is None


def test_a_beta_session_that_breaks_the_rules_is_reported() -> None:
    (event,) = decode_beta_server_event(
        json.dumps(
            {
                "type": "session.created",
                "event_id": "e",
                "session": {"modalities": ["audio", "text"], "speed": 9},
            }
        )
    )
    assert isinstance(event, ProtocolErrorEvent)
    assert "speed" in event.message
