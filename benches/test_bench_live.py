"""GPT-Live codec benchmarks: voxwire.live (msgspec) against the official pydantic types.

    pytest benches/test_bench_live.py --benchmark-only

Payloads: a 20 ms ``session.output_audio.delta`` (480 samples of PCM16 at 24 kHz, 1280 base64
characters, with its timeline span) and a ``session.started`` with a Responses delegation and
one function tool (tests/live/samples.py).

Decoders, each given the same JSON text:

* ``voxwire`` — ``voxwire.live.decode_server_event``: typed struct, audio decoded to ``bytes``.
* ``pydantic-official-union`` — ``TypeAdapter(openai.types.live.ServerEvent).validate_json``:
  the official type as published (its discriminator is an ``openai`` annotation pydantic does
  not read, so members are tried in turn).
* ``openai-client-parse`` — what ``AsyncLiveConnection.parse_event`` does: ``json.loads`` and
  ``construct_type_unchecked`` (no validation).
* ``pydantic-concrete`` — the payload's own official class ``.model_validate_json``.

Reference row: ``voxwire-receive`` adds the state machine (``LiveProtocol.receive_text`` +
``events_received``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any, cast

import pytest
from openai._models import construct_type_unchecked
from openai.types.live import OutputAudioDeltaEvent, ServerEvent, SessionStartedEvent
from pydantic import TypeAdapter
from tests.live.samples import SERVER

from voxwire.live import LiveProtocol, decode_server_event

PCM_20MS = bytes((n * 37) % 256 for n in range(960))
DELTA = json.dumps(
    {
        "type": "session.output_audio.delta",
        "delta": base64.b64encode(PCM_20MS).decode(),
        "start_ms": 1000,
        "end_ms": 1020,
    }
)
STARTED = json.dumps(SERVER["session.started"])
OFFICIAL: TypeAdapter[Any] = TypeAdapter(ServerEvent)


def _receiver() -> Callable[[str], object]:
    live = LiveProtocol()
    live.send_session_start({"model": "gpt-live-1"})
    live.receive_text(STARTED)

    def receive(frame: str) -> object:
        live.receive_text(frame)
        return live.events_received()

    return receive


DECODERS: dict[str, dict[str, Callable[[str], object]]] = {
    "delta": {
        "voxwire": decode_server_event,
        "pydantic-official-union": OFFICIAL.validate_json,
        "openai-client-parse": lambda f: construct_type_unchecked(
            value=json.loads(f), type_=cast(Any, ServerEvent)
        ),
        "pydantic-concrete": OutputAudioDeltaEvent.model_validate_json,
        "voxwire-receive": _receiver(),
    },
    "started": {
        "voxwire": decode_server_event,
        "pydantic-official-union": OFFICIAL.validate_json,
        "openai-client-parse": lambda f: construct_type_unchecked(
            value=json.loads(f), type_=cast(Any, ServerEvent)
        ),
        "pydantic-concrete": SessionStartedEvent.model_validate_json,
    },
}


@pytest.mark.parametrize(
    ("payload", "decoder"),
    [(p, d) for p, decoders in DECODERS.items() for d in decoders],
)
def test_decode(benchmark: Any, payload: str, decoder: str) -> None:
    frame = DELTA if payload == "delta" else STARTED
    decode = DECODERS[payload][decoder]
    benchmark.group = f"live {payload}"
    result = benchmark(decode, frame)
    assert result is not None
