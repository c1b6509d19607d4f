"""Beta protocol names mapped to GA events (optional; RealtimeProtocol(beta=True))."""

from __future__ import annotations

import json

import pytest

from voxwire.protocol import (
    BETA_EVENT_TYPES,
    PCMU,
    ConversationItemAdded,
    ConversationItemDone,
    ProtocolErrorEvent,
    ResponseCreated,
    ResponseOutputAudioDelta,
    ResponseOutputTextDone,
    SessionCreated,
    decode_beta_server_event,
)

PART = {"event_id": "e", "response_id": "r", "item_id": "i", "output_index": 0, "content_index": 0}


@pytest.mark.parametrize(("beta", "ga"), sorted(BETA_EVENT_TYPES.items()))
def test_every_beta_name_maps_to_a_ga_event(beta: str, ga: str) -> None:
    fields: dict[str, object] = dict(PART)
    if beta.startswith("conversation.item"):
        fields = {
            "event_id": "e",
            "item": {"id": "i", "type": "message", "role": "user", "content": []},
        }
    elif beta.endswith(".delta"):
        fields["delta"] = "AAAA"
    elif beta == "response.text.done":
        fields["text"] = "t"
    elif beta == "response.audio_transcript.done":
        fields["transcript"] = "t"
    (event, *_) = decode_beta_server_event(json.dumps({"type": beta, **fields}))
    assert event.type == ga


def test_beta_audio_delta_is_decoded_to_bytes() -> None:
    (event,) = decode_beta_server_event(
        json.dumps({"type": "response.audio.delta", **PART, "delta": "AQID"})
    )
    assert isinstance(event, ResponseOutputAudioDelta)
    assert event.delta == b"\x01\x02\x03"


def test_created_item_becomes_added_and_done_only_when_complete() -> None:
    item = {"id": "i", "type": "message", "role": "assistant", "content": []}
    frame = {"type": "conversation.item.created", "event_id": "e", "previous_item_id": "p"}
    in_progress = decode_beta_server_event(
        json.dumps({**frame, "item": {**item, "status": "in_progress"}})
    )
    assert [type(e) for e in in_progress] == [ConversationItemAdded]
    completed = decode_beta_server_event(
        json.dumps({**frame, "item": {**item, "status": "completed"}})
    )
    assert [type(e) for e in completed] == [ConversationItemAdded, ConversationItemDone]
    assert completed[1].previous_item_id == "p"  # type: ignore[union-attr]


def test_beta_response_fields_move_to_their_ga_places() -> None:
    response = {
        "id": "r",
        "status": "in_progress",
        "modalities": ["audio", "text"],
        "voice": "coral",
        "output_audio_format": "g711_ulaw",
        "temperature": 0.8,
    }
    (event,) = decode_beta_server_event(
        json.dumps({"type": "response.created", "event_id": "e", "response": response})
    )
    assert isinstance(event, ResponseCreated)
    assert event.response.output_modalities == ["audio"]
    assert event.response.audio is not None
    assert event.response.audio.output is not None
    assert (event.response.audio.output.voice, event.response.audio.output.format) == (
        "coral",
        PCMU,
    )


@pytest.mark.parametrize(
    ("response", "modalities", "audio"),
    [
        ({"id": "r", "modalities": ["text"]}, ["text"], None),
        ({"id": "r", "output_modalities": ["text"], "modalities": ["audio"]}, ["text"], None),
        ({"id": "r", "output_audio_format": "mystery"}, None, {}),
        ({"id": "r", "voice": "alloy", "audio": {"output": {"voice": "marin"}}}, None, "marin"),
    ],
)
def test_ga_fields_win_and_unknown_formats_are_left_out(
    response: dict[str, object], modalities: list[str] | None, audio: object
) -> None:
    (event,) = decode_beta_server_event(
        json.dumps({"type": "response.done", "event_id": "e", "response": response})
    )
    assert not isinstance(event, ProtocolErrorEvent), event
    assert event.response.output_modalities == modalities  # type: ignore[union-attr]
    output = event.response.audio.output if event.response.audio else None  # type: ignore[union-attr]
    if audio is None:
        assert output is None
    elif audio == {}:
        assert output is not None
        assert output.format is None
        assert output.voice is None
    else:
        assert output is not None
        assert output.voice == audio


def test_flat_beta_session_is_normalised() -> None:
    session = {
        "modalities": ["text"],
        "voice": "alloy",
        "input_audio_format": "pcm16",
        "object": "realtime.session",
    }
    (event,) = decode_beta_server_event(
        json.dumps({"type": "session.created", "event_id": "e", "session": session})
    )
    assert isinstance(event, SessionCreated)
    assert event.session.output_modalities == ["text"]
    assert event.session.extra == {"object": "realtime.session"}


def test_beta_decoder_reports_bad_frames() -> None:
    (event,) = decode_beta_server_event("{")
    assert isinstance(event, ProtocolErrorEvent)


def test_beta_text_done() -> None:
    (event,) = decode_beta_server_event(
        json.dumps({"type": "response.text.done", **PART, "text": "x"})
    )
    assert isinstance(event, ResponseOutputTextDone)
