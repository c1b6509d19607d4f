"""Session configuration: GA shape, legacy and camelCase normalisation, validation messages."""

from __future__ import annotations

import msgspec
import pytest
from msgspec import UNSET

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import (
    G711_8K,
    PCM16,
    PCM16_24K,
    PCMA,
    PCMU,
    AudioConfig,
    AudioFormat,
    AudioInputConfig,
    AudioOutputConfig,
    FunctionTool,
    FunctionToolChoice,
    McpTool,
    NoiseReduction,
    Reasoning,
    RetentionRatioTruncation,
    SemanticVad,
    ServerVad,
    SessionConfig,
    TracingConfig,
    Transcription,
)


def test_ga_shape_round_trips_through_the_wire_form() -> None:
    config = SessionConfig(
        output_modalities=["audio"],
        instructions="Be brief.",
        audio=AudioConfig(
            input=AudioInputConfig(
                format=PCM16,
                transcription=Transcription(model="gpt-4o-transcribe", language="en"),
                turn_detection=SemanticVad(eagerness="low", interrupt_response=True),
                noise_reduction=NoiseReduction(type="near_field"),
            ),
            output=AudioOutputConfig(format=PCMU, voice="marin", speed=1.2),
        ),
        tools=[FunctionTool(name="get_weather", parameters={"type": "object"})],
        tool_choice=FunctionToolChoice(name="get_weather"),
        max_output_tokens=512,
        tracing=TracingConfig(workflow_name="support"),
        truncation=RetentionRatioTruncation(retention_ratio=0.8),
        reasoning=Reasoning(effort="low"),
        extra={"service_tier": "fast"},
    )
    wire = config.to_wire()
    assert wire["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
    assert wire["audio"]["input"]["turn_detection"] == {
        "type": "semantic_vad",
        "eagerness": "low",
        "interrupt_response": True,
    }
    assert wire["audio"]["output"] == {
        "format": {"type": "audio/pcmu"},
        "voice": "marin",
        "speed": 1.2,
    }
    assert wire["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert wire["truncation"] == {"type": "retention_ratio", "retention_ratio": 0.8}
    assert wire["reasoning"] == {"effort": "low"}
    assert wire["service_tier"] == "fast"
    assert "extra" not in wire
    assert SessionConfig.from_mapping(wire) == config


def test_unset_fields_stay_off_the_wire_and_none_is_sent_as_null() -> None:
    config = SessionConfig(audio=AudioConfig(input=AudioInputConfig(turn_detection=None)))
    # turn_detection: null turns VAD off (GA); everything unset is simply absent.
    assert config.to_wire() == {"type": "realtime", "audio": {"input": {"turn_detection": None}}}


def test_legacy_flat_fields_move_to_the_ga_shape() -> None:
    config = SessionConfig.from_mapping(
        {
            "modalities": ["text", "audio"],
            "voice": "coral",
            "speed": 1.1,
            "input_audio_format": "pcm16",
            "output_audio_format": "g711_alaw",
            "input_audio_transcription": {"model": "whisper-1", "language": "en"},
            "turn_detection": {"type": "server_vad", "threshold": 0.5, "create_response": True},
            "input_audio_noise_reduction": None,
            "max_response_output_tokens": "inf",
        }
    )
    assert config.output_modalities == ["audio"]
    assert config.max_output_tokens == "inf"
    assert isinstance(config.audio, AudioConfig)
    assert config.audio.input == AudioInputConfig(
        format=PCM16,
        transcription=Transcription(model="whisper-1", language="en"),
        turn_detection=ServerVad(threshold=0.5, create_response=True),
        noise_reduction=None,
    )
    assert config.audio.output == AudioOutputConfig(format=PCMA, voice="coral", speed=1.1)
    assert config.extra == {}


@pytest.mark.parametrize(
    ("legacy", "expected"),
    [
        (["text"], ["text"]),
        (["audio"], ["audio"]),
        (["audio", "text"], ["audio"]),
    ],
)
def test_legacy_modalities_map_to_ga_output_modalities(
    legacy: list[str], expected: list[str]
) -> None:
    assert SessionConfig.from_mapping({"modalities": legacy}).output_modalities == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("pcm16", PCM16),
        ("g711_ulaw", PCMU),
        ("g711_alaw", PCMA),
        ("audio/pcm", PCM16),
        ("audio/pcmu", PCMU),
        ("audio/pcma", PCMA),
        ({"type": "audio/pcm"}, AudioFormat(type="audio/pcm")),
        ({"type": "pcm16"}, PCM16),
        ({"type": "audio/pcm", "rate": 24000}, PCM16),
    ],
)
def test_format_names_and_objects(name: object, expected: AudioFormat) -> None:
    config = SessionConfig.from_mapping({"audio": {"output": {"format": name}}})
    assert isinstance(config.audio, AudioConfig)
    assert isinstance(config.audio.output, AudioOutputConfig)
    assert config.audio.output.format == expected


