"""Hostile frames, one kind at a time: each becomes a protocol error event that says what was
wrong, never an exception, and the bounds of ``voxwire.protocol.limits`` hold. (The seeded
mutation fuzz of the recorded traces is ``tests/fuzz``.)"""

from __future__ import annotations

import base64
import json

import pytest

from voxwire.protocol import (
    GateState,
    ProtocolErrorEvent,
    RealtimeProtocol,
    ResponseOutputAudioDelta,
    SessionCreated,
    decode_beta_server_event,
    decode_client_event,
    decode_server_event,
    parse_object,
    raw_fields,
    server_event_from_mapping,
)
from voxwire.protocol import protocol as protocol_module
from voxwire.protocol.beta import beta_dialect
from voxwire.protocol.codec import short_repr
from voxwire.protocol.limits import (
    MAX_DEPTH,
    MAX_FRAME_BYTES,
    MAX_VALUES,
    frame_problem,
    read_json,
    shape_problem,
)
from voxwire.protocol.state import HANDLERS, INTERNAL_ERROR_PREFIX

from .scenario import ScriptedServer, feed


def nested(depth: int) -> str:
    """JSON nested ``depth`` levels, objects and arrays by turns."""
    opening = "".join("[" if i % 2 else '{"a":' for i in range(depth))
    return opening + "1" + "".join("]" if i % 2 else "}" for i in reversed(range(depth)))


def session_created_with(extra: str) -> str:
    return (
        '{"type":"session.created","event_id":"ev_1","session":'
        '{"type":"realtime","id":"sess_1","extra_field":' + extra + "}}"
    )


# --- bounds ---------------------------------------------------------------------------------------


def test_nesting_is_counted_outside_strings_only() -> None:
    assert shape_problem(nested(MAX_DEPTH)) is None
    assert "deeper than 64 levels" in (shape_problem(nested(MAX_DEPTH + 1)) or "")
    assert shape_problem('{"a":"[[[[\\"{{{{","b":[1,2,{"c":"\\\\"}]}') is None
    # Past the quick count (brackets inside strings count there), the exact check clears it.
    assert shape_problem('{"a":"' + '[\\"{' * 100 + '","b":[1,2]}') is None
    assert shape_problem(b'{"a":' + b"[" * 100 + b"]" * 100 + b"}") is not None


def test_values_are_bounded() -> None:
    many = "[" + ",".join(["0"] * (MAX_VALUES + 1)) + "]"
    assert "more than 100,000 values" in (shape_problem(many) or "")
    assert shape_problem("[" + ",".join(["0"] * 1000) + "]") is None


def test_frames_are_text_of_bounded_size() -> None:
    assert frame_problem("{}") is None
    assert "not text" in (frame_problem(42) or "")
    over = "x" * (MAX_FRAME_BYTES + 1)
    assert "over the 33,554,432-byte bound" in (frame_problem(over) or "")
    assert "bytes is over" in (frame_problem(over.encode()) or "")


@pytest.mark.parametrize(
    ("frame", "says"),
    [
        (b'{"type":"error","event_id":"\xff"}', "not UTF-8 text (byte 28 is not)"),
        ('{"type":"error","event_id":"\ud800"}', "character 28 is a lone surrogate"),
        (b"\x00\x01\xfe binary", "not UTF-8 text (byte 2 is not): a binary frame?"),
        (b"\x00\x01 binary but ASCII", "not valid JSON"),
        ("x" * (MAX_FRAME_BYTES + 1), "over the"),
        (nested(5_000), "deeper than 64 levels"),  # beyond the interpreter's recursion limit
        ('{"type":"rate_limits.updated","x":' + nested(200) + "}", "deeper than 64 levels"),
        ("[" + ",".join(["1"] * (MAX_VALUES + 1)) + "]", "more than 100,000 values"),
        ('{"type":"x","a":' + "9" * 5000 + "}", "not valid JSON"),
    ],
)
def test_unreadable_frames_become_protocol_errors(frame: str | bytes, says: str) -> None:
    for decode in (decode_server_event, decode_client_event):
        event = decode(frame)
        assert isinstance(event, ProtocolErrorEvent)
        assert says in event.message
    assert isinstance(parse_object(frame), ProtocolErrorEvent)
    beta = decode_beta_server_event(frame)
    assert isinstance(beta[0], ProtocolErrorEvent)


