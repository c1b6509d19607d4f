"""The sans-I/O core of one Twilio Media Stream: Twilio's messages (from its "Media Streams -
WebSocket Messages" page) in, events out; marks, clear; and whatever arrives, it never raises
(fuzzed)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voxwire.exceptions import InvalidState
from voxwire.telephony.twilio import Played, StreamState, TwilioStream
from voxwire.telephony.twilio import messages as m

SID = "MZ" + "0" * 32

CONNECTED = {"event": "connected", "protocol": "Call", "version": "1.0.0"}
START = {
    "event": "start",
    "sequenceNumber": "1",
    "start": {
        "accountSid": "AC" + "1" * 32,
        "streamSid": SID,
        "callSid": "CA" + "2" * 32,
        "tracks": ["inbound"],
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
        "customParameters": {"FirstName": "Jane"},
    },
    "streamSid": SID,
}


def media(payload: bytes, chunk: int = 1) -> dict[str, Any]:
    body = {"track": "inbound", "chunk": str(chunk), "timestamp": str(20 * chunk), "payload": ""}
    body["payload"] = base64.b64encode(payload).decode()
    return {"event": "media", "sequenceNumber": str(chunk + 1), "media": body, "streamSid": SID}


def mark(name: str) -> dict[str, Any]:
    return {"event": "mark", "sequenceNumber": "9", "streamSid": SID, "mark": {"name": name}}


def started() -> TwilioStream:
    stream = TwilioStream()
    for message in (CONNECTED, START):
        stream.receive_text(json.dumps(message))
    stream.events_received()
    return stream


def test_a_call_from_connected_to_stop() -> None:
    stream = TwilioStream()
    stream.receive_text(json.dumps(CONNECTED))
    stream.receive_text(json.dumps(START))
    stream.receive_text(json.dumps(media(b"\xff" * 160)))
    dtmf = {"event": "dtmf", "streamSid": SID, "sequenceNumber": "5", "dtmf": {"digit": "1"}}
    stream.receive_text(json.dumps({**dtmf, "dtmf": {"track": "inbound_track", "digit": "1"}}))
    stop = {"event": "stop", "sequenceNumber": "6", "streamSid": SID, "stop": {"callSid": "CA1"}}
    stream.receive_text(json.dumps(stop))
    events = stream.events_received()
    assert [type(e) for e in events] == [
        m.Connected,
        m.StreamStarted,
        m.CallerAudio,
        m.Dtmf,
        m.StreamStopped,
    ]
    start = events[1]
    assert isinstance(start, m.StreamStarted)
    assert start.custom_parameters == {"FirstName": "Jane"}
    assert start.tracks == ("inbound",)
    assert events[2] == m.CallerAudio(b"\xff" * 160, 1, 20)
    assert stream.state is StreamState.STOPPED
    stream.receive_text(json.dumps(media(b"\x00")))
    assert isinstance(stream.events_received()[0], m.StreamError)  # after stop: ignored


def test_audio_goes_out_as_media_then_a_mark_and_the_mark_says_what_played() -> None:
    stream = started()
    stream.send_audio(b"\x01\x02", 320)
    stream.send_audio(b"\x03", 640)
    sent = [json.loads(x) for x in stream.data_to_send()]
    assert [x["event"] for x in sent] == ["media", "mark", "media", "mark"]
    assert all(x["streamSid"] == SID for x in sent)
    assert base64.b64decode(sent[0]["media"]["payload"]) == b"\x01\x02"
    assert set(sent[0]) == {"event", "streamSid", "media"}
    first, second = sent[1]["mark"]["name"], sent[3]["mark"]["name"]
    # The second mark coming back means both played (Twilio plays in order).
    stream.receive_text(json.dumps(mark(second)))
    assert stream.events_received() == [Played(second, 640)]
    assert stream.pending_marks == 0
    stream.receive_text(json.dumps(mark(first)))  # late and out of order: not ours any more
    assert isinstance(stream.events_received()[0], m.StreamError)


def test_marks_coming_back_after_a_clear_are_not_played() -> None:
    stream = started()
    for position in (320, 640, 960):
        stream.send_audio(b"\x00" * 320, position)
    names = [json.loads(x)["mark"]["name"] for x in stream.data_to_send()[1::2]]
    stream.receive_text(json.dumps(mark(names[0])))
    assert stream.events_received() == [Played(names[0], 320)]
    assert stream.send_clear()
    assert [json.loads(x) for x in stream.data_to_send()] == [{"event": "clear", "streamSid": SID}]
    for name in names[1:]:  # Twilio sends the pending marks back at the clear
        stream.receive_text(json.dumps(mark(name)))
    assert stream.events_received() == []
    assert stream.cleared_marks_returned == 2
    stream.send_audio(b"\x00", 961)
    new = json.loads(stream.data_to_send()[1])["mark"]["name"]
    assert new not in names
    stream.receive_text(json.dumps(mark(new)))
    assert stream.events_received() == [Played(new, 961)]


def test_out_of_order_and_foreign_messages_are_reported_not_raised() -> None:
    stream = TwilioStream()
    stream.receive_text(json.dumps(media(b"\x00")))  # before start
    with pytest.raises(InvalidState, match="awaiting_start"):
        stream.send_audio(b"\x00", 1)
    assert stream.send_clear() is False
    stream.receive_text(json.dumps(START))
    stream.receive_text(json.dumps(START))  # a second start
    stream.receive_text(json.dumps({**media(b"\x00"), "streamSid": "MZother"}))
    outbound = media(b"\x00")
    outbound["media"]["track"] = "outbound"
    stream.receive_text(json.dumps(outbound))
    stream.receive_text(json.dumps({"event": "transcription", "streamSid": SID}))
    stream.receive_text(json.dumps(mark("never-sent")))
    errors = [e.message for e in stream.events_received() if isinstance(e, m.StreamError)]
    assert len(errors) == 6
    assert "before start" in errors[0]
    assert "second start" in errors[1]
    assert "another stream" in errors[2]
    assert "'outbound' track" in errors[3]
    assert "unknown event 'transcription'" in errors[4]
    assert "did not send" in errors[5]


def test_a_format_other_than_mulaw_8k_mono_is_not_bridged() -> None:
    stream = TwilioStream()
    start = json.loads(json.dumps(START))
    start["start"]["mediaFormat"]["sampleRate"] = 16000
    stream.receive_text(json.dumps(start))
    (error,) = stream.events_received()
    assert isinstance(error, m.StreamError)
    assert "16000" in error.message
    assert stream.state is StreamState.AWAITING_START


@pytest.mark.parametrize(
    "text",
    [
        "",
        "null",
        "[]",
        "{",
        '{"event": 5}',
        '{"event": "media"}',
        '{"event": "media", "media": {"payload": "not base64!"}}',
        '{"event": "media", "media": {"payload": 7}}',
        '{"event": "start", "start": {}}',
        '{"event": "dtmf", "dtmf": {"digit": ""}}',
        '{"event": "mark", "mark": {}}',
        "[" * 100_000,
        "x" * (m.MAX_MESSAGE_CHARS + 1),
        b"\xff\xfe\x00",
    ],
)
def test_malformed_messages_are_errors(text: str | bytes) -> None:
    stream = started()
    stream.receive_text(text)
    (event,) = stream.events_received()
    assert isinstance(event, m.StreamError)
    assert stream.state is StreamState.STREAMING


EVENT_TYPES = (
    m.Connected,
    m.StreamStarted,
    m.CallerAudio,
    m.Dtmf,
    Played,
    m.StreamStopped,
    m.StreamError,
)

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_events = st.sampled_from(["connected", "start", "media", "mark", "dtmf", "stop", "clear", "x"])


@st.composite
def messages(draw: st.DrawFn) -> str | bytes:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.binary(max_size=64))
    if kind == 1:
        return draw(st.text(max_size=64))
    body = draw(st.dictionaries(st.sampled_from(["media", "start", "mark", "dtmf", "stop"]), _json))
    body["event"] = draw(_events)
    if draw(st.booleans()):
        body["streamSid"] = draw(st.sampled_from([SID, "MZx", 3]))
    return json.dumps(body)


@settings(max_examples=200, deadline=None)
@given(st.lists(messages(), max_size=12), st.booleans())
def test_any_sequence_of_messages_never_raises(texts: list[str | bytes], start_first: bool) -> None:
    stream = started() if start_first else TwilioStream()
    for text in texts:
        stream.receive_text(text)
        for event in stream.events_received():
            assert isinstance(event, EVENT_TYPES)
        if stream.state is StreamState.STREAMING:
            stream.send_audio(b"\x00", 1)
            stream.data_to_send()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["send", "clear", "echo"]), st.integers(0, 50))))
def test_played_positions_only_grow_and_never_count_cleared_audio(
    steps: list[tuple[str, int]],
) -> None:
    """Marks come back in any order, late, twice, or after a clear: a Played is reported only
    for a mark sent after the last clear, and positions never go back."""
    stream = started()
    sent: list[tuple[str, int]] = []
    cleared: set[str] = set()
    position, last_played = 0, 0
    for action, pick in steps:
        if action == "send":
            position += 160
            stream.send_audio(b"\x00" * 160, position)
            sent.append((json.loads(stream.data_to_send()[1])["mark"]["name"], position))
        elif action == "clear":
            stream.send_clear()
            stream.data_to_send()
            cleared |= {name for name, _ in sent}
        elif sent:
            name, _ = sent[pick % len(sent)]
            stream.receive_text(json.dumps(mark(name)))
        for event in stream.events_received():
            if isinstance(event, Played):
                assert event.mark not in cleared
                assert event.position >= last_played
                last_played = event.position
            else:
                assert isinstance(event, m.StreamError)
