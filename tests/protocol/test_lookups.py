"""The protocol core's look-ups that keep a replay linear, checked against the scans they
replaced under seeded random sequences of server events and client creates:

* ``ConversationState.call_output``: the output answering a call (of several, the last in
  conversation order) — what the session's history shows on a function call;
* ``RealtimeProtocol.unacknowledged_item_creates``: cleared by item id on the item's
  announcement or deletion, by event id on an error (several creates of one item id included).
"""

from __future__ import annotations

import random

from voxwire.protocol import (
    ConversationState,
    FunctionCallItem,
    FunctionCallOutputItem,
    Item,
    RealtimeProtocol,
    user_message,
)

from .scenario import ScriptedServer, feed

CASES = 200


def scanned_output(state: ConversationState, call_id: str) -> FunctionCallOutputItem | None:
    """The scan ``call_output`` replaced: the last output with ``call_id`` in conversation order."""
    found = None
    for item in state.items():
        if isinstance(item, FunctionCallOutputItem) and item.call_id == call_id:
            found = item
    return found


def random_item(rng: random.Random, item_id: str, call_ids: list[str]) -> Item:
    kind = rng.choice(["output", "output", "call", "message"])
    call_id = rng.choice(call_ids)
    if kind == "output":
        return FunctionCallOutputItem(id=item_id, call_id=call_id, output=f"out {item_id}")
    if kind == "call":
        return FunctionCallItem(id=item_id, call_id=call_id, name="f", arguments="{}")
    return user_message(item_id, id=item_id)


def test_call_output_matches_the_scan_under_random_changes() -> None:
    checks = 0
    for seed in range(CASES):
        rng = random.Random(seed)
        state = ConversationState()
        call_ids = [f"call_{n}" for n in range(3)]
        ids = [f"i{n}" for n in range(8)]
        for _ in range(30):
            item_id = rng.choice(ids)
            action = rng.random()
            known = list(state.item_ids)
            if action < 0.45:  # added (a new item, or an id announced again with new content)
                previous = rng.choice([None, "root", "unknown", *known])
                state.item_added(random_item(rng, item_id, call_ids), previous)
            elif action < 0.6:
                state.item_done(random_item(rng, item_id, call_ids), rng.choice([None, *known]))
            elif action < 0.75:
                state.output_item(random_item(rng, item_id, call_ids), "resp_1")
            elif action < 0.9:
                state.item_deleted(item_id)
            else:
                state.item_truncated(item_id, 0, 10)
            for call_id in call_ids:
                assert state.call_output(call_id) == scanned_output(state, call_id), seed
                checks += 1
    print(f"call_output: {checks} look-ups matched the scan over {CASES} seeded sequences")


def test_several_outputs_of_one_call_give_the_last_in_conversation_order() -> None:
    state = ConversationState()
    state.item_added(FunctionCallItem(id="c", call_id="x", name="f", arguments="{}"), None)
    state.item_added(FunctionCallOutputItem(id="late", call_id="x", output="late"), "c")
    # Inserted before "late" although announced after it.
    state.item_added(FunctionCallOutputItem(id="early", call_id="x", output="early"), "c")
    assert state.item_ids == ("c", "early", "late")
    assert state.call_output("x") == FunctionCallOutputItem(id="late", call_id="x", output="late")
    state.item_deleted("late")
    assert state.call_output("x") == FunctionCallOutputItem(id="early", call_id="x", output="early")
    state.item_deleted("early")
    assert state.call_output("x") is None
    assert state.call_output("never") is None


def test_unacknowledged_creates_match_a_model_under_random_answers() -> None:
    checks = 0
    for seed in range(CASES):
        rng = random.Random(seed)
        server = ScriptedServer()
        protocol = RealtimeProtocol()
        model: dict[str, str] = {}  # event id -> item id, oldest first (the rules, spelled out)
        ids = [f"i{n}" for n in range(6)]
        for _ in range(40):
            action = rng.random()
            item_id = rng.choice(ids)
            if action < 0.45:  # a create; the same item id may be created twice
                create = protocol.send_item_create(user_message("x", id=item_id))
                assert create.event_id is not None
                model[create.event_id] = item_id
            elif action < 0.65:  # announced: every create of that item id is answered
                feed(protocol, server.item_added(item_id, None))
                model = {e: i for e, i in model.items() if i != item_id}
            elif action < 0.75:
                feed(protocol, server.deleted(item_id))
                model = {e: i for e, i in model.items() if i != item_id}
            elif model:  # an error naming one create, or naming none of them
                event_id = rng.choice([*model, "evt_unknown"])
                feed(protocol, server.error(event_id))
                model.pop(event_id, None)
            got = [(c.event_id, c.item.id) for c in protocol.unacknowledged_item_creates]
            assert got == list(model.items()), seed
            checks += 1
    print(f"unacknowledged creates: {checks} states matched the model over {CASES} sequences")
