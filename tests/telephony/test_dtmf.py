"""Collecting DTMF keys: from typed events, raw mappings and the session's raw events; ended by
the terminator, max_digits or a timeout (overall, or between keys)."""

from __future__ import annotations

import asyncio
import types
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voxwire.asyncio import RawServerEvent
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import InputAudioBufferDtmfEventReceived, decode_server_event
from voxwire.telephony import DigitCollector, collect_digits
from voxwire.telephony.dtmf import dtmf_key


def key(k: str) -> InputAudioBufferDtmfEventReceived:
    return InputAudioBufferDtmfEventReceived(event=k, received_at=1)


def test_every_form_of_the_event_gives_its_key() -> None:
    frame = '{"type": "input_audio_buffer.dtmf_event_received", "event": "7", "received_at": 1}'
    decoded = decode_server_event(frame)
    assert isinstance(decoded, InputAudioBufferDtmfEventReceived)
    assert dtmf_key(decoded) == "7"
    assert dtmf_key(RawServerEvent(event=decoded)) == "7"
    assert dtmf_key({"type": "input_audio_buffer.dtmf_event_received", "event": "a"}) == "A"
    assert dtmf_key({"type": "input_audio_buffer.dtmf_event_received", "event": "x"}) is None
    assert dtmf_key({"type": "input_audio_buffer.dtmf_event_received", "event": 5}) is None
    assert dtmf_key({"type": "session.created"}) is None
    assert dtmf_key("5") is None
    # The session-level event the session is to hand out (type "dtmf", the key as .key).
    assert dtmf_key(types.SimpleNamespace(type="dtmf", key="#")) == "#"


def test_the_terminator_ends_and_is_not_a_digit() -> None:
    collector = DigitCollector(terminator="#")
    assert [collector.feed(key(k)) for k in "12#3"] == [False, False, True, True]
    assert collector.digits == "12"
    result = asyncio.run(collector.result())
    assert (result.digits, result.reason, result.complete) == ("12", "terminator", True)


def test_max_digits_ends_a_menu_choice() -> None:
    collector = DigitCollector(max_digits=1, terminator=None)
    collector.feed({"type": "session.updated"})
    assert collector.feed(key("3"))
    assert asyncio.run(collector.result()).reason == "max_digits"


def test_silence_after_a_key_ends_with_what_was_pressed() -> None:
    async def body() -> None:
        collector = DigitCollector(timeout_s=5, inter_digit_timeout_s=0.05)
        collector.feed(key("4"))
        result = await collector.result()
        assert (result.digits, result.reason, result.complete) == ("4", "timeout", False)

    asyncio.run(body())


def test_the_overall_timeout_without_any_key() -> None:
    async def body() -> None:
        result = await DigitCollector(timeout_s=0.05).result()
        assert (result.digits, result.reason) == ("", "timeout")

    asyncio.run(body())


def test_collect_digits_reads_an_event_stream_as_it_comes() -> None:
    async def events() -> AsyncIterator[Any]:
        for k in "98#":
            await asyncio.sleep(0.01)
            yield RawServerEvent(event=key(k))
        await asyncio.sleep(10)  # the stream goes on; collection ended already

    async def body() -> None:
        result = await asyncio.wait_for(collect_digits(events(), timeout_s=5), 2)
        assert (result.digits, result.reason) == ("98", "terminator")

    asyncio.run(body())


@pytest.mark.parametrize(
    "options",
    [
        {"max_digits": 0},
        {"max_digits": True},
        {"terminator": "x"},
        {"terminator": None},
        {"timeout_s": 0},
        {"inter_digit_timeout_s": -1},
    ],
)
def test_bad_options_say_what_is_allowed(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        DigitCollector(**options)


@given(st.lists(st.one_of(st.text(max_size=3), st.integers(), st.none()), max_size=30))
def test_fuzz_any_keys_never_raise_and_only_valid_ones_count(keys: list[Any]) -> None:
    collector = DigitCollector(max_digits=50)
    for k in keys:
        collector.feed({"type": "input_audio_buffer.dtmf_event_received", "event": k})
    assert set(collector.digits) <= set("0123456789*ABCD")
