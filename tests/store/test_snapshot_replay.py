"""The snapshot format and the replay integrity rules (pure: no store, no I/O)."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone
from typing import Any

import msgspec
import pytest

from tests.store.frames import assistant, call, output, user
from voxwire.exceptions import ConfigurationError, StoreVersionError
from voxwire.protocol.client_events import ConversationItemCreate
from voxwire.protocol.codec import encode_event
from voxwire.protocol.items import FunctionCallItem, Item
from voxwire.store import (
    SNAPSHOT_VERSION,
    AudioPolicy,
    ConversationRecorder,
    SessionSnapshot,
    StoredItem,
    UsageTotals,
    orphaned_call_ids,
    replay_items,
    wire_item,
)

T0 = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)


def stored(position: int, wire: dict[str, Any], **meta: Any) -> StoredItem:
    return StoredItem(id=wire["id"], position=position, wire=wire, **meta)


def snapshot(*items: StoredItem, **fields: Any) -> SessionSnapshot:
    return SessionSnapshot(conversation_id="c", created_at=T0, updated_at=T0, items=items, **fields)


def test_a_snapshot_round_trips_through_json() -> None:
    original = snapshot(
        stored(0, user("u", "hi", extra={"x": 1}), transcripts={0: "hi"}),
        stored(5, call("f", "call_1"), origin="model", response_id="r1", audio={0: b"\x00\x01"}),
        agent="triage",
        approvals={"call_1": call("f", "call_1")},
        outputs={"call_2": "", "call_3": {"a": [None, False]}},
        usage=UsageTotals(responses=2, total_tokens=7),
    )
    text = original.to_json()
    assert json.loads(text)["version"] == SNAPSHOT_VERSION
    assert SessionSnapshot.from_json(text) == original
    assert SessionSnapshot.from_json(text.encode()) == original


def test_a_snapshot_from_a_newer_voxwire_fails_clearly() -> None:
    data = json.loads(snapshot().to_json())
    data["version"] = SNAPSHOT_VERSION + 1
    data["something_new"] = True
    with pytest.raises(
        StoreVersionError,
        match=rf"version {SNAPSHOT_VERSION + 1} is newer.*up to version {SNAPSHOT_VERSION}.*"
        r"upgrade voxwire",
    ):
        SessionSnapshot.from_json(json.dumps(data))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "not a voxwire session snapshot"),
        ('{"conversation_id": "c"}', "not a voxwire session snapshot"),
        ('{"version": 1, "conversation_id": "c"}', "invalid session snapshot.*created_at"),
    ],
)
def test_text_that_is_not_a_snapshot_is_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        SessionSnapshot.from_json(text)


def test_a_snapshot_needs_aware_times_and_ordered_items() -> None:
    with pytest.raises(ConfigurationError, match=r"created_at.*no time zone"):
        SessionSnapshot(conversation_id="c", created_at=datetime(2025, 1, 1), updated_at=T0)
    with pytest.raises(ConfigurationError, match="ascending position"):
        snapshot(stored(5, user("a", "1")), stored(1, user("b", "2")))


def test_an_orphaned_model_call_is_dropped_and_nothing_else() -> None:
    items = (
        stored(0, user("u", "weather and stocks?")),
        stored(1, call("c1", "call_answered"), origin="model"),
        stored(2, output("o1", "call_answered", ""), origin="sdk"),  # "" is an output
        stored(3, call("c2", "call_orphan"), origin="model"),
        stored(4, call("c3", "call_approval"), origin="model"),
        stored(5, call("c4", "call_undelivered"), origin="model"),
        stored(6, call("c5", "call_by_caller")),  # created by the application: never dropped
        stored(7, {**call("c6", "x"), "call_id": None}, origin="model"),  # no call id at all
    )
    snap = snapshot(
        *items,
        approvals={"call_approval": call("c3", "call_approval")},
        outputs={"call_undelivered": ""},
    )
    assert orphaned_call_ids(snap) == {"call_orphan", "c6"}
    replay = replay_items(snap)
    assert [item.id for item in replay.items] == ["u", "c1", "o1", "c3", "c4", "c5"]
    assert set(replay.dropped) == {"c2", "c6"}
    assert "call_orphan" in replay.dropped["c2"]


def test_an_sdk_output_whose_call_is_gone_goes_too_but_a_callers_stays() -> None:
    # The application deleted the call item; the SDK's output for it would be refused by a
    # server that does not know the call. An output the caller wrote is the caller's business.
    snap = snapshot(
        stored(0, user("u", "hi")),
        stored(1, output("o_sdk", "call_deleted", "{}"), origin="sdk"),
        stored(2, output("o_caller", "call_elsewhere", "0")),
    )
    replay = replay_items(snap)
    assert [item.id for item in replay.items] == ["u", "o_caller"]
    assert list(replay.dropped) == ["o_sdk"]


def test_replayed_items_carry_the_wire_only() -> None:
    item = stored(
        0,
        {**call("c1", "call_1"), "provider_field": 1},
        origin="model",
        response_id="resp_1",
        transcripts={0: "sdk text"},
    )
    typed = wire_item(item)
    assert typed == FunctionCallItem(
        id="c1",
        object="realtime.item",
        status="completed",
        name="get_weather",
        arguments="{}",
        call_id="call_1",
    )
    sent = json.loads(encode_event(ConversationItemCreate(item=typed)))
    assert sent["item"]["call_id"] == "call_1"
    assert sent["item"]["id"] == "c1"
    text = json.dumps(sent)
    for sdk_only in ("origin", "resp_1", "sdk text", "transcripts", "provider_field"):
        assert sdk_only not in text


def test_bad_arguments_are_refused_with_what_to_do() -> None:
    with pytest.raises(ConfigurationError, match=r"max_bytes_per_item=0.*record=False"):
        AudioPolicy(record=True, max_bytes_per_item=0)
    recorder = ConversationRecorder("c", T0)
    with pytest.raises(ConfigurationError, match="has no call_id"):
        recorder.approval_pending(FunctionCallItem(id="x", name="pay", arguments="{}"))


def test_the_recorder_snapshot_is_what_session_state_returns() -> None:
    recorder = ConversationRecorder("c", T0)
    assert recorder.set_agent("triage")
    assert recorder.set_agent("triage") == []  # unchanged: nothing to write
    recorder.output_ready("call_1", False)
    state = recorder.snapshot(T0)
    assert state == snapshot(agent="triage", outputs={"call_1": False})
    assert msgspec.json.decode(state.to_json())["outputs"] == {"call_1": False}


def _wire_kinds() -> list[dict[str, Any]]:
    """One wire item of every kind ``Item`` holds, as stored (dicts, extra fields kept)."""
    return [
        user("u1", "hi", extra={"x": 1}),
        {**assistant("a1", "hello"), "content": [{"type": "output_audio", "transcript": "hi"}]},
        {
            "id": "u2",
            "type": "message",
            "role": "user",
            "content": [{"type": "input_audio", "audio": b"\x00\x01", "transcript": None}],
        },
        call("f", "call_1"),
        output("o1", "call_1", ""),
        {"id": "m1", "type": "mcp_approval_request", "name": "n", "arguments": "{}",
         "server_label": "s"},
        {"id": "m2", "type": "mcp_approval_response", "approval_request_id": "m1",
         "approve": False, "reason": "no"},
        {"id": "m3", "type": "mcp_list_tools", "server_label": "s",
         "tools": [{"name": "t", "input_schema": {"type": "object"}}]},
        {"id": "m4", "type": "mcp_call", "name": "t", "arguments": "{}", "server_label": "s",
         "error": {"type": "http_error", "code": 500, "message": "down"}},
    ]  # fmt: skip


def _mutations(wire: dict[str, Any], rng: random.Random) -> list[dict[str, Any]]:
    """``wire`` with one field deleted, nulled, given another type, or another ``type`` tag."""
    mutated: list[dict[str, Any]] = [wire]
    for key in wire:
        mutated.append({k: v for k, v in wire.items() if k != key})
        for value in (None, 7, "x", [], {}, True, rng.choice(["message", "function_call", "zz"])):
            mutated.append({**wire, key: value})
    return mutated


def test_wire_item_is_the_item_union_conversion_for_every_kind_and_mutation() -> None:
    """``wire_item`` converts to the one type the ``type`` tag names (quicker than to the
    union): on every kind of item and on mutated copies it gives what converting to ``Item``
    gives, or the same ``ValidationError``."""
    rng = random.Random(19)
    cases = 0
    for wire in _wire_kinds():
        for mutated in _mutations(wire, rng):
            item = stored(0, {"id": "x", **mutated})
            try:
                expected: Any = msgspec.convert(item.wire, Item)
            except msgspec.ValidationError as exc:
                expected = str(exc)
            try:
                got: Any = wire_item(item)
            except msgspec.ValidationError as exc:
                got = str(exc)
            assert got == expected, mutated
            cases += 1
    print(f"wire_item: {cases} wire forms converted as the Item union converts them")
