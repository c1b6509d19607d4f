"""Conformance with the official GA types (``openai.types.realtime``, a test-only dependency).

* the event sets match: 46 server and 11 client event types;
* every field the official types define is modelled here;
* every client event the core can produce validates against the official type, with no field
  the official type does not define;
* server events re-encoded from real traces validate too (what the local server sends).
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from typing import Any

import msgspec
import pydantic
import pytest
from openai.types import realtime as rt
from openai.types.realtime import RealtimeClientEvent, RealtimeServerEvent
from openai.types.realtime.response_item_reference import ResponseItemReference

from voxwire.protocol import (
    CLIENT_EVENT_TYPES,
    PCM16,
    PCMA,
    SERVER_EVENT_TYPES,
    AudioConfig,
    AudioInputConfig,
    AudioOutputConfig,
    ErrorInfo,
    FunctionCallItem,
    FunctionCallOutputItem,
    FunctionTool,
    FunctionToolChoice,
    InputAudio,
    InputImage,
    InputText,
    InputTokenDetails,
    Item,
    ItemReference,
    McpApprovalRequestItem,
    McpApprovalResponseItem,
    McpCallItem,
    McpListToolsItem,
    McpTool,
    McpToolChoice,
    MessageItem,
    NoiseReduction,
    OutputAudio,
    OutputText,
    ProtocolErrorEvent,
    RateLimit,
    RealtimeProtocol,
    Reasoning,
    Response,
    ResponseAudioOutputParams,
    ResponseAudioParams,
    ResponseCreateParams,
    RetentionRatioTruncation,
    SemanticVad,
    ServerVad,
    SessionConfig,
    StatusDetails,
    TracingConfig,
    Transcription,
    UnknownServerEvent,
    Usage,
    VoiceId,
    assistant_message,
    decode_server_event,
    encode_event,
    system_message,
    user_message,
)

from .scenario import ga_turn_with_audio
from .traces import GA_DOCS_SERVER, GA_ISSUES, GA_SIP_FILEORDER, GA_SIP_TURN, frames

# Fields real GA traffic carries that the official types do not define (kept on purpose).
KNOWN_EXTRAS = {"obfuscation", "object", "id", "expires_at"}


def official_classes(union: Any) -> dict[str, type[pydantic.BaseModel]]:
    members = typing.get_args(typing.get_args(union)[0])
    return {typing.get_args(cls.model_fields["type"].annotation)[0]: cls for cls in members}


OFFICIAL_SERVER = official_classes(RealtimeServerEvent)
OFFICIAL_CLIENT = official_classes(RealtimeClientEvent)


def extras(value: Any, path: str = "$") -> Iterator[str]:
    """Paths of fields an official model accepted only because it allows extra fields."""
    if isinstance(value, pydantic.BaseModel):
        for key in value.model_extra or {}:
            yield f"{path}.{key}"
        for name in type(value).model_fields:
            yield from extras(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, list):
        for index, element in enumerate(value):
            yield from extras(element, f"{path}[{index}]")


def assert_official(frame: str, allowed_extras: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    data = json.loads(frame)
    table = OFFICIAL_CLIENT if data["type"] in OFFICIAL_CLIENT else OFFICIAL_SERVER
    response = data.get("response")
    if data["type"] == "response.create" and isinstance(response, dict):
        # The official *model* leaves item references out of ``input`` (only the
        # ``..._with_references_param`` TypedDict has them): check them on their own.
        references = [i for i in response.get("input", []) if i.get("type") == "item_reference"]
        for reference in references:
            ResponseItemReference.model_validate(reference)
        response["input"] = [i for i in response.get("input", []) if i not in references]
    model = table[data["type"]].model_validate(data)
    unexpected = [p for p in extras(model) if p.rsplit(".", 1)[-1] not in allowed_extras]
    assert unexpected == [], (data["type"], unexpected)


# --- the event sets and their fields --------------------------------------------------------------


def test_server_event_types_match_the_official_union() -> None:
    assert set(SERVER_EVENT_TYPES) == set(OFFICIAL_SERVER)
    assert len(SERVER_EVENT_TYPES) == 46


def test_client_event_types_match_the_official_union() -> None:
    assert set(CLIENT_EVENT_TYPES) == set(OFFICIAL_CLIENT)
    assert len(CLIENT_EVENT_TYPES) == 11


@pytest.mark.parametrize("event_type", sorted(OFFICIAL_SERVER) + sorted(OFFICIAL_CLIENT))
def test_every_official_field_is_modelled(event_type: str) -> None:
    ours = SERVER_EVENT_TYPES.get(event_type) or CLIENT_EVENT_TYPES[event_type]
    official = OFFICIAL_SERVER.get(event_type) or OFFICIAL_CLIENT[event_type]
    official_fields = set(official.model_fields) - {"type"}
    assert official_fields <= set(ours.__struct_fields__), official_fields - set(
        ours.__struct_fields__
    )


NESTED = [
    (rt.realtime_response.RealtimeResponse, Response),
    (rt.realtime_response_usage.RealtimeResponseUsage, Usage),
    (
        rt.realtime_response_usage_input_token_details.RealtimeResponseUsageInputTokenDetails,
        InputTokenDetails,
    ),
    (rt.realtime_response_status.RealtimeResponseStatus, StatusDetails),
    (rt.realtime_error.RealtimeError, ErrorInfo),
    (rt.rate_limits_updated_event.RateLimit, RateLimit),
    (rt.realtime_conversation_item_user_message.RealtimeConversationItemUserMessage, MessageItem),
    (rt.realtime_conversation_item_user_message.Content, InputAudio | InputImage | InputText),
    (rt.realtime_conversation_item_assistant_message.Content, OutputAudio | OutputText),
    (
        rt.realtime_conversation_item_function_call.RealtimeConversationItemFunctionCall,
        FunctionCallItem,
    ),
    (
        rt.realtime_conversation_item_function_call_output.RealtimeConversationItemFunctionCallOutput,
        FunctionCallOutputItem,
    ),
    (rt.realtime_mcp_tool_call.RealtimeMcpToolCall, McpCallItem),
    (rt.realtime_mcp_list_tools.RealtimeMcpListTools, McpListToolsItem),
    (rt.realtime_mcp_approval_request.RealtimeMcpApprovalRequest, McpApprovalRequestItem),
    (rt.realtime_mcp_approval_response.RealtimeMcpApprovalResponse, McpApprovalResponseItem),
    (rt.realtime_session_create_request.RealtimeSessionCreateRequest, SessionConfig),
    (rt.realtime_audio_config_input.RealtimeAudioConfigInput, AudioInputConfig),
    (rt.realtime_audio_config_output.RealtimeAudioConfigOutput, AudioOutputConfig),
    (rt.realtime_audio_input_turn_detection.ServerVad, ServerVad),
    (rt.realtime_audio_input_turn_detection.SemanticVad, SemanticVad),
    (rt.audio_transcription.AudioTranscription, Transcription),
    (rt.realtime_response_create_params.RealtimeResponseCreateParams, ResponseCreateParams),
]


@pytest.mark.parametrize(("official", "ours"), NESTED, ids=lambda v: getattr(v, "__name__", str(v)))
def test_every_official_field_of_nested_objects_is_modelled(official: Any, ours: Any) -> None:
    modelled: set[str] = set()
    for cls in typing.get_args(ours) or (ours,):
        modelled |= {f.encode_name for f in msgspec.structs.fields(cls)}
    missing = set(official.model_fields) - modelled - {"type"}
    assert missing == set()


# --- every client event the core can produce ------------------------------------------------------


FULL_SESSION = SessionConfig(
    model="gpt-realtime",
    output_modalities=["audio"],
    instructions="Be brief.",
    audio=AudioConfig(
        input=AudioInputConfig(
            format=PCM16,
            transcription=Transcription(model="gpt-4o-transcribe", language="en", prompt="names"),
            turn_detection=ServerVad(
                threshold=0.6,
                prefix_padding_ms=300,
                silence_duration_ms=500,
                idle_timeout_ms=6000,
                create_response=True,
                interrupt_response=True,
            ),
            noise_reduction=NoiseReduction(type="near_field"),
        ),
        output=AudioOutputConfig(format=PCMA, voice="marin", speed=1.25),
    ),
    tools=[
        FunctionTool(
            name="get_weather",
            description="Weather for a city.",
            parameters={"type": "object", "properties": {"city": {"type": "string"}}},
        ),
        McpTool(
            server_label="docs", server_url="https://example.test/mcp", require_approval="never"
        ),
    ],
    tool_choice="auto",
    max_output_tokens="inf",
    tracing=TracingConfig(workflow_name="support", group_id="g1", metadata={"k": "v"}),
    truncation=RetentionRatioTruncation(retention_ratio=0.5),
    include=["item.input_audio_transcription.logprobs"],
    reasoning=Reasoning(effort="low"),
    parallel_tool_calls=False,
)

SESSION_VARIANTS = [
    FULL_SESSION,
    SessionConfig(),
    SessionConfig(
        audio=AudioConfig(
            input=AudioInputConfig(turn_detection=SemanticVad(eagerness="high"), transcription=None)
        ),
        tool_choice=McpToolChoice(server_label="docs", name="search"),
        tracing="auto",
        truncation="disabled",
    ),
    SessionConfig(
        audio=AudioConfig(
            input=AudioInputConfig(turn_detection=None, noise_reduction=None),
            output=AudioOutputConfig(voice=VoiceId(id="voice_123")),
        ),
        tracing=None,
    ),
    # The legacy flat shape, normalised, is a valid GA session.
    SessionConfig.from_mapping(
        {
            "modalities": ["text", "audio"],
            "voice": "coral",
            "input_audio_format": "g711_ulaw",
            "output_audio_format": "pcm16",
            "input_audio_transcription": {"model": "whisper-1", "language": "en"},
            "turn_detection": {"type": "server_vad", "silence_duration_ms": 200},
        }
    ),
]

ITEMS: list[Item] = [
    user_message("hi"),
    system_message("Be nice."),
    assistant_message("Hello!"),
    MessageItem(
        role="user",
        content=[
            InputAudio(audio=b"\x00\x01" * 8),
            InputImage(image_url="data:image/png;base64,AAAA", detail="low"),
        ],
    ),
    MessageItem(role="assistant", content=[OutputAudio(audio=b"\x00\x00", transcript="hm")]),
    FunctionCallItem(name="get_weather", arguments='{"city": "Paris"}', call_id="call_1"),
    FunctionCallOutputItem(call_id="call_1", output='{"temp": 21}'),
    McpApprovalResponseItem(id="mcpr_1", approval_request_id="mcpa_1", approve=False, reason="no"),
]

RESPONSE_VARIANTS = [
    None,
    ResponseCreateParams(instructions="Shorter."),
    ResponseCreateParams(
        conversation="none",
        input=[ItemReference(id="item_1"), user_message("Summarise.")],
        output_modalities=["text"],
        metadata={"purpose": "summary"},
        max_output_tokens=200,
        tools=[FunctionTool(name="f", parameters={"type": "object"})],
        tool_choice=FunctionToolChoice(name="f"),
        audio=ResponseAudioParams(output=ResponseAudioOutputParams(format=PCM16, voice="cedar")),
        reasoning=Reasoning(effort="minimal"),
        parallel_tool_calls=True,
    ),
    ResponseCreateParams(conversation="auto", input=[]),
]


def produced_frames() -> list[str]:
    protocol = RealtimeProtocol()
    for session in SESSION_VARIANTS:
        protocol.send_session_update(session)
    protocol.send_session_update({"instructions": "x", "speed": 1.0})
    protocol.send_input_audio(b"\x00\x01" * 480)
    protocol.send_input_audio_commit()
    protocol.send_input_audio_clear()
    protocol.send_output_audio_clear()
    for item in ITEMS:
        protocol.send_item_create(item)
    protocol.send_item_create(user_message("first"), previous_item_id="root")
    protocol.send_item_retrieve("item_1")
    protocol.send_item_delete("item_1")
    protocol.send_item_truncate("item_1", 0, 1500)
    frames_out = protocol.data_to_send()
    for params in RESPONSE_VARIANTS:
        # Fresh protocols: each create goes out at once.
        fresh = RealtimeProtocol()
        fresh.send_response_create(params)
        frames_out += fresh.data_to_send()
    # Cancel, truncate and delete as an interruption produces them.
    interrupted = ga_turn_with_audio()
    interrupted.interrupt({("item_a", 0): 4_800})
    frames_out += interrupted.data_to_send()
    # Deletes and creates as a history update produces them.
    history = ga_turn_with_audio()
    history.update_history([user_message("new first", id="new_1")])
    frames_out += history.data_to_send()
    return frames_out


def test_the_core_produces_every_client_event_type() -> None:
    assert {json.loads(f)["type"] for f in produced_frames()} == set(OFFICIAL_CLIENT)


@pytest.mark.parametrize("frame", produced_frames())
def test_every_produced_client_event_is_officially_valid(frame: str) -> None:
    assert_official(frame)


def test_the_validator_catches_unknown_fields() -> None:
    with pytest.raises(AssertionError):
        assert_official('{"type": "response.cancel", "response_idd": "r"}')
    with pytest.raises(AssertionError, match="volume"):
        assert_official(
            '{"type": "session.update", "session": {"type": "realtime",'
            ' "audio": {"output": {"volume": 3}}}}'
        )
    with pytest.raises(pydantic.ValidationError):
        assert_official(
            '{"type": "conversation.item.truncate", "item_id": "i", "content_index": 0}'
        )


# --- server events as the local server would send them --------------------------------------------


def typed_trace_events() -> list[Any]:
    events = []
    for name in (GA_SIP_TURN, GA_SIP_FILEORDER, GA_ISSUES, GA_DOCS_SERVER):
        for frame in frames(name):
            event = decode_server_event(frame)
            if not isinstance(event, UnknownServerEvent | ProtocolErrorEvent):
                events.append(event)
    return events


@pytest.mark.parametrize("event", typed_trace_events(), ids=lambda e: e.type)
def test_re_encoded_trace_events_are_officially_valid(event: Any) -> None:
    assert_official(encode_event(event), KNOWN_EXTRAS)
