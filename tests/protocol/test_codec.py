"""The JSON codec: typed decoding, base64 audio, unknown types, malformed input, encoding."""

from __future__ import annotations

import base64
import json

import pytest

from voxwire.protocol import (
    SERVER_EVENT_TYPES,
    ConversationItemAdded,
    ConversationItemCreate,
    ErrorEvent,
    InputAudioBufferAppend,
    InputAudioTranscriptionDelta,
    MessageItem,
    OutputAudio,
    OutputText,
    ProtocolErrorEvent,
    ResponseCreate,
    ResponseOutputAudioDelta,
    ResponseOutputAudioTranscriptDelta,
    ResponseOutputItemDone,
    SessionConfig,
    SessionCreated,
    SessionUpdate,
    SessionUpdated,
    UnknownServerEvent,
    decode_client_event,
    decode_server_event,
    encode_event,
    server_event_from_mapping,
    user_message,
)

from .traces import GA_SIP_FILEORDER, GA_SIP_TURN, frame_of

PCM_20MS = bytes(range(256)) * 3 + bytes(192)  # 960 bytes = 480 samples at 24 kHz


def audio_delta_frame(audio: bytes = PCM_20MS, **overrides: object) -> str:
    event = {
        "type": "response.output_audio.delta",
        "event_id": "event_1",
        "response_id": "resp_1",
        "item_id": "item_1",
        "output_index": 0,
        "content_index": 0,
        "delta": base64.b64encode(audio).decode(),
    }
    event.update(overrides)
    return json.dumps(event)


def test_audio_delta_is_decoded_to_bytes() -> None:
    event = decode_server_event(audio_delta_frame())
    assert isinstance(event, ResponseOutputAudioDelta)
    assert event.delta == PCM_20MS
    assert (event.type, event.item_id, event.content_index) == (
        "response.output_audio.delta",
        "item_1",
        0,
    )


def test_bytes_frames_decode_like_text_frames() -> None:
    assert decode_server_event(audio_delta_frame().encode()) == decode_server_event(
        audio_delta_frame()
    )


def test_real_ga_transcript_delta_keeps_obfuscation() -> None:
    event = decode_server_event(frame_of(GA_SIP_TURN, "response.output_audio_transcript.delta"))
    assert isinstance(event, ResponseOutputAudioTranscriptDelta)
    assert (event.delta, event.obfuscation) == ("The", "LBqdwEYsSEHbF")


def test_session_objects_keep_fields_the_sdk_does_not_model() -> None:
    event = decode_server_event(frame_of(GA_SIP_FILEORDER, "session.created"))
    assert isinstance(event, SessionCreated)
    assert event.session.extra == {
        "object": "realtime.session",
        "id": "sess_Ct1OVZ9vNW62W3cUpSCqj",
        "expires_at": 1767233035,
    }
    assert event.session.model == "gpt-realtime"


def test_unknown_type_keeps_the_raw_mapping() -> None:
    frame = '{"type": "response.future_thing", "event_id": "e1", "payload": {"x": [1, 2]}}'
    event = decode_server_event(frame)
    assert event == UnknownServerEvent(
        type="response.future_thing", event_id="e1", raw=json.loads(frame)
    )


def test_unknown_fields_are_accepted() -> None:
    event = decode_server_event(audio_delta_frame(new_field={"nested": True}, another=1))
    assert isinstance(event, ResponseOutputAudioDelta)


@pytest.mark.parametrize(
    ("frame", "fragments"),
    [
        ("{not json", ["not valid JSON", "'{not json'"]),
        ("", ["not valid JSON"]),
        (b"\xff\xfe", ["not UTF-8 text (byte 0 is not)"]),
        ("[1, 2]", ["not an object", "list"]),
        ('"hello"', ["not an object", "str"]),
        ('{"event_id": "e1"}', ["no string 'type'", "None"]),
        ('{"type": 7}', ["no string 'type'", "7"]),
        (
            '{"type": "response.output_audio.delta", "event_id": "e"}',
            ["response.output_audio.delta event is invalid", "missing required field"],
        ),
        (
            audio_delta_frame(output_index="zero"),
            ["response.output_audio.delta event is invalid", "`$.output_index`", "int"],
        ),
        (
            audio_delta_frame(delta="Base64EncodedAudioDelta"),
            ["Invalid base64", "`$.delta`"],
        ),
    ],
)
def test_malformed_input_becomes_a_protocol_error_event(
    frame: str | bytes, fragments: list[str]
) -> None:
    event = decode_server_event(frame)
    assert isinstance(event, ProtocolErrorEvent)
    assert event.type == "voxwire.protocol_error"
    for fragment in fragments:
        assert fragment in event.message, (fragment, event.message)


def test_protocol_error_keeps_what_could_be_read() -> None:
    event = decode_server_event(audio_delta_frame(output_index="zero"))
    assert isinstance(event, ProtocolErrorEvent)
    assert event.event_type == "response.output_audio.delta"
    assert event.event_id == "event_1"
    assert event.raw is not None
    assert event.raw["output_index"] == "zero"


def test_invalid_session_becomes_a_protocol_error() -> None:
    frame = json.dumps(
        {
            "type": "session.updated",
            "event_id": "e9",
            "session": {"audio": {"output": {"speed": 7}}},
        }
    )
    event = decode_server_event(frame)
    assert isinstance(event, ProtocolErrorEvent)
    assert event.event_type == "session.updated"
    assert "audio.output.speed=7" in event.message