def test_a_frame_that_is_not_text_at_all_is_reported() -> None:
    bad: object = 12
    event = decode_server_event(bad)  # type: ignore[arg-type]
    assert isinstance(event, ProtocolErrorEvent)
    assert "frame is int, not text" in event.message
    client = decode_client_event(None)  # type: ignore[arg-type]
    assert isinstance(client, ProtocolErrorEvent)


def test_bytearray_and_memoryview_frames_are_read() -> None:
    frame = b'{"type":"input_audio_buffer.cleared","event_id":"ev_9"}'
    for data in (bytearray(frame), memoryview(frame)):
        assert decode_server_event(data).type == "input_audio_buffer.cleared"  # type: ignore[arg-type]
        assert raw_fields(decode_server_event(data)) == json.loads(frame)  # type: ignore[arg-type]
        assert isinstance(parse_object(data), dict)  # type: ignore[arg-type]
        client = decode_client_event(bytearray(b'{"type":"input_audio_buffer.clear"}'))  # type: ignore[arg-type]
        assert client.type == "input_audio_buffer.clear"


def test_free_form_json_over_the_bound_is_refused_with_what_could_be_read() -> None:
    event = decode_server_event(session_created_with(nested(100)))
    assert isinstance(event, ProtocolErrorEvent)
    assert event.message.startswith("session.created frame nests deeper than 64 levels")
    assert (event.event_type, event.event_id) == ("session.created", "ev_1")
    assert event.raw == {"type": "session.created", "event_id": "ev_1"}
    assert isinstance(decode_server_event(session_created_with(nested(10))), SessionCreated)


def test_a_response_done_over_the_bound_still_ends_its_response() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.session_created())
    protocol.send_response_create()
    feed(protocol, server.response_created("resp_1"))
    assert protocol.gate_state is GateState.ACTIVE
    done = json.loads(server.response_done("resp_1"))
    done["response"]["output"] = [{"type": "mcp_list_tools", "server_label": "s", "tools": []}]
    done["response"]["output"][0]["tools"] = [{"name": "t", "input_schema": json.loads(nested(80))}]
    events = feed(protocol, json.dumps(done))
    assert isinstance(events[0], ProtocolErrorEvent)
    assert events[0].raw is not None
    assert events[0].raw["response"]["id"] == "resp_1"
    assert "output" not in events[0].raw["response"] or events[0].raw["response"]["output"] == []
    assert protocol.gate_state is GateState.IDLE
    assert protocol.responses.get("resp_1").status == "completed"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("kind", "holder"),
    [("session.update", "session"), ("response.create", "response")],
)
def test_client_tools_over_the_bound_are_refused_on_the_server_side(kind: str, holder: str) -> None:
    tools = '[{"type":"function","name":"f","parameters":' + nested(70) + "}]"
    frame = f'{{"type":"{kind}","event_id":"c1","{holder}":{{"tools":{tools}}}}}'
    event = decode_client_event(frame)
    assert isinstance(event, ProtocolErrorEvent)
    assert (event.event_type, event.event_id) == (kind, "c1")
    assert "deeper than 64 levels" in event.message
    assert not isinstance(decode_client_event(frame.replace(nested(70), nested(5))), type(event))


# --- wrong types ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [[{"type": {"a": 1}, "text": "x"}], [{"type": ["audio"]}], 7, {"type": "text"}, [3, None]],
)
def test_assistant_content_of_the_wrong_type_is_reported_not_raised(content: object) -> None:
    frame = json.dumps(
        {
            "type": "response.output_item.added",
            "event_id": "ev_1",
            "response_id": "resp_1",
            "output_index": 0,
            "item": {"id": "it", "type": "message", "role": "assistant", "content": content},
        }
    )
    for protocol in (RealtimeProtocol(beta=False), RealtimeProtocol(beta=True)):
        events = feed(protocol, frame)
        assert isinstance(events[0], ProtocolErrorEvent)
        assert events[0].event_type == "response.output_item.added"


def test_an_event_type_that_is_not_text_is_reported() -> None:
    for kind in ({"a": 1}, ["session.created"], 3, None):
        raw = {"type": kind, "event_id": "e"}
        event = server_event_from_mapping(raw)
        assert isinstance(event, ProtocolErrorEvent)
        assert "no string 'type'" in event.message
        client = decode_client_event(json.dumps(raw))
        assert isinstance(client, ProtocolErrorEvent)
        assert client.event_type is None
        assert client.event_id == "e"
        assert beta_dialect(raw) is None