def test_camel_case_keys_normalise_at_every_modelled_level() -> None:
    config = SessionConfig.from_mapping(
        {
            "outputModalities": ["text"],
            "maxOutputTokens": 100,
            "toolChoice": "required",
            "inputAudioFormat": "g711_ulaw",
            "audio": {
                "input": {
                    "turnDetection": {
                        "type": "server_vad",
                        "silenceDurationMs": 200,
                        "prefixPaddingMs": 300,
                        "idleTimeoutMs": None,
                        "interruptResponse": False,
                    },
                    "noiseReduction": {"type": "far_field"},
                },
            },
            "tools": [
                {
                    "type": "function",
                    "name": "lookup",
                    # JSON Schema property names belong to the app: never renamed.
                    "parameters": {"type": "object", "properties": {"accountId": {}}},
                },
                {"type": "mcp", "serverLabel": "docs", "serverUrl": "https://example.test/mcp"},
            ],
            "tracing": {"workflowName": "w", "groupId": "g"},
        }
    )
    assert config.output_modalities == ["text"]
    assert config.max_output_tokens == 100
    assert config.tool_choice == "required"
    assert isinstance(config.audio, AudioConfig)
    assert isinstance(config.audio.input, AudioInputConfig)
    assert config.audio.input.format == PCMU
    assert config.audio.input.turn_detection == ServerVad(
        silence_duration_ms=200,
        prefix_padding_ms=300,
        idle_timeout_ms=None,
        interrupt_response=False,
    )
    assert config.audio.input.noise_reduction == NoiseReduction(type="far_field")
    assert config.tools == [
        FunctionTool(name="lookup", parameters={"type": "object", "properties": {"accountId": {}}}),
        McpTool(server_label="docs", server_url="https://example.test/mcp"),
    ]
    assert config.tracing == TracingConfig(workflow_name="w", group_id="g")


def test_unknown_top_level_fields_pass_through_in_extra() -> None:
    config = SessionConfig.from_mapping(
        {"instructions": "x", "service_tier": "fast", "extra": {"beta_knob": {"on": True}}}
    )
    assert config.extra == {"service_tier": "fast", "beta_knob": {"on": True}}
    assert config.to_wire() == {
        "type": "realtime",
        "instructions": "x",
        "service_tier": "fast",
        "beta_knob": {"on": True},
    }


def test_from_wire_keeps_server_fields_and_drops_unknown_nested_ones() -> None:
    config = SessionConfig.from_wire(
        {
            "type": "realtime",
            "object": "realtime.session",
            "id": "sess_1",
            "expires_at": 1767233035,
            "audio": {"output": {"voice": "alloy", "speed": 1, "future_knob": 3}},
        }
    )
    assert config.extra == {"object": "realtime.session", "id": "sess_1", "expires_at": 1767233035}
    assert config.audio == AudioConfig(output=AudioOutputConfig(voice="alloy", speed=1.0))


def test_from_wire_ignores_tools_of_unknown_types() -> None:
    config = SessionConfig.from_wire({"tools": [{"type": "web_search"}, {"name": "f"}]})
    assert config.tools == [FunctionTool(name="f")]


def test_output_sample_format_follows_audio_output_format() -> None:
    assert SessionConfig().output_sample_format == PCM16_24K
    assert (
        SessionConfig.from_mapping({"output_audio_format": "g711_ulaw"}).output_sample_format
        == G711_8K
    )
    assert SessionConfig.from_mapping({"voice": "marin"}).output_sample_format == PCM16_24K


# --- validation: every message names the field, the value and what is allowed ---------------------


