"""JSON null in an optional field: "not given" unless the field's type gives null a meaning."""

from __future__ import annotations

import json

from msgspec import UNSET

from voxwire.protocol import (
    PCM16,
    AudioFormat,
    ConversationItemCreate,
    ProtocolErrorEvent,
    ResponseAudioOutputParams,
    ResponseAudioParams,
    ResponseCreate,
    ResponseCreateParams,
    SessionConfig,
    SessionUpdate,
    decode_client_event,
)


def decode(event: dict[str, object]) -> object:
    return decode_client_event(json.dumps(event))


def test_nulls_without_a_meaning_are_left_out_of_a_response_create() -> None:
    event = decode(
        {
            "type": "response.create",
            "response": {
                "instructions": None,
                "tools": None,
                "tool_choice": None,
                "conversation": None,
                "output_modalities": None,
                "max_output_tokens": None,
                "audio": {"output": {"voice": None, "format": None}},
                "input": None,
                "metadata": {"k": "v"},
            },
        }
    )
    audio = ResponseAudioParams(output=ResponseAudioOutputParams())
    assert event == ResponseCreate(response=ResponseCreateParams(audio=audio, metadata={"k": "v"}))


def test_null_with_a_meaning_is_kept() -> None:
    event = decode({"type": "response.create", "response": {"metadata": None, "prompt": None}})
    assert isinstance(event, ResponseCreate)
    assert event.response is not None
    assert event.response.metadata is None
    assert event.response.prompt is None


def test_nulls_inside_list_members_are_looked_at() -> None:
    item = {
        "type": "message",
        "role": "user",
        "status": None,
        "content": [{"type": "input_text", "text": "hi"}],
    }
    event = decode({"type": "conversation.item.create", "item": item, "previous_item_id": None})
    assert isinstance(event, ConversationItemCreate)
    tools = [{"type": "function", "name": "f", "description": None}]
    event = decode({"type": "response.create", "response": {"tools": tools, "input": [item]}})
    assert isinstance(event, ResponseCreate)
    assert event.response is not None
    assert event.response.input == [event.response.input[0]]


def test_a_wrong_type_next_to_a_null_is_still_named() -> None:
    event = decode(
        {"type": "response.create", "event_id": "e", "response": {"instructions": None, "tools": 3}}
    )
    assert isinstance(event, ProtocolErrorEvent)
    assert event.event_id == "e"
    assert "$.response.tools" in event.message
    assert "Expected `array`" in event.message


def test_a_wrong_type_without_a_null_keeps_its_message() -> None:
    event = decode({"type": "response.create", "response": {"instructions": 3}})
    assert isinstance(event, ProtocolErrorEvent)
    assert "Expected `str`, got `int` - at `$.response.instructions`" in event.message


def test_session_update_nulls() -> None:
    event = decode(
        {
            "type": "session.update",
            "session": {
                "type": "realtime",
                "instructions": None,
                "truncation": None,
                "audio": {
                    "input": {"turn_detection": None, "format": {"type": None, "rate": None}},
                    "output": None,
                },
            },
        }
    )
    assert isinstance(event, SessionUpdate)
    wire = event.session.to_wire()
    assert wire == {
        "type": "realtime",
        "audio": {"input": {"format": {"type": "audio/pcm"}, "turn_detection": None}},
    }


def test_session_config_from_a_mapping_or_built_in_python() -> None:
    config = SessionConfig.from_mapping({"instructions": None, "tools": None, "tracing": None})
    assert config == SessionConfig(tracing=None)
    assert SessionConfig(instructions=None, tools=None).instructions is UNSET
    assert SessionConfig(tracing=None).to_wire() == {"type": "realtime", "tracing": None}
    assert AudioFormat() == AudioFormat(type="audio/pcm")
    assert AudioFormat(rate_hz=24_000) == PCM16
    assert ResponseCreateParams(instructions=None, metadata=None) == ResponseCreateParams(
        metadata=None
    )


def test_a_required_field_given_null_is_reported_missing() -> None:
    event = decode(
        {
            "type": "session.update",
            "session": {
                "type": "realtime",
                "audio": {"input": {"noise_reduction": {"type": None}}},
            },
        }
    )
    assert isinstance(event, ProtocolErrorEvent)
    assert "missing required field `type`" in event.message