def test_a_session_whose_format_type_is_an_object_is_reported() -> None:
    frame = session_created_with("1").replace(
        '"extra_field":1', '"audio":{"input":{"format":{"type":{"a":1}}}}'
    )
    event = decode_server_event(frame)
    assert isinstance(event, ProtocolErrorEvent)
    assert "audio.input.format.type" in event.message


def test_long_values_are_cut_in_messages() -> None:
    assert short_repr("x" * 10) == "'xxxxxxxxxx'"
    assert short_repr("x" * 500).endswith("...")
    assert len(short_repr(list(range(1000)))) == 80


# --- audio ----------------------------------------------------------------------------------------


def test_an_odd_length_pcm16_delta_is_reported_and_its_whole_samples_kept() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    feed(protocol, server.session_created(), server.response_created("resp_1"))
    events = feed(protocol, server.audio_delta("resp_1", "item_1", 1001))
    error, delta = events
    assert isinstance(error, ProtocolErrorEvent)
    assert error.event_type == "response.output_audio.delta"
    assert "holds 1001 bytes, not whole 2-byte samples" in error.message
    assert isinstance(delta, ResponseOutputAudioDelta)
    assert len(delta.delta) == 1000
    assert raw_fields(delta) is not None  # still tied to its frame
    assert protocol.audio_received_samples("item_1") == 500
    feed(protocol, server.audio_delta("resp_1", "item_1", 1001))
    assert protocol.audio_received_samples("item_1") == 1000  # not 1001: no half samples


def test_g711_deltas_have_one_byte_samples() -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()
    g711 = {"audio": {"output": {"format": {"type": "audio/pcmu"}}}}
    feed(protocol, server.session_created(**g711), server.response_created("resp_1"))
    events = feed(protocol, server.audio_delta("resp_1", "item_1", 161))
    assert [type(e) for e in events] == [ResponseOutputAudioDelta]
    assert protocol.audio_received_samples("item_1") == 161


def test_base64_garbage_is_reported() -> None:
    server = ScriptedServer()
    part = {"response_id": "r", "item_id": "i", "output_index": 0, "content_index": 0}
    for delta in ("!!!!", "abc", "a===", 12, None):
        frame = server.frame("response.output_audio.delta", delta=delta, **part)
        events = feed(RealtimeProtocol(), frame)
        assert isinstance(events[0], ProtocolErrorEvent), delta
    ok = base64.b64encode(b"\x00\x01").decode()
    fixed = server.frame("response.output_audio.delta", delta=ok, **part)
    assert isinstance(decode_server_event(fixed), ResponseOutputAudioDelta)


# --- the last resort ------------------------------------------------------------------------------


def test_a_failing_state_handler_is_reported_and_the_session_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = ScriptedServer()
    protocol = RealtimeProtocol()

    def broken(state: object, event: object) -> bool:
        raise KeyError("boom")

    monkeypatch.setitem(HANDLERS, SessionCreated, broken)
    events = feed(protocol, server.session_created())
    assert isinstance(events[0], ProtocolErrorEvent)
    assert events[0].message.startswith(INTERNAL_ERROR_PREFIX)
    assert events[0].event_type == "session.created"
    monkeypatch.undo()
    assert isinstance(feed(protocol, server.session_created())[0], SessionCreated)


def test_a_failing_decoder_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(data: object) -> object:
        raise ValueError("boom")

    monkeypatch.setattr(protocol_module, "decode_server_event", broken)
    events = feed(RealtimeProtocol(beta=False), "{}")
    assert isinstance(events[0], ProtocolErrorEvent)
    assert events[0].message == f"{INTERNAL_ERROR_PREFIX} ValueError: boom"
    assert events[0].event_type is None


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b'{"a": 1', "truncated"),
        (b"[1, 2,]", "malformed"),
        ("\ud800", "surrogate"),  # a str with a lone surrogate: not encodable
        (b"\xff\xfe", "UTF-8"),
        (b"[" * 100 + b"]" * 100, "deeper"),
    ],
)
def test_read_json_names_the_problem_and_never_raises(data: str | bytes, problem: str) -> None:
    value, found = read_json(data)
    assert value is None
    assert found is not None
    assert problem.lower() in found.lower()


def test_read_json_reads_json_within_the_bounds() -> None:
    assert read_json(b'{"a": [1, "b"]}') == ({"a": [1, "b"]}, None)
    assert read_json('"text"') == ("text", None)
