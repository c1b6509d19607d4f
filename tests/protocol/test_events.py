"""Typed events and items as an API: types, builders, per-response parameters."""

from __future__ import annotations

import json

import pytest

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import (
    FunctionCallOutputItem,
    InputText,
    MessageItem,
    OutputText,
    RealtimeProtocol,
    ResponseCancel,
    ResponseCreateParams,
    SemanticVad,
    ServerVad,
    TranscriptDurationUsage,
    TranscriptTokenUsage,
    assistant_message,
    decode_server_event,
    function_call_output,
    system_message,
    user_message,
)
from voxwire.protocol._normalize import value_at

from .scenario import ScriptedServer, feed


def test_every_record_knows_its_wire_type() -> None:
    assert ResponseCancel().type == "response.cancel"
    assert ServerVad().type == "server_vad"
    assert SemanticVad().type == "semantic_vad"
    assert TranscriptDurationUsage(seconds=1.0).type == "duration"
    assert TranscriptTokenUsage(input_tokens=1, output_tokens=2, total_tokens=3).type == "tokens"
    assert user_message("x").type == "message"
    assert InputText(text="x").type == "input_text"


def test_message_builders() -> None:
    assert user_message("hi", id="u") == MessageItem(
        id="u", role="user", content=[InputText(text="hi")]
    )
    assert system_message("rules").role == "system"
    assert assistant_message("ok").content == [OutputText(text="ok")]
    assert function_call_output("call_1", '{"ok": true}') == FunctionCallOutputItem(
        call_id="call_1", output='{"ok": true}'
    )


def test_events_and_items_are_immutable() -> None:
    item = user_message("hi")
    with pytest.raises(AttributeError):
        item.role = "system"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("metadata", "fragment"),
    [
        (
            {str(n): "v" for n in range(17)},
            "response.metadata='17 pairs' is invalid: expected at most 16 pairs",
        ),
        ({"k" * 65: "v"}, "response.metadata key="),
        ({"k": "v" * 513}, "response.metadata['k']="),
    ],
)
def test_response_metadata_limits(metadata: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigurationError) as excinfo:
        ResponseCreateParams(metadata=metadata)
    assert fragment in str(excinfo.value)


def test_response_parameters_are_checked() -> None:
    with pytest.raises(ConfigurationError, match=r"response\.output_modalities"):
        ResponseCreateParams(output_modalities=["smell"])
    with pytest.raises(ConfigurationError, match=r"response\.max_output_tokens=0"):
        ResponseCreateParams(max_output_tokens=0)
    with pytest.raises(ConfigurationError, match="invalid in a user message"):
        ResponseCreateParams(input=[MessageItem(role="user", content=[OutputText(text="x")])])


def test_response_done_lists_its_output_items() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    output = [
        {"id": "item_1", "type": "message", "role": "assistant", "content": []},
        {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"},
        {"id": "item_2", "type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"},
    ]
    feed(
        protocol,
        server.response_created("resp_1"),
        server.output_item_added("resp_1", "item_1"),
        server.response_done("resp_1", output=output, usage={"total_tokens": 9}),
    )
    record = protocol.responses.get("resp_1")
    assert record is not None
    assert record.output_item_ids == ["item_1", "item_2"]
    assert record.usage is not None
    assert record.usage.total_tokens == 9


def test_output_items_without_id_are_not_tracked() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    frame = json.loads(server.output_item_added("resp_1", "x"))
    del frame["item"]["id"]
    feed(protocol, json.dumps(frame))
    record = protocol.responses.get("resp_1")
    assert record is not None
    assert record.output_item_ids == []


def test_value_at_follows_msgspec_paths() -> None:
    data = {"tools": [{"name": 1}], "audio": {"output": {"speed": "x"}}}
    assert value_at(data, "Expected `float` - at `$.audio.output.speed`") == (True, "x")
    assert value_at(data, "Expected `str` - at `$.tools[0].name`") == (True, 1)
    assert value_at(data, "missing - at `$.tools[3]`") == (False, None)
    assert value_at(data, "no path here") == (False, None)


def test_decoded_usage_union() -> None:
    frame = json.dumps(
        {
            "type": "conversation.item.input_audio_transcription.completed",
            "event_id": "e",
            "item_id": "i",
            "content_index": 0,
            "transcript": "hi",
            "usage": {"type": "tokens", "input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        }
    )
    event = decode_server_event(frame)
    assert isinstance(getattr(event, "usage", None), TranscriptTokenUsage)


def test_a_responses_status_details_explain_why_in_words() -> None:
    """``StatusDetails.explanation``: what a console or a speech handle shows for a response
    that did not complete — the error's message, else its code, else the reason."""
    from voxwire.protocol.objects import StatusDetails, StatusError

    failed = StatusDetails(type="failed", error=StatusError(type="server_error", message="boom"))
    assert failed.explanation == "boom"
    coded = StatusDetails(type="failed", error=StatusError(code="rate_limit_exceeded"))
    assert coded.explanation == "rate_limit_exceeded"
    assert StatusDetails(type="failed", error=StatusError()).explanation is None
    assert StatusDetails(type="cancelled", reason="turn_detected").explanation == "turn_detected"
    assert StatusDetails().explanation is None
