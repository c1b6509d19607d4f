"""The recorder against real traffic: recorded GA frames, and a live local server on loopback.

Its view of the conversation must be the protocol core's own (order, transcripts, truncations),
and what it stores must load back as that view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.store.conftest import Backend
from tests.store.frames import run
from voxwire.protocol import RealtimeProtocol
from voxwire.protocol.codec import decode_server_event
from voxwire.protocol.conversation import ConversationState
from voxwire.server import Pacing, RealtimeServer, Scenario
from voxwire.store import ConversationRecorder, conversation_state, replay_items

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "realtime"
GA_CAPTURES = [
    "openai-openapi_docs_examples_ga_server.jsonl",
    "real_ga_sip-gateway_server_events_fileorder.jsonl",
    "real_ga_sip-gateway_turn_sequence.jsonl",
]


def same_view(
    expected: ConversationState, actual: ConversationState, *, flushed_only: bool = False
) -> None:
    """``actual`` holds the items, transcripts and truncations of ``expected``; with
    ``flushed_only`` a transcript known only from deltas (in flight) may be missing."""
    assert actual.item_ids == expected.item_ids
    for item_id in expected.item_ids:
        item = expected.get(item_id)
        parts = len(getattr(item, "content", None) or [None])
        for index in range(parts):
            transcript = actual.transcript(item_id, index)
            if not (flushed_only and transcript is None):
                assert transcript == expected.transcript(item_id, index)
            assert actual.truncated_at_ms(item_id, index) == expected.truncated_at_ms(
                item_id, index
            )


@pytest.mark.parametrize("capture", GA_CAPTURES)
def test_recorded_traffic_is_stored_as_the_protocol_sees_it(backend: Backend, capture: str) -> None:
    frames = (FIXTURES / capture).read_text().splitlines()
    protocol = RealtimeProtocol(beta=False)

    async def body() -> None:
        store = await backend.open()
        info = await store.create("conv")
        recorder = ConversationRecorder("conv", info.created_at)
        for frame in frames:
            protocol.receive_text(frame)
            ops = recorder.receive(decode_server_event(frame))
            if ops:
                await store.apply("conv", ops)
        loaded = await store.load("conv")
        await store.close()
        assert loaded.items, "the capture holds conversation items"
        same_view(
            protocol.conversation, conversation_state(recorder.snapshot(info.created_at).items)
        )
        same_view(protocol.conversation, conversation_state(loaded.items), flushed_only=True)

    run(body())


SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"after_tool": "get_weather", "say": "It is {output.temperature} degrees in Paris."},
        ],
        "fallback": "You said: {text}",
    }
)


async def converse(url: str, recorder: ConversationRecorder, store: Any) -> RealtimeProtocol:
    """One text conversation with a tool call against the local server; every received frame
    goes to the protocol core and, decoded, to the recorder, whose operations are stored."""
    protocol = RealtimeProtocol(beta=False)
    async with connect(url) as ws:

        async def send_all() -> None:
            for frame in protocol.data_to_send():
                await ws.send(frame)

        async def until(kind: str) -> list[Any]:
            seen = []
            while True:
                frame = await ws.recv()
                protocol.receive_text(frame)
                received = decode_server_event(frame)
                seen.append(received)
                ops = recorder.receive(received)
                if ops:
                    await store.apply(recorder.conversation_id, ops)
                if received.type == kind:
                    return seen

        await until("session.created")
        protocol.send_session_update(
            {
                "output_modalities": ["text"],
                "audio": {"input": {"turn_detection": None}},
                "tools": [
                    {
                        "type": "function",
                        "name": "get_weather",
                        "description": "The weather in a city",
                        "parameters": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                        },
                    }
                ],
            }
        )
        protocol.send_item_create(_user("what is the weather?"))
        protocol.send_response_create()
        await send_all()
        seen = await until("response.done")
        [fc] = [e.item for e in seen if e.type == "response.output_item.done"]
        # The tool ran: its output is stored before it is sent (a crash now would not run the
        # tool again), and dropped once the server confirms the output item.
        await store.apply(
            recorder.conversation_id, recorder.output_ready(fc.call_id, '{"temperature": 21}')
        )
        waiting = await store.load(recorder.conversation_id)
        assert waiting.outputs == {fc.call_id: '{"temperature": 21}'}
        from voxwire.protocol.items import function_call_output

        protocol.send_item_create(function_call_output(fc.call_id, '{"temperature": 21}'))
        protocol.send_response_create()
        await send_all()
        await until("response.done")
    return protocol


def _user(text: str) -> Any:
    from voxwire.protocol.items import user_message

    return user_message(text)


def test_a_live_conversation_with_a_tool_call_is_stored(backend: Backend) -> None:
    async def body() -> None:
        store = await backend.open()
        info = await store.create("live")
        recorder = ConversationRecorder("live", info.created_at)
        pacing = Pacing(audio_pace=0, text_tokens_per_s=0)
        async with RealtimeServer(
            scenario=SCENARIO, tts=None, pacing=pacing, transcriber=None
        ) as server:
            protocol = await converse(server.url(), recorder, store)
        loaded = await store.load("live")
        await store.close()
        kinds = [(item.type, item.origin) for item in loaded.items]
        assert kinds == [
            ("message", "caller"),
            ("function_call", "model"),
            ("function_call_output", "sdk"),
            ("message", "model"),
        ]
        call, out = loaded.items[1], loaded.items[2]
        assert call.call_id == out.call_id is not None
        assert loaded.outputs == {}
        assert loaded.usage.responses == 2
        same_view(protocol.conversation, conversation_state(loaded.items))
        assert conversation_state(loaded.items).transcript(loaded.items[3].id) == (
            "It is 21 degrees in Paris."
        )
        assert replay_items(loaded).dropped == {}

    run(body())
