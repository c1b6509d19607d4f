"""RealtimeProtocol as a sans-I/O object: frames in, events out, frames to send; no event loop."""

from __future__ import annotations

import json
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import (
    CounterIds,
    GateState,
    IdKind,
    InputAudioBufferAppend,
    InputAudioBufferClear,
    InputAudioBufferCommit,
    OutputAudioBufferClear,
    OutputText,
    ProtocolErrorEvent,
    RealtimeProtocol,
    ResponseCreated,
    SessionConfig,
    SessionUpdate,
    UnknownServerEvent,
    assistant_message,
)

from .scenario import ScriptedServer, feed, ga_turn_with_audio
from .traces import BETA_BANYAN_SERVER, BETA_LIUSIDA, GA_DOCS_SERVER, GA_SIP_FILEORDER, frames


def test_send_methods_queue_frames_in_order_with_event_ids() -> None:
    protocol = RealtimeProtocol()
    session = protocol.send_session_update({"instructions": "Be brief.", "voice": "marin"})
    append = protocol.send_input_audio(bytearray(b"\x01\x00\x02\x00"))
    commit = protocol.send_input_audio_commit()
    clear = protocol.send_input_audio_clear()
    out_clear = protocol.send_output_audio_clear()
    retrieve = protocol.send_item_retrieve("item_1")
    assert isinstance(session, SessionUpdate)
    assert append == InputAudioBufferAppend(audio=b"\x01\x00\x02\x00", event_id="vx_evt_2")
    assert (commit, clear, out_clear) == (
        InputAudioBufferCommit(event_id="vx_evt_3"),
        InputAudioBufferClear(event_id="vx_evt_4"),
        OutputAudioBufferClear(event_id="vx_evt_5"),
    )
    assert retrieve.item_id == "item_1"
    sent = [json.loads(f) for f in protocol.data_to_send()]
    assert [f["type"] for f in sent] == [
        "session.update",
        "input_audio_buffer.append",
        "input_audio_buffer.commit",
        "input_audio_buffer.clear",
        "output_audio_buffer.clear",
        "conversation.item.retrieve",
    ]
    assert sent[0]["session"] == {
        "type": "realtime",
        "instructions": "Be brief.",
        "audio": {"output": {"voice": "marin"}},
    }
    assert sent[1]["audio"] == "AQACAA=="
    assert [f["event_id"] for f in sent] == [f"vx_evt_{n}" for n in range(1, 7)]
    assert protocol.data_to_send() == []


def test_session_changes_only_when_the_server_acknowledges() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    assert protocol.session is None
    feed(protocol, server.session_created(instructions="default"))
    protocol.send_session_update(SessionConfig(instructions="mine"))
    assert protocol.session is not None
    assert protocol.session.instructions == "default"
    feed(protocol, server.session_updated(instructions="mine"))
    assert protocol.session.instructions == "mine"


def test_a_bad_session_update_raises_before_anything_is_queued() -> None:
    protocol = RealtimeProtocol()
    with pytest.raises(ConfigurationError, match=r"audio\.output\.speed=3"):
        protocol.send_session_update({"speed": 3})
    assert protocol.data_to_send() == []


def test_a_bad_item_raises_before_anything_is_queued() -> None:
    protocol = RealtimeProtocol()
    with pytest.raises(ConfigurationError, match="'output_text' is invalid in a user message"):
        protocol.send_item_create(
            assistant_message("x").__class__(role="user", content=[OutputText(text="x")])
        )
    assert protocol.data_to_send() == []


def test_ids_come_from_the_injected_factory() -> None:
    made: list[IdKind] = []

    def ids(kind: IdKind) -> str:
        made.append(kind)
        return f"{kind}-{len(made)}"

    protocol = RealtimeProtocol(ids=ids)
    event = protocol.send_item_create(assistant_message("hi"))
    assert (event.item.id, event.event_id) == ("item-1", "event-2")
    assert made == ["item", "event"]


