"""The recorded traces (tests/fixtures/realtime, sources in its README) parse and drive the state
machine to the state the recording implies."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from voxwire.protocol import (
    SERVER_EVENT_TYPES,
    ConversationItemAdded,
    ConversationItemDone,
    ErrorEvent,
    GateState,
    MessageItem,
    OutputAudio,
    ProtocolErrorEvent,
    RealtimeProtocol,
    ReceivedEvent,
    ResponseOutputAudioTranscriptDelta,
    ResponseOutputTextDelta,
    SessionConfig,
    UnknownServerEvent,
    decode_beta_server_event,
    decode_client_event,
    decode_server_event,
)

from .traces import (
    BETA_BANYAN_CLIENT,
    BETA_BANYAN_SERVER,
    BETA_LIUSIDA,
    GA_DOCS_CLIENT,
    GA_DOCS_SERVER,
    GA_ISSUES,
    GA_SIP_FILEORDER,
    GA_SIP_TURN,
    frames,
    mappings,
)

GA_TRACES = [GA_SIP_TURN, GA_SIP_FILEORDER, GA_ISSUES, GA_DOCS_SERVER]

# Lines of the docs examples that are not live GA traffic (see the fixtures README).
DOCS_DEVIATIONS = {
    "conversation.item.retrieved": ProtocolErrorEvent,  # placeholder "8//2//v/...": not base64
    "response.output_audio.delta": ProtocolErrorEvent,  # placeholder "Base64EncodedAudioDelta"
    " input_audio_buffer.dtmf_event_received": UnknownServerEvent,  # leading space in the type
    "transcription_session.updated": UnknownServerEvent,  # not a GA event
}


@pytest.mark.parametrize("name", GA_TRACES)
def test_every_ga_trace_event_parses_to_its_typed_event(name: str) -> None:
    for frame in frames(name):
        wire_type = json.loads(frame)["type"]
        event = decode_server_event(frame)
        if name == GA_DOCS_SERVER and wire_type in DOCS_DEVIATIONS:
            assert isinstance(event, DOCS_DEVIATIONS[wire_type]), (wire_type, event)
            continue
        assert type(event) is SERVER_EVENT_TYPES[wire_type], (wire_type, event)


def test_the_docs_examples_cover_every_ga_server_event_type() -> None:
    types = {m["type"] for m in mappings(GA_DOCS_SERVER)}
    assert set(SERVER_EVENT_TYPES) - types == {"input_audio_buffer.dtmf_event_received"}


def test_docs_deviations_are_reported_precisely() -> None:
    by_type = {m["type"]: decode_server_event(json.dumps(m)) for m in mappings(GA_DOCS_SERVER)}
    retrieved = by_type["conversation.item.retrieved"]
    assert isinstance(retrieved, ProtocolErrorEvent)
    # The "audio" content type was repaired; what is left is the placeholder audio.
    assert "Invalid base64 encoded string - at `$.item.content[0].audio`" in retrieved.message
    unknown = by_type[" input_audio_buffer.dtmf_event_received"]
    assert isinstance(unknown, UnknownServerEvent)
    assert unknown.raw["event"] == "9"


def test_docs_client_examples_decode_on_the_server_side() -> None:
    results = Counter(type(decode_client_event(frame)).__name__ for frame in frames(GA_DOCS_CLIENT))
    # input_audio_buffer.append (placeholder audio) and transcription_session.update (not GA).
    assert results["ProtocolErrorEvent"] == 2
    assert sum(results.values()) == 13


def test_beta_client_session_update_normalises_to_ga() -> None:
    event = decode_client_event(frames(BETA_BANYAN_CLIENT)[0])
    assert not isinstance(event, ProtocolErrorEvent)
    session = event.session  # type: ignore[union-attr]
    assert isinstance(session, SessionConfig)
    wire = session.to_wire()
    assert wire["output_modalities"] == ["audio"]
    assert wire["audio"]["output"] == {"voice": "coral"}
    assert wire["audio"]["input"]["transcription"] == {"model": "whisper-1", "language": "en"}
    assert wire["audio"]["input"]["turn_detection"]["silence_duration_ms"] == 200


# --- chronological traces drive the state machine -------------------------------------------------


def run(name: str, *, beta: bool = False) -> tuple[RealtimeProtocol, list[ReceivedEvent]]:
    protocol = RealtimeProtocol(beta=beta)
    for frame in frames(name):
        protocol.receive_text(frame)
    return protocol, protocol.events_received()


def test_ga_sip_turn_sequence() -> None:
    protocol, events = run(GA_SIP_TURN)
    assert len(events) == 10
    # Joined mid-session: the user item's predecessor was never seen, so it goes last (first).
    assert protocol.conversation.item_ids == (
        "item_Ct1OhVepyDFpDovHrgmNp",
        "item_Ct1OkNEvGW5s0xZERnV95",
    )
    assert protocol.gate_state is GateState.ACTIVE
    assert not protocol.can_create_response
    active = protocol.active_response
    assert active is not None
    assert active.id == "resp_Ct1OkhbgNQBuFX2HeE0P9"
    assert active.output_item_ids == ["item_Ct1OkNEvGW5s0xZERnV95"]
    assert protocol.conversation.transcript("item_Ct1OkNEvGW5s0xZERnV95") == "The"
    assert protocol.conversation.response_of("item_Ct1OkNEvGW5s0xZERnV95") == active.id


def test_ga_sip_events_in_file_order_leave_a_consistent_state() -> None:
    # Not chronological: the first response.done arrives before anything else of its response.
    protocol, events = run(GA_SIP_FILEORDER)
    assert len(events) == 27
    assert protocol.session is not None
    assert (
        protocol.session.instructions
        == "You are a polite AI assistant on a phone call. Keep answers short."
    )
    done = protocol.responses.get("resp_CsZyL5IuqSgPEut0cI82K")
    assert done is not None
    assert done.status == "completed"
    assert done.usage is not None
    assert done.usage.total_tokens == 320
    # Both later responses were created and never finished in this excerpt.
    assert {r.id for r in protocol.responses.all() if r.in_progress} == {
        "resp_Ct1OZ5ukpGEZNeUWx1iOH",
        "resp_Ct1OkhbgNQBuFX2HeE0P9",
    }
    assert protocol.gate_state is GateState.ACTIVE
    # By previous_item_id: user 1 (null: first); user 2 follows assistant 1, which this excerpt
    # never announces, so it goes last; assistant 2 follows user 2.
    assert protocol.conversation.item_ids == (
        "item_Ct1OXLqYLre7VW2Bz9Eoy",
        "item_Ct1OhVepyDFpDovHrgmNp",
        "item_Ct1OkNEvGW5s0xZERnV95",
    )
    # Transcripts come from deltas, then the final text of transcript.done / content_part.done.
    story = "Sure! I'd be happy to tell you a short bedtime story."
    for item_id in ("item_Ct1OZd4ZkrcbhoRueeC2O", "item_CsZyLdZ3sHZ2DniSNrTKs"):
        assert (protocol.conversation.transcript(item_id) or "").startswith(story)
    assert protocol.conversation.transcript("item_Ct1OkNEvGW5s0xZERnV95") == "The"


def test_errors_from_issue_threads_are_typed_and_harmless() -> None:
    protocol, events = run(GA_ISSUES)
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.error.code for e in errors] == [
        "conversation_already_has_active_response",
        None,
        "session_expired",
    ]
    assert protocol.can_create_response


def test_ga_names_of_a_beta_trace_are_unknown_without_beta_mapping() -> None:
    _, events = run(BETA_BANYAN_SERVER)
    unknown = Counter(e.type for e in events if isinstance(e, UnknownServerEvent))
    assert unknown == {
        "response.audio_transcript.delta": 38,
        "response.audio.done": 2,
        "response.audio_transcript.done": 2,
    }


def test_beta_banyan_barge_in_with_beta_mapping() -> None:
    protocol, events = run(BETA_BANYAN_SERVER, beta=True)
    assert not [e for e in events if isinstance(e, UnknownServerEvent | ProtocolErrorEvent)]
    assert sum(isinstance(e, ResponseOutputAudioTranscriptDelta) for e in events) == 38
    # conversation.item.created became added (+ done for completed items).
    assert sum(isinstance(e, ConversationItemAdded) for e in events) == 4
    assert sum(isinstance(e, ConversationItemDone) for e in events) == 2
    assert protocol.conversation.item_ids == (
        "simulated-user-1748035262335",
        "item_BaU74LY2Poiq8lBMVXZ4R",
        "item_BaU77Slsnn0R5n45bdlkP",
        "item_BaU77gURroD7wPnxSkMC8",
    )
    # The barge-in: the first answer was truncated at 1860 ms and lost its transcript.
    assert protocol.conversation.truncated_at_ms("item_BaU74LY2Poiq8lBMVXZ4R") == 1860
    assert protocol.conversation.transcript("item_BaU74LY2Poiq8lBMVXZ4R") is None
    assert protocol.conversation.transcript("item_BaU77gURroD7wPnxSkMC8") == (
        "I'm sorry, I didn't catch that. How can I assist you today?"
    )
    assert protocol.conversation.transcript("item_BaU77Slsnn0R5n45bdlkP") == "Bye.\n"
    assert [(r.id, r.status) for r in protocol.responses.all()] == [
        ("resp_BaU74vyaswyzPWjZoJ6rY", "completed"),
        ("resp_BaU77uJHI9v4UKjkUkgyG", "completed"),
    ]
    assert protocol.can_create_response
    assert protocol.session is not None
    assert protocol.session.extra["temperature"] == 0.8
    final = protocol.conversation.get("item_BaU77gURroD7wPnxSkMC8")
    assert isinstance(final, MessageItem)
    assert final.status == "completed"
    assert isinstance(final.content[0], OutputAudio)  # beta "audio" content mapped


def test_beta_liusida_text_response_with_a_truncated_log() -> None:
    protocol, events = run(BETA_LIUSIDA, beta=True)
    assert sum(isinstance(e, ResponseOutputTextDelta) for e in events) == 77
    errors = [e for e in events if isinstance(e, ProtocolErrorEvent)]
    # The logger wrote "[Object]" for nested values: both events are reported, with the path...
    assert [e.event_type for e in errors] == ["response.output_item.done", "response.done"]
    assert "`$.response.output[0]`" in errors[1].message
    # ...and the unreadable response.done still ends its response, so the gate opens again.
    record = protocol.responses.get("resp_C1PSbsyhar4EpjNZg9fkB")
    assert record is not None
    assert record.status == "completed"
    assert protocol.can_create_response
    text = protocol.conversation.transcript("item_C1PSbur7hgTONg4H8lKhl")
    assert text is not None
    assert json.loads(text)["word"] == "pending"


def test_beta_decoder_passes_ga_frames_through() -> None:
    for frame in frames(GA_SIP_TURN):
        assert decode_beta_server_event(frame) == [decode_server_event(frame)]
