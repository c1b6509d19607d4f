"""The local server's look-ups that keep a replay of n items linear, checked against what they
replaced: ``ServerConversation.function_call`` (the call a function output answers) against a
scan, under seeded random inserts, replacements, truncations and deletions; ``ServerIds`` (one
random draw per id) for the shape, the alphabet, its spread and seeded reproducibility."""

from __future__ import annotations

import collections
import random
import re
import string

import pytest

from voxwire.protocol import (
    FunctionCallItem,
    FunctionCallOutputItem,
    Item,
    MessageItem,
    OutputAudio,
    user_message,
)
from voxwire.protocol.units import PCM16_24K
from voxwire.server.core.conversation import ServerConversation
from voxwire.server.core.errors import ServerError
from voxwire.server.core.ids import ServerIds

CASES = 200


def scanned_call(conversation: ServerConversation, call_id: str) -> FunctionCallItem | None:
    """The scan ``function_call`` replaced: the first call with ``call_id``, in the order the
    items were first inserted (their dict order)."""
    for item in conversation._items.values():
        if isinstance(item, FunctionCallItem) and item.call_id == call_id:
            return item
    return None


def random_item(rng: random.Random, item_id: str, call_ids: list[str]) -> Item:
    kind = rng.choice(["call", "call", "output", "message", "audio"])
    call_id = rng.choice(call_ids)
    if kind == "call":
        return FunctionCallItem(id=item_id, call_id=call_id, name="f", arguments="{}")
    if kind == "output":
        return FunctionCallOutputItem(id=item_id, call_id=call_id, output="{}")
    if kind == "audio":
        return MessageItem(id=item_id, role="assistant", content=[OutputAudio(transcript="hi")])
    return user_message(item_id, id=item_id)


def test_function_call_matches_the_scan_under_random_changes() -> None:
    checks = 0
    for seed in range(CASES):
        rng = random.Random(seed)
        conversation = ServerConversation()
        call_ids = [f"call_{n}" for n in range(3)]
        ids = [f"i{n}" for n in range(8)]
        for _ in range(30):
            item_id = rng.choice(ids)
            action = rng.random()
            present = item_id in conversation
            try:
                if action < 0.5 and not present:
                    previous = rng.choice([None, "root", *conversation._order])
                    conversation.insert(random_item(rng, item_id, call_ids), previous)
                elif action < 0.7 and present:  # a response finishing an item: same id
                    conversation.replace(random_item(rng, item_id, call_ids))
                elif action < 0.8 and present:
                    conversation.set_audio(item_id, 0, b"\0\0" * 2400, PCM16_24K)
                    conversation.truncate(item_id, 0, 50)
                elif present:
                    conversation.delete(item_id)
            except ServerError:
                pass  # truncating what is not assistant audio: refused, nothing changed
            for call_id in [*call_ids, "call_never"]:
                assert conversation.function_call(call_id) == scanned_call(conversation, call_id)
                checks += 1
    print(f"function_call: {checks} look-ups matched the scan over {CASES} seeded sequences")


def test_an_output_needs_its_call_even_after_the_call_was_deleted() -> None:
    conversation = ServerConversation()
    call = FunctionCallItem(id="c1", call_id="x", name="f", arguments="{}")
    conversation.insert(call, None)
    output = FunctionCallOutputItem(id="o1", call_id="x", output="{}")
    conversation.check_function_output(output)
    conversation.delete("c1")
    with pytest.raises(ServerError) as refused:
        conversation.check_function_output(output)
    assert refused.value.code == "invalid_tool_call_id"
    again = FunctionCallItem(id="c2", call_id="x", name="f", arguments="{}")
    conversation.insert(again, "root")
    assert conversation.function_call("x") == again


def test_appending_after_the_last_item_and_inserting_mid_conversation() -> None:
    conversation = ServerConversation()
    for n in range(5):
        before = conversation.insert(user_message(str(n), id=f"m{n}"), conversation.last_id)
        assert before == (f"m{n - 1}" if n else None)
    assert conversation.insert(user_message("x", id="mid"), "m1") == "m1"
    assert conversation.insert(user_message("y", id="end"), None) == "m4"
    assert [item.id for item in conversation.items()] == [
        "m0", "m1", "mid", "m2", "m3", "m4", "end"
    ]  # fmt: skip


ID = re.compile(r"^(event|item|resp|sess|conv|call)_[A-Za-z0-9]{21}$")


def test_ids_have_the_services_shape_and_spread_evenly() -> None:
    ids = ServerIds()
    made = [ids.event(), ids.item(), ids.response(), ids.session(), ids.conversation(), ids.call()]
    assert all(ID.match(made_id) for made_id in made), made
    drawn = [ids.event()[len("event_") :] for _ in range(20_000)]
    assert len(set(drawn)) == len(drawn)
    counts = collections.Counter("".join(drawn))
    alphabet = string.ascii_letters + string.digits
    assert set(counts) == set(alphabet)
    expected = 20_000 * 21 / len(alphabet)  # 6,774 per character; standard deviation ~82
    assert all(abs(count - expected) < 600 for count in counts.values()), counts


def test_a_seed_makes_the_same_ids() -> None:
    first, second = ServerIds(seed=7), ServerIds(seed=7)
    assert [first.event() for _ in range(50)] == [second.event() for _ in range(50)]
    assert ServerIds(seed=8).event() != ServerIds(seed=7).event()