@pytest.mark.parametrize(
    ("mapping", "fragments"),
    [
        ({"speed": 2.0}, ["audio.output.speed", "2.0", "0.25 to 1.5"]),
        ({"audio": {"output": {"speed": 0.1}}}, ["audio.output.speed", "0.1", "0.25 to 1.5"]),
        ({"output_audio_format": "mp3"}, ["audio.output.format", "'mp3'", "audio/pcmu"]),
        (
            {"audio": {"input": {"format": {"type": "opus"}}}},
            ["audio.input.format.type", "'opus'", "audio/pcm"],
        ),
        (
            {"audio": {"output": {"format": {"type": "audio/pcm", "rate": 16000}}}},
            ["audio.output.format.rate", "16000", "24000"],
        ),
        (
            {"turn_detection": {"type": "push_to_talk"}},
            ["turn_detection.type", "'push_to_talk'", "server_vad or semantic_vad"],
        ),
        ({"turn_detection": {"threshold": 0.5}}, ["turn_detection.type", "None", "server_vad"]),
        (
            {"turn_detection": {"type": "semantic_vad", "eagerness": "max"}},
            ["turn_detection.eagerness", "'max'", "low, medium, high, auto"],
        ),
        (
            {"turn_detection": {"type": "server_vad", "threshold": 1.5}},
            ["threshold", "1.5", "0.0 to 1.0"],
        ),
        (
            {"turn_detection": {"type": "server_vad", "silence_duration_ms": -1}},
            ["silence_duration_ms", "-1", ">= 0"],
        ),
        (
            {"input_audio_noise_reduction": {"type": "studio"}},
            ["noise_reduction.type", "'studio'", "near_field, far_field"],
        ),
        ({"max_output_tokens": 5000}, ["max_output_tokens", "5000", "1 to 4096"]),
        ({"max_output_tokens": "lots"}, ["max_output_tokens", "'lots'"]),
        (
            {"output_modalities": ["video"]},
            ["output_modalities", "['video']", "['audio'] or ['text']"],
        ),
        ({"output_modalities": []}, ["output_modalities", "[]"]),
        ({"audio": {"output": {"volume": 3}}}, ["audio.output.volume", "format, speed, voice"]),
        ({"audio": {"output": {"speed": "fast"}}}, ["audio.output.speed", "'fast'", "float"]),
        (
            {"voice": "alloy", "audio": {"output": {"voice": "marin"}}},
            ["voice='alloy'", "audio.output.voice='marin'"],
        ),
        ({"voice": "alloy", "Voice": "marin"}, ["voice", "'alloy'", "'marin'", "twice"]),
        ({"audio": {"output": {"voice": ""}}}, ["audio.output.voice", "''"]),
        ({"tools": [{"type": "web_search"}]}, ["tools[0].type", "'web_search'", "function or mcp"]),
        ({"tools": "get_weather"}, ["tools", "'get_weather'", "list"]),
        ({"tools": [{"type": "function"}]}, ["name", "tools[0]"]),
        (
            {"truncation": {"type": "retention_ratio", "retention_ratio": 2}},
            ["retention_ratio", "2", "0.0 to 1.0"],
        ),
        ({"audio": "loud"}, ["audio", "'loud'", "mapping"]),
        (
            {"audio": {"input": {"transcription": {"model": "whisper-1", "lang": "en"}}}},
            ["transcription.lang"],
        ),
        ({"extra": ["x"]}, ["extra", "mapping"]),
        ({1: "x"}, ["key 1", "string"]),
    ],
)
def test_invalid_values_are_named_with_what_is_allowed(
    mapping: dict[object, object], fragments: list[str]
) -> None:
    with pytest.raises(ConfigurationError) as excinfo:
        SessionConfig.from_mapping(mapping)  # type: ignore[arg-type]
    message = str(excinfo.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_a_session_must_be_a_mapping() -> None:
    with pytest.raises(
        ConfigurationError, match=r"session=\['voice'\] is invalid: expected a mapping"
    ):
        SessionConfig.from_mapping(["voice"])  # type: ignore[arg-type]


def test_legacy_value_cannot_land_in_a_non_mapping() -> None:
    with pytest.raises(
        ConfigurationError, match=r"audio.output='x' is invalid: expected a mapping"
    ):
        SessionConfig.from_mapping({"voice": "marin", "audio": {"output": "x"}})


def test_direct_construction_validates_too() -> None:
    with pytest.raises(ConfigurationError, match=r"audio.output.speed=9 is invalid"):
        AudioOutputConfig(speed=9)
    with pytest.raises(
        ConfigurationError, match=r"format.type='audio/opus' is invalid: expected one of"
    ):
        AudioFormat(type="audio/opus")
    with pytest.raises(ConfigurationError, match=r"format.rate=8000 is invalid: expected 24000"):
        AudioFormat(type="audio/pcm", rate_hz=8000)
    with pytest.raises(ConfigurationError, match=r"format.rate=8000 is invalid: expected no rate"):
        AudioFormat(type="audio/pcmu", rate_hz=8000)
    with pytest.raises(ConfigurationError, match="tool_choice='sometimes' is invalid"):
        SessionConfig(tool_choice="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="max_output_tokens=True is invalid"):
        SessionConfig(max_output_tokens=True)


def test_config_records_are_immutable() -> None:
    config = SessionConfig(instructions="a")
    with pytest.raises(AttributeError):
        config.instructions = "b"  # type: ignore[misc]
    assert msgspec.structs.replace(config, instructions="b").instructions == "b"
    assert config.model is UNSET
