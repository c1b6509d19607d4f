"""What ``ConversationState`` keeps in memory: ``max_items`` (``max_history_items``) forgets
the oldest items (an item inserted before them goes with them), a call's output stays found
among what is kept, and the bookkeeping of out-of-band responses and deletions is bounded."""

from __future__ import annotations

import pytest

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import ConversationState, FunctionCallOutputItem, user_message
from voxwire.protocol.conversation import MIN_HISTORY_ITEMS


@pytest.mark.parametrize("bound", [MIN_HISTORY_ITEMS - 1, 0, True, 8.0, "8"])
def test_a_bound_too_small_or_not_an_int_is_refused(bound: object) -> None:
    with pytest.raises(ConfigurationError, match="max_history_items"):
        ConversationState(bound)  # type: ignore[arg-type]


def test_the_oldest_items_are_forgotten_past_the_bound() -> None:
    conversation = ConversationState(MIN_HISTORY_ITEMS)
    assert conversation.max_items == MIN_HISTORY_ITEMS
    previous = None
    for n in range(MIN_HISTORY_ITEMS + 3):
        conversation.item_added(user_message(f"m{n}", id=f"i{n}"), previous)
        previous = f"i{n}"
    assert conversation.forgotten == 3
    assert conversation.item_ids == tuple(f"i{n}" for n in range(3, MIN_HISTORY_ITEMS + 3))
    # An item placed at the very start belongs before the forgotten ones: forgotten too.
    conversation.item_added(user_message("early", id="early"), None)
    assert "early" not in conversation
    assert conversation.forgotten == 4
    assert len(conversation) == MIN_HISTORY_ITEMS


def test_a_forgotten_output_is_no_longer_found_and_a_kept_one_is() -> None:
    conversation = ConversationState(MIN_HISTORY_ITEMS)
    first = FunctionCallOutputItem(id="out0", call_id="c0", output="{}")
    conversation.item_added(first, None)
    assert conversation.call_output("c0") == first
    previous = "out0"
    for n in range(MIN_HISTORY_ITEMS):
        conversation.item_added(user_message(f"m{n}", id=f"i{n}"), previous)
        previous = f"i{n}"
    assert "out0" not in conversation
    assert conversation.call_output("c0") is None
    later = FunctionCallOutputItem(id="out1", call_id="c1", output="{}")
    conversation.item_added(later, previous)
    assert conversation.call_output("c1") == later


def test_out_of_band_responses_are_remembered_only_recently() -> None:
    conversation = ConversationState()
    for n in range(1000):  # items of responses that write to no conversation: never added
        conversation.output_item(user_message("x", id=f"oob{n}"), f"resp{n}")
    assert conversation.response_of("oob999") == "resp999"
    assert conversation.response_of("oob0") is None


def test_deletions_are_remembered_only_recently() -> None:
    conversation = ConversationState()
    for n in range(1000):
        conversation.item_added(user_message("x", id=f"d{n}"), None)
        conversation.item_deleted(f"d{n}")
    assert conversation.is_deleted("d999")
    assert not conversation.is_deleted("d0")
    assert len(conversation) == 0
