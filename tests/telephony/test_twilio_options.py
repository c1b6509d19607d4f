"""What the Twilio pieces accept, and what they say when given something else."""

from __future__ import annotations

import asyncio

import pytest

from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.telephony.twilio import TwilioBridge, TwilioCallSimulator, phone_config


def test_the_phone_config_keeps_the_application_s_and_sets_pcmu_both_ways() -> None:
    mine = {
        "audio": {
            "input": {"turn_detection": {"type": "semantic_vad"}, "format": {"type": "audio/pcm"}},
            "output": {"voice": "marin"},
        },
        "instructions": "Be brief.",
    }
    merged = phone_config(mine)
    assert merged["audio"]["input"] == {
        "turn_detection": {"type": "semantic_vad"},
        "format": {"type": "audio/pcmu"},
    }
    assert merged["audio"]["output"] == {"voice": "marin", "format": {"type": "audio/pcmu"}}
    assert merged["instructions"] == "Be brief."
    assert mine["audio"]["input"]["format"] == {"type": "audio/pcm"}  # not changed in place
    assert phone_config(None)["audio"]["output"]["format"] == {"type": "audio/pcmu"}
    with pytest.raises(ConfigurationError, match="mapping"):
        phone_config("server_vad")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"chunk_ms": 10}, "chunk_ms=10"),
        ({"chunk_ms": 40.0}, "chunk_ms=40.0"),
        ({"input_batch_ms": 500}, "input_batch_ms=500"),
        ({"greeting": ""}, "greeting=''"),
        ({"greeting": 1}, "greeting=1"),
    ],
)
def test_bridge_options_out_of_range_say_which(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        TwilioBridge(None, **options)  # type: ignore[arg-type]


def test_the_simulator_says_what_is_wrong() -> None:
    with pytest.raises(ConfigurationError, match="carrier_buffer_ms"):
        TwilioCallSimulator("ws://127.0.0.1:9/media", carrier_buffer_ms=-1)
    call = TwilioCallSimulator("ws://127.0.0.1:9/media")
    with pytest.raises(InvalidState, match="context manager"):
        asyncio.run(call.tick())
