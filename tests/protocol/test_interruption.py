"""Interruption: truncate to what was heard (clamped to what arrived), delete what was not heard,
drop the interrupted response's later deltas."""

from __future__ import annotations

import json

import pytest

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import (
    ConversationItemDelete,
    ConversationItemTruncate,
    RealtimeProtocol,
    ResponseCancel,
    ResponseDone,
    ResponseOutputAudioDelta,
    ResponseOutputAudioTranscriptDone,
)

from .scenario import ScriptedServer, feed, ga_turn_with_audio


def wire(protocol: RealtimeProtocol) -> list[dict[str, object]]:
    return [json.loads(frame) for frame in protocol.data_to_send()]


def test_partly_heard_audio_is_truncated_at_the_played_samples() -> None:
    protocol = ga_turn_with_audio()
    events = protocol.interrupt({("item_a", 0): 4_800})  # 200 ms of the 1 s received
    assert events == [
        ResponseCancel(response_id="resp_a", event_id="vx_evt_1"),
        ConversationItemTruncate(
            item_id="item_a", content_index=0, audio_end_ms=200, event_id="vx_evt_2"
        ),
    ]
    assert [f["type"] for f in wire(protocol)] == ["response.cancel", "conversation.item.truncate"]


def test_truncation_is_clamped_to_the_audio_received() -> None:
    protocol = ga_turn_with_audio()
    protocol.interrupt({("item_a", 0): 10 * 24_000}, cancel_response=False)
    (truncate,) = wire(protocol)
    assert truncate["audio_end_ms"] == 1000  # 1 s arrived; the clock cannot have played more


def test_sub_millisecond_play_rounds_down() -> None:
    protocol = ga_turn_with_audio()
    protocol.interrupt({("item_a", 0): 47}, cancel_response=False)  # 1.96 ms
    assert wire(protocol)[0]["audio_end_ms"] == 1


def test_unheard_item_is_deleted_not_truncated() -> None:
    protocol = ga_turn_with_audio()
    events = protocol.interrupt({("item_a", 0): 0})
    assert [type(e) for e in events] == [ResponseCancel, ConversationItemDelete]
    assert events[1] == ConversationItemDelete(item_id="item_a", event_id="vx_evt_2")


def test_audio_of_the_active_response_not_named_counts_as_unheard() -> None:
    protocol = ga_turn_with_audio()
    events = protocol.interrupt({})
    assert [type(e) for e in events] == [ResponseCancel, ConversationItemDelete]


def test_server_side_cancel_sends_no_cancel() -> None:
    protocol = ga_turn_with_audio()
    events = protocol.interrupt({("item_a", 0): 2_400}, cancel_response=False)
    assert [type(e) for e in events] == [ConversationItemTruncate]
    record = protocol.responses.get("resp_a")
    assert record is not None
    assert record.interrupted
    assert not record.cancel_sent


def test_later_deltas_of_the_interrupted_response_are_dropped() -> None:
    server = ScriptedServer()
    protocol = ga_turn_with_audio(server)
    protocol.interrupt({("item_a", 0): 4_800})
    received = feed(
        protocol,
        server.audio_delta("resp_a", "item_a", 4_800),
        server.transcript_delta("resp_a", "item_a", " there was"),
        server.frame(
            "response.function_call_arguments.delta",
            response_id="resp_a",
            item_id="item_f",
            output_index=1,
            call_id="c",
            delta="{",
        ),
        server.transcript_done("resp_a", "item_a", "Once upon a time there was a king."),
        server.truncated("item_a", 200),
        server.response_done("resp_a", status="cancelled"),
    )
    # Deltas are gone; the done events still arrive and the response ends.
    assert next(type(e) for e in received) is ResponseOutputAudioTranscriptDone
    assert isinstance(received[-1], ResponseDone)
    assert len(received) == 3
    assert protocol.audio_received_samples("item_a") == 24_000
    # GA: truncation removes the transcript of the cut audio; a late transcript.done of the
    # interrupted response does not bring it back.
    assert protocol.conversation.transcript("item_a") is None
    assert protocol.conversation.truncated_at_ms("item_a") == 200
    segment = protocol.audio.get(("item_a", 0))
    assert segment is not None
    assert segment.truncated_at_ms == 200
    assert protocol.can_create_response


def test_a_fully_played_earlier_answer_is_left_alone() -> None:
    server = ScriptedServer()
    protocol = ga_turn_with_audio(server)
    feed(protocol, server.audio_done("resp_a", "item_a"), server.response_done("resp_a"))
    feed(
        protocol,
        server.response_created("resp_b"),
        server.output_item_added("resp_b", "item_b"),
        server.item_added("item_b", "item_a", role="assistant", content=[]),
        server.audio_delta("resp_b", "item_b", 9_600),
    )
    events = protocol.interrupt({("item_a", 0): 24_000, ("item_b", 0): 2_400})
    assert events == [
        ResponseCancel(response_id="resp_b", event_id="vx_evt_1"),
        ConversationItemTruncate(
            item_id="item_b", content_index=0, audio_end_ms=100, event_id="vx_evt_2"
        ),
    ]