def test_assistant_items_with_beta_content_types_are_repaired() -> None:
    frame = json.dumps(
        {
            "type": "response.output_item.done",
            "event_id": "e",
            "response_id": "r",
            "output_index": 0,
            "item": {
                "id": "i",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": "hi"}, {"type": "audio", "transcript": "yo"}],
            },
        }
    )
    event = decode_server_event(frame)
    assert isinstance(event, ResponseOutputItemDone)
    assert isinstance(event.item, MessageItem)
    assert event.item.content == [OutputText(text="hi"), OutputAudio(transcript="yo")]


def test_repair_does_not_hide_other_errors() -> None:
    frame = json.dumps(
        {
            "type": "response.done",
            "event_id": "e",
            "response": {
                "id": "r",
                "output": [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "audio", "audio": "@@"}],
                    }
                ],
            },
        }
    )
    event = decode_server_event(frame)
    assert isinstance(event, ProtocolErrorEvent)
    assert "base64" in event.message
    assert "$.response.output[0].content[0].audio" in event.message


def test_user_items_are_not_repaired() -> None:
    frame = json.dumps(
        {
            "type": "conversation.item.added",
            "event_id": "e",
            "item": {
                "id": "i",
                "type": "message",
                "role": "user",
                "content": [{"type": "text", "text": "x"}],
            },
        }
    )
    assert isinstance(decode_server_event(frame), ProtocolErrorEvent)


def test_server_event_from_mapping_types_a_mapping() -> None:
    event = server_event_from_mapping(
        {
            "type": "error",
            "event_id": "e",
            "error": {"type": "invalid_request_error", "message": "m"},
        }
    )
    assert isinstance(event, ErrorEvent)
    assert event.error.code is None


def test_every_server_event_type_round_trips() -> None:
    # encode_event is what the local server uses; decoding its output gives the same event.
    sample = decode_server_event(frame_of(GA_SIP_FILEORDER, "session.updated"))
    assert isinstance(sample, SessionUpdated)
    again = decode_server_event(encode_event(sample))
    assert again == sample
    assert len(SERVER_EVENT_TYPES) == 46


def test_encoding_writes_audio_as_base64_and_leaves_none_out() -> None:
    frame = encode_event(InputAudioBufferAppend(audio=b"\x01\x02\x03", event_id="e1"))
    assert json.loads(frame) == {
        "type": "input_audio_buffer.append",
        "audio": "AQID",
        "event_id": "e1",
    }
    frame = encode_event(ConversationItemCreate(item=user_message("hi")))
    assert json.loads(frame) == {
        "type": "conversation.item.create",
        "item": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hi"}],
        },
    }


def test_session_update_never_echoes_server_only_fields() -> None:
    session = SessionConfig.from_wire(
        {
            "id": "sess_1",
            "object": "realtime.session",
            "expires_at": 1,
            "instructions": "x",
            "temperature": 0.7,
        }
    )
    wire = json.loads(encode_event(SessionUpdate(session=session)))
    assert wire == {
        "type": "session.update",
        "session": {"type": "realtime", "instructions": "x", "temperature": 0.7},
    }
    # The server-side encoder of session.created keeps them.
    created = json.loads(encode_event(SessionCreated(event_id="e", session=session)))
    assert created["session"]["id"] == "sess_1"


def test_transcription_delta_accepts_missing_optional_fields() -> None:
    frame = {
        "type": "conversation.item.input_audio_transcription.delta",
        "event_id": "e",
        "item_id": "i",
    }
    event = decode_server_event(json.dumps(frame))
    assert event == InputAudioTranscriptionDelta(event_id="e", item_id="i")


def test_conversation_item_added_with_previous_null() -> None:
    event = decode_server_event(frame_of(GA_SIP_FILEORDER, "conversation.item.added"))
    assert isinstance(event, ConversationItemAdded)
    assert event.previous_item_id is None


# --- the server side: decoding client frames ------------------------------------------------------


def test_client_frames_decode_to_client_events() -> None:
    event = decode_client_event('{"type": "response.create", "event_id": "c1"}')
    assert event == ResponseCreate(event_id="c1")
    event = decode_client_event(
        '{"type": "session.update", "session": {"voice": "marin", "modalities": ["text"]}}'
    )
    assert isinstance(event, SessionUpdate)
    assert event.session.output_modalities == ["text"]


@pytest.mark.parametrize(
    ("frame", "fragment"),
    [
        ("nope", "not valid JSON"),
        ('{"type": "response.make"}', "unknown client event type 'response.make'"),
        ('{"type": "conversation.item.delete"}', "missing required field `item_id`"),
        ('{"type": "session.update", "session": {"speed": 3}}', "audio.output.speed=3"),
        (
            '{"type": "conversation.item.create", "item": {"type": "message", "role": "system",'
            ' "content": [{"type": "input_audio"}]}}',
            "input_audio' is invalid in a system message",
        ),
    ],
)
def test_bad_client_frames_become_protocol_errors(frame: str, fragment: str) -> None:
    event = decode_client_event(frame)
    assert isinstance(event, ProtocolErrorEvent)
    assert fragment in event.message