def test_counter_ids_are_deterministic_and_checked() -> None:
    ids = CounterIds("s1")
    assert [ids("event"), ids("item"), ids("event")] == ["s1_evt_1", "s1_item_1", "s1_evt_2"]
    with pytest.raises(ConfigurationError, match="id prefix"):
        CounterIds("not an identifier")


def test_events_received_hands_out_each_event_once() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    protocol.receive_text(server.response_created("resp_1"))
    protocol.receive_text(
        server.frame("rate_limits.updated", rate_limits=[{"name": "tokens", "limit": 10}])
    )
    events = protocol.events_received()
    assert [e.type for e in events] == ["response.created", "rate_limits.updated"]
    assert isinstance(events[0], ResponseCreated)
    assert protocol.events_received() == []


def test_malformed_frames_never_raise_and_change_nothing() -> None:
    server = ScriptedServer()
    protocol = ga_turn_with_audio(server)
    before = (
        protocol.conversation.item_ids,
        protocol.audio_received_samples("item_a"),
        protocol.gate_state,
        protocol.conversation.transcript("item_a"),
    )
    bad = [
        "{",
        "null",
        '{"type": "response.output_audio.delta", "event_id": "e", "response_id": "resp_a",'
        ' "item_id": "item_a", "output_index": 0, "content_index": 0, "delta": "!!"}',
        '{"type": "conversation.item.deleted", "event_id": "e"}',
        '{"type": "response.done", "event_id": "e", "response": {"id": 5}}',
        '{"type": "response.done", "event_id": "e", "response": []}',
        '{"type": "response.done", "event_id": "e"}',
    ]
    received = feed(protocol, *bad)
    assert all(isinstance(e, ProtocolErrorEvent) for e in received)
    assert len(received) == len(bad)
    after = (
        protocol.conversation.item_ids,
        protocol.audio_received_samples("item_a"),
        protocol.gate_state,
        protocol.conversation.transcript("item_a"),
    )
    assert after == before
    assert protocol.gate_state is GateState.ACTIVE


def test_an_unreadable_response_done_still_ends_its_response() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    protocol.send_response_create()
    protocol.send_response_create()  # held
    protocol.data_to_send()
    feed(
        protocol,
        server.response_created("resp_1"),
        '{"type": "response.done", "event_id": "e", "response": {"id": "resp_1",'
        ' "status": "cancelled", "usage": "[Object]"}}',
    )
    record = protocol.responses.get("resp_1")
    assert record is not None
    assert record.status == "cancelled"
    # The gate opened, so the held request went out.
    assert [json.loads(f)["type"] for f in protocol.data_to_send()] == ["response.create"]
    feed(
        protocol,
        server.response_created("resp_2"),
        '{"type": "response.done", "event_id": "e",'
        ' "response": {"id": "resp_2", "status": "exploded", "usage": 1}}',
    )
    record = protocol.responses.get("resp_2")
    assert record is not None
    assert record.status is None
    assert not record.in_progress


def test_unknown_events_pass_through_without_changing_state() -> None:
    protocol = ga_turn_with_audio()
    received = feed(protocol, '{"type": "response.audio.delta", "event_id": "e", "delta": "AAAA"}')
    assert isinstance(received[0], UnknownServerEvent)
    assert protocol.audio_received_samples("item_a") == 24_000


def test_input_transcription_is_tracked_per_user_item() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(
        protocol,
        server.item_added("item_u", None, content=[{"type": "input_audio"}]),
        server.frame(
            "conversation.item.input_audio_transcription.delta",
            item_id="item_u",
            content_index=0,
            delta="Hel",
        ),
        server.frame(
            "conversation.item.input_audio_transcription.delta", item_id="item_u", delta="lo"
        ),
        server.frame("conversation.item.input_audio_transcription.delta", item_id="item_u"),
    )
    assert protocol.conversation.transcript("item_u") == "Hello"
    feed(
        protocol,
        server.frame(
            "conversation.item.input_audio_transcription.completed",
            item_id="item_u",
            content_index=0,
            transcript="Hello.",
            usage={"type": "duration", "seconds": 1.5},
        ),
    )
    assert protocol.conversation.transcript("item_u") == "Hello."