def test_an_earlier_answer_named_but_cut_short_is_truncated() -> None:
    server = ScriptedServer()
    protocol = ga_turn_with_audio(server)
    feed(protocol, server.audio_done("resp_a", "item_a"), server.response_done("resp_a"))
    # The response is over but playback was not: the clock names the segment.
    events = protocol.interrupt({("item_a", 0): 12_000})
    assert events == [
        ConversationItemTruncate(
            item_id="item_a", content_index=0, audio_end_ms=500, event_id="vx_evt_1"
        )
    ]
    assert protocol.interrupt({}) == []  # older segments not named are not touched


def test_g711_output_counts_one_byte_per_sample_at_8k() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(
        protocol,
        server.session_created(audio={"output": {"format": {"type": "audio/pcmu"}}}),
        server.response_created("resp_1"),
        server.item_added("item_1", None, role="assistant", content=[]),
        server.audio_delta("resp_1", "item_1", 8_000),
    )
    assert protocol.audio_received_samples("item_1") == 8_000
    protocol.interrupt({("item_1", 0): 4_000}, cancel_response=False)
    assert wire(protocol)[0]["audio_end_ms"] == 500


def test_every_segment_of_a_partly_heard_item_is_truncated() -> None:
    server = ScriptedServer()
    protocol = ga_turn_with_audio(server)
    feed(protocol, server.audio_delta("resp_a", "item_a", 4_800, content_index=1))
    events = protocol.interrupt({("item_a", 0): 2_400}, cancel_response=False)
    assert [
        (e.content_index, e.audio_end_ms) for e in events if isinstance(e, ConversationItemTruncate)
    ] == [
        (0, 100),
        (1, 0),
    ]


def test_already_truncated_and_unannounced_segments_are_skipped() -> None:
    server = ScriptedServer()
    protocol = ga_turn_with_audio(server)
    feed(
        protocol,
        server.truncated("item_a", 300),
        # Audio of an out-of-band item that never joined the conversation.
        server.audio_delta("resp_a", "item_oob", 960),
    )
    assert (
        protocol.interrupt({("item_a", 0): 100, ("item_oob", 0): 10}, cancel_response=False) == []
    )


@pytest.mark.parametrize("count", [-1, 1.5, True, "10"])
def test_played_counts_must_be_sample_counts(count: object) -> None:
    protocol = ga_turn_with_audio()
    with pytest.raises(ConfigurationError, match=r"played_samples\[\('item_a', 0\)\]"):
        protocol.interrupt({("item_a", 0): count})  # type: ignore[dict-item]
    assert protocol.data_to_send() == []  # nothing queued on misuse


def test_manual_truncate_is_clamped_too() -> None:
    protocol = ga_turn_with_audio()
    event = protocol.send_item_truncate("item_a", 0, 60_000)
    assert event.audio_end_ms == 1000
    assert protocol.send_item_truncate("unknown_item", 0, 60_000).audio_end_ms == 60_000
    with pytest.raises(ConfigurationError, match="audio_end_ms=-5"):
        protocol.send_item_truncate("item_a", 0, -5)
    with pytest.raises(ConfigurationError, match="content_index=-1"):
        protocol.send_item_truncate("item_a", -1, 5)


def test_deltas_for_a_deleted_item_are_dropped() -> None:
    server = ScriptedServer()
    protocol = ga_turn_with_audio(server)
    feed(protocol, server.deleted("item_a"))
    assert protocol.audio.get(("item_a", 0)) is None
    received = feed(
        protocol,
        server.audio_delta("resp_a", "item_a", 960),
        server.transcript_delta("resp_a", "item_a", "late"),
    )
    assert received == []
    assert protocol.audio_received_samples("item_a") == 0


def test_out_of_order_delta_for_an_unknown_item_is_kept_and_counted() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    received = feed(protocol, server.audio_delta("resp_x", "item_x", 960))
    assert [type(e) for e in received] == [ResponseOutputAudioDelta]
    assert protocol.audio_received_samples("item_x") == 480
    segment = protocol.audio.get(("item_x", 0))
    assert segment is not None
    assert segment.response_id == "resp_x"
    assert segment.received_ms == 20
    # The item shows up later and joins the conversation; its audio was counted all along.
    feed(
        protocol,
        server.output_item_added("resp_x", "item_x"),
        server.item_added("item_x", None, role="assistant", content=[]),
        server.audio_delta("resp_x", "item_x", 960),
        server.audio_done("resp_x", "item_x"),
    )
    assert protocol.conversation.item_ids == ("item_x",)
    assert protocol.audio_received_samples("item_x") == 960
    assert [s.done for s in protocol.audio.segments()] == [True]
    assert ("item_x", 0) in protocol.audio
