"""Protocol codec benchmarks: voxwire (msgspec) against the official pydantic types.

    pytest benches/test_bench_protocol.py --benchmark-only

Payloads: a 20 ms ``response.output_audio.delta`` (480 samples of PCM16 at 24 kHz, 1280 base64
characters) and a typical ``response.done`` (the real GA one recorded in
``tests/fixtures/realtime/real_ga_sip-gateway_server_events_fileorder.jsonl``: one assistant
audio message, usage with token details).

Decoders, each given the same JSON text:

* ``voxwire`` — ``voxwire.protocol.decode_server_event``: typed struct, audio base64-decoded to
  ``bytes``.
* ``pydantic-official-union`` — ``TypeAdapter(openai.types.realtime.RealtimeServerEvent)
  .validate_json``: the official server event type as published. Its discriminator is an
  ``openai`` annotation pydantic does not read, so pydantic tries the members in turn.
* ``pydantic-discriminated`` — the same 46 official classes in a union with a pydantic
  ``Field(discriminator="type")``: pydantic at its best when the event type is not known.
* ``pydantic-concrete`` — the official class of the payload (``ResponseAudioDeltaEvent`` /
  ``ResponseDoneEvent``) ``.model_validate_json``: pydantic when the type is known up front.

The pydantic results keep audio as base64 text; voxwire's hold decoded bytes (the work a client
needs before playing). Two reference rows, not baselines: ``voxwire-receive`` adds the state
machine (``receive_text`` + ``events_received``); ``msgspec-base64-left-as-text`` decodes the
delta into a struct that keeps the audio as text, to show what the base64 decoding costs.
"""

from __future__ import annotations

import base64
import json
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Union

import msgspec
import pytest
from openai.types.realtime import (
    InputAudioBufferAppendEvent,
    RealtimeServerEvent,
    ResponseAudioDeltaEvent,
    ResponseDoneEvent,
)
from pydantic import BaseModel, Field, TypeAdapter

from voxwire.protocol import (
    InputAudioBufferAppend,
    RealtimeProtocol,
    ResponseDone,
    ResponseOutputAudioDelta,
    decode_server_event,
    encode_event,
)

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "realtime"

PCM_20MS = bytes((n * 37) % 256 for n in range(960))  # 480 samples of PCM16


def audio_delta_frame() -> str:
    return json.dumps(
        {
            "type": "response.output_audio.delta",
            "event_id": "event_Ct1Ok70EO4KZfMtv7bHV3",
            "response_id": "resp_Ct1OkhbgNQBuFX2HeE0P9",
            "item_id": "item_Ct1OkNEvGW5s0xZERnV95",
            "output_index": 0,
            "content_index": 0,
            "delta": base64.b64encode(PCM_20MS).decode(),
        }
    )


def response_done_frame() -> str:
    lines = (FIXTURES / "real_ga_sip-gateway_server_events_fileorder.jsonl").read_text("utf-8")
    return next(line for line in lines.splitlines() if '"type": "response.done"' in line)


PAYLOADS: dict[str, tuple[str, type[BaseModel], type[Any]]] = {
    "audio_delta_20ms": (audio_delta_frame(), ResponseAudioDeltaEvent, ResponseOutputAudioDelta),
    "response_done": (response_done_frame(), ResponseDoneEvent, ResponseDone),
}

_MEMBERS = typing.get_args(typing.get_args(RealtimeServerEvent)[0])
OFFICIAL_UNION: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)
DISCRIMINATED: TypeAdapter[Any] = TypeAdapter(
    Annotated[Union[_MEMBERS], Field(discriminator="type")]  # noqa: UP007
)


class _DeltaAsText(msgspec.Struct, tag_field="type", tag="response.output_audio.delta"):
    event_id: str
    response_id: str
    item_id: str
    output_index: int
    content_index: int
    delta: str


_AS_TEXT = msgspec.json.Decoder(_DeltaAsText | ResponseDone)


def receive(frame: str) -> object:
    _PROTOCOL.receive_text(frame)
    return _PROTOCOL.events_received()


_PROTOCOL = RealtimeProtocol()


def decoder(name: str, concrete: type[BaseModel]) -> Callable[[str], object]:
    return {
        "voxwire": decode_server_event,
        "voxwire-receive": receive,
        "pydantic-official-union": OFFICIAL_UNION.validate_json,
        "pydantic-discriminated": DISCRIMINATED.validate_json,
        "pydantic-concrete": concrete.model_validate_json,
        "msgspec-base64-left-as-text": _AS_TEXT.decode,
    }[name]


DECODERS = [
    "voxwire",
    "voxwire-receive",
    "pydantic-official-union",
    "pydantic-discriminated",
    "pydantic-concrete",
]


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_all_decoders_read_the_same_content(payload: str) -> None:
    frame, concrete, ours = PAYLOADS[payload]
    event = decode_server_event(frame)
    assert isinstance(event, ours)
    for name in DECODERS[2:]:
        official = decoder(name, concrete)(frame)
        assert type(official) is concrete
        if isinstance(official, ResponseAudioDeltaEvent):
            assert isinstance(event, ResponseOutputAudioDelta)
            assert base64.b64decode(official.delta) == event.delta
        else:
            assert isinstance(official, ResponseDoneEvent)
            assert isinstance(event, ResponseDone)
            assert official.response.usage is not None
            assert event.response.usage is not None
            assert official.response.usage.total_tokens == event.response.usage.total_tokens


@pytest.mark.parametrize("name", DECODERS)
@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_decode(benchmark: Any, payload: str, name: str) -> None:
    frame, concrete, _ = PAYLOADS[payload]
    benchmark.group = f"decode {payload}"
    benchmark(decoder(name, concrete), frame)


def test_decode_audio_delta_base64_left_as_text(benchmark: Any) -> None:
    frame = PAYLOADS["audio_delta_20ms"][0]
    benchmark.group = "decode audio_delta_20ms"
    benchmark(decoder("msgspec-base64-left-as-text", ResponseAudioDeltaEvent), frame)


@pytest.mark.parametrize("name", ["voxwire", "pydantic-concrete"])
def test_encode_audio_append(benchmark: Any, name: str) -> None:
    """The send hot path: 20 ms of microphone audio as ``input_audio_buffer.append``."""
    benchmark.group = "encode input_audio_buffer.append 20ms"
    if name == "voxwire":
        benchmark(lambda: encode_event(InputAudioBufferAppend(audio=PCM_20MS, event_id="e1")))
    else:
        benchmark(
            lambda: InputAudioBufferAppendEvent(
                type="input_audio_buffer.append",
                audio=base64.b64encode(PCM_20MS).decode(),
                event_id="e1",
            ).model_dump_json(exclude_none=True)
        )