def test_text_responses_are_tracked_like_transcripts() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    part = {"response_id": "r", "item_id": "i", "output_index": 0, "content_index": 0}
    feed(
        protocol,
        server.response_created("r"),
        server.frame("response.output_text.delta", delta="Hi", **part),
        server.frame("response.output_text.delta", delta=" you", **part),
    )
    assert protocol.conversation.transcript("i") == "Hi you"
    feed(protocol, server.frame("response.output_text.done", text="Hi you!", **part))
    assert protocol.conversation.transcript("i") == "Hi you!"
    feed(
        protocol,
        server.frame(
            "response.content_part.done", part={"type": "text", "text": "Hi you!!"}, **part
        ),
    )
    assert protocol.conversation.transcript("i") == "Hi you!!"
    feed(protocol, server.frame("response.content_part.done", part={"type": "audio"}, **part))
    assert protocol.conversation.transcript("i") == "Hi you!!"


def test_interrupted_text_done_events_do_not_overwrite() -> None:
    server = ScriptedServer()
    protocol = ga_turn_with_audio(server)
    protocol.interrupt({("item_a", 0): 2_400})
    part = {"response_id": "resp_a", "item_id": "item_a", "output_index": 0, "content_index": 0}
    feed(
        protocol,
        server.frame("response.output_text.done", text="never heard", **part),
        server.frame(
            "response.content_part.done",
            part={"type": "audio", "transcript": "never heard"},
            **part,
        ),
    )
    assert protocol.conversation.transcript("item_a") == "Once upon a time"


def test_beta_flag_selects_the_beta_decoder() -> None:
    assert RealtimeProtocol(beta=True).beta is True
    assert RealtimeProtocol(beta=False).beta is False
    assert RealtimeProtocol().beta is None  # auto: decided by the first telling frame


# --- property: no frame sequence makes the receive path raise -------------------------------------

TRACE_FRAMES = (
    frames(GA_SIP_FILEORDER)
    + frames(GA_DOCS_SERVER)
    + frames(BETA_BANYAN_SERVER)[:30]
    + frames(BETA_LIUSIDA)[-4:]
)
JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


def mutated(frame: str, key: str, value: Any) -> str:
    data = json.loads(frame)
    data[key] = value
    return json.dumps(data)


FRAMES = (
    st.sampled_from(TRACE_FRAMES)
    | st.text(max_size=40)
    | st.builds(
        mutated,
        st.sampled_from(TRACE_FRAMES),
        st.sampled_from(
            ["item", "response", "item_id", "delta", "previous_item_id", "session", "error"]
        ),
        JSON_VALUES,
    )
)


@settings(max_examples=150, deadline=None)
@given(st.lists(FRAMES, max_size=25), st.booleans(), st.lists(st.integers(0, 50_000), max_size=3))
def test_receiving_never_raises_and_the_state_stays_coherent(
    sequence: list[str], beta: bool, played: list[int]
) -> None:
    protocol = RealtimeProtocol(beta=beta)
    for frame in sequence:
        protocol.receive_text(frame)
    protocol.events_received()
    in_progress = protocol.responses_in_progress
    records = protocol.responses.all()
    assert set(in_progress) == {r.id for r in records if r.in_progress and not r.out_of_band}
    assert (protocol.gate_state is GateState.ACTIVE) == bool(in_progress)
    assert len(set(protocol.conversation.item_ids)) == len(protocol.conversation.item_ids)
    # Whatever was received, an interruption plan is well-formed.
    segments = protocol.audio.segments()
    clock = {s.key: n for s, n in zip(segments, played, strict=False)}
    for event in protocol.interrupt(clock, cancel_response=False):
        if event.type == "conversation.item.truncate":
            segment = protocol.audio.get((event.item_id, event.content_index))  # type: ignore[union-attr]
            assert segment is not None
            assert event.audio_end_ms <= segment.received_ms  # type: ignore[union-attr]
