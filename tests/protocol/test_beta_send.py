"""A beta server is configured in its own shape: after a beta ``session.created``, the
``session.update`` the core sends is flat (``modalities``, ``voice``, ``input_audio_format``,
``turn_detection`` …), as beta servers expect; a GA server (or one not yet recognised) gets the
GA shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from voxwire.protocol import (
    RealtimeProtocol,
    SessionConfig,
    assistant_message,
    function_call_output,
)

#: The project's copies of the recorded traces (sources in tests/fixtures/realtime/README.md).
TRACES = Path(__file__).resolve().parents[1] / "fixtures" / "realtime"

#: session.created as a beta server sends it (the shape of
#: real_beta-webrtc_banyan_session_server.jsonl, shortened).
BETA_CREATED = {
    "type": "session.created",
    "event_id": "event_1",
    "session": {
        "id": "sess_1",
        "object": "realtime.session",
        "model": "gpt-4o-realtime-preview-2024-12-17",
        "modalities": ["audio", "text"],
        "instructions": "",
        "voice": "alloy",
        "input_audio_format": "pcm16",
        "output_audio_format": "pcm16",
        "input_audio_transcription": None,
        "turn_detection": {"type": "server_vad", "threshold": 0.5},
        "tool_choice": "auto",
        "temperature": 0.8,
    },
}

GA_CREATED = {
    "type": "session.created",
    "event_id": "event_1",
    "session": {"type": "realtime", "id": "sess_1", "output_modalities": ["audio"]},
}

TURN_DETECTION = {
    "type": "server_vad",
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 200,
    "create_response": True,
}

FULL = {
    "instructions": "Be brief.",
    "output_modalities": ["audio"],
    "audio": {
        "input": {
            "format": {"type": "audio/pcmu"},
            "transcription": {"model": "whisper-1", "language": "en"},
            "turn_detection": TURN_DETECTION,
            "noise_reduction": {"type": "near_field"},
        },
        "output": {"format": {"type": "audio/pcma"}, "voice": "coral", "speed": 1.1},
    },
    "max_output_tokens": 400,
    "tool_choice": "auto",
    "tools": [{"type": "function", "name": "f", "description": "d", "parameters": {}}],
}

BETA_FULL = {
    "instructions": "Be brief.",
    "modalities": ["text", "audio"],
    "input_audio_format": "g711_ulaw",
    "input_audio_transcription": {"model": "whisper-1", "language": "en"},
    "turn_detection": TURN_DETECTION,  # the same object in both
    "input_audio_noise_reduction": {"type": "near_field"},
    "output_audio_format": "g711_alaw",
    "voice": "coral",
    "speed": 1.1,
    "max_response_output_tokens": 400,
    "tool_choice": "auto",
    "tools": [{"type": "function", "name": "f", "description": "d", "parameters": {}}],
}


def sent_session(protocol: RealtimeProtocol, config: Any) -> dict[str, Any]:
    protocol.send_session_update(config)
    (frame,) = protocol.data_to_send()
    event = json.loads(frame)
    assert event["type"] == "session.update"
    session: dict[str, Any] = event["session"]
    return session


def after(created: dict[str, Any], **options: Any) -> RealtimeProtocol:
    protocol = RealtimeProtocol(**options)
    protocol.receive_text(json.dumps(created))
    protocol.events_received()
    return protocol


def test_a_beta_server_is_sent_the_flat_beta_session() -> None:
    protocol = after(BETA_CREATED)
    assert protocol.beta is True
    assert sent_session(protocol, FULL) == BETA_FULL
    # What was sent reads back (through the legacy field names) as the config asked for.
    assert SessionConfig.from_mapping(BETA_FULL) == SessionConfig.from_mapping(FULL)


@pytest.mark.parametrize(
    ("ga", "beta"),
    [
        ({"output_modalities": ["text"]}, {"modalities": ["text"]}),
        (
            {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}},
            {"input_audio_format": "pcm16"},
        ),
        (
            {"audio": {"input": {"turn_detection": None}}},
            {"turn_detection": None},  # turn detection off: an explicit null
        ),
        ({"voice": "marin"}, {"voice": "marin"}),  # legacy input, beta output
        ({"type": "realtime", "instructions": "x"}, {"instructions": "x"}),
    ],
)
def test_each_ga_field_goes_to_its_beta_place(ga: dict[str, Any], beta: dict[str, Any]) -> None:
    assert sent_session(after(BETA_CREATED), ga) == beta


def test_a_ga_server_or_an_unknown_one_is_sent_the_ga_session() -> None:
    expected = sent_session(RealtimeProtocol(beta=False), FULL)
    assert "audio" in expected
    assert "modalities" not in expected
    assert sent_session(after(GA_CREATED), FULL) == expected
    assert sent_session(RealtimeProtocol(), FULL) == expected  # not known yet: GA
    assert sent_session(RealtimeProtocol(beta=True), FULL) == BETA_FULL


def test_the_real_beta_servers_first_frame_selects_the_beta_shape() -> None:
    lines = (TRACES / "real_beta-webrtc_banyan_session_server.jsonl").read_text().splitlines()
    created = next(json.loads(line) for line in lines if '"session.created"' in line)
    session = sent_session(after(created), {"voice": "coral", "turn_detection": None})
    assert session == {"voice": "coral", "turn_detection": None}


def test_responses_and_items_go_to_a_beta_server_in_its_names() -> None:
    protocol = after(BETA_CREATED)
    protocol.send_item_create(assistant_message("Hello.", id="a1"))
    protocol.send(
        {
            "type": "response.create",
            "response": {
                "output_modalities": ["text"],
                "audio": {"output": {"voice": "coral", "format": {"type": "audio/pcmu"}}},
                "max_output_tokens": 50,
                "conversation": "none",
                "input": [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "Earlier."}],
                    }
                ],
            },
        }
    )
    protocol.send_input_audio(b"\x00\x00")
    output = function_call_output("call_1", "{}", id="o1")
    protocol.send_item_create(output)
    item, response, audio, same = (json.loads(frame) for frame in protocol.data_to_send())
    assert item["item"]["content"] == [{"type": "text", "text": "Hello."}]
    assert response["response"] == {
        "modalities": ["text"],
        "voice": "coral",
        "output_audio_format": "g711_ulaw",
        "max_response_output_tokens": 50,
        "conversation": "none",
        "input": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": "Earlier."}],
            }
        ],
    }
    assert audio == {
        "type": "input_audio_buffer.append",
        "event_id": audio["event_id"],
        "audio": "AAA=",
    }
    assert same["item"] == {
        "type": "function_call_output",
        "id": "o1",
        "call_id": "call_1",
        "output": "{}",
    }  # no content: the same in both


def test_updates_sent_before_a_beta_server_told_are_sent_again_in_its_shape() -> None:
    """A session configures itself before the server's first frame (RealtimeSession does): the
    GA-shaped update a beta-only server cannot read goes out again flat once its
    session.created tells, ahead of what is still queued; what is still queued goes out once,
    in the beta shape."""
    protocol = RealtimeProtocol()
    protocol.send_session_update(FULL)
    (ga_frame,) = protocol.data_to_send()
    assert json.loads(ga_frame)["session"]["type"] == "realtime"
    protocol.send_session_update({"voice": "coral"})  # still queued when the server tells
    protocol.send_item_create(assistant_message("Hello.", id="a1"))
    protocol.receive_text(json.dumps(BETA_CREATED))
    sent = [json.loads(frame) for frame in protocol.data_to_send()]
    assert [event["type"] for event in sent] == [
        "session.update",
        "session.update",
        "conversation.item.create",
    ]
    assert [event["session"] for event in sent[:2]] == [BETA_FULL, {"voice": "coral"}]
    assert sent[0]["event_id"] == json.loads(ga_frame)["event_id"]
    assert sent[2]["item"]["content"][0]["type"] == "text"  # the beta name of output_text
    protocol.receive_text(json.dumps(BETA_CREATED))  # told once: nothing sent again
    assert protocol.data_to_send() == []


def test_a_ga_server_gets_no_second_update() -> None:
    protocol = RealtimeProtocol()
    protocol.send_session_update(FULL)
    protocol.data_to_send()
    protocol.receive_text(json.dumps(GA_CREATED))
    assert protocol.data_to_send() == []
    protocol.receive_text(json.dumps(BETA_CREATED))  # decided: a later frame changes nothing
    assert protocol.data_to_send() == []


def test_a_frame_that_tells_nothing_keeps_the_updates_for_when_one_does() -> None:
    protocol = RealtimeProtocol()
    protocol.send_session_update(FULL)
    protocol.data_to_send()
    protocol.receive_text(json.dumps({"type": "session.created", "session": {"id": "sess_1"}}))
    assert protocol.beta is None
    assert protocol.data_to_send() == []
    protocol.receive_text(json.dumps(BETA_CREATED))
    assert [json.loads(f)["session"] for f in protocol.data_to_send()] == [BETA_FULL]
