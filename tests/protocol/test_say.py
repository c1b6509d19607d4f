"""The say() convention: instructions that ask for a text verbatim, and their recognition."""

from __future__ import annotations

import pytest

from voxwire.protocol import parse_say_instructions, say_instructions


@pytest.mark.parametrize(
    "text", ["Hello.", 'She said """hi""" twice.', "Line one.\nLine two.", "  padded  "]
)
def test_say_instructions_round_trip(text: str) -> None:
    instructions = say_instructions(text)
    assert text in instructions
    assert parse_say_instructions(instructions) == text


def test_other_instructions_are_not_say() -> None:
    assert parse_say_instructions("Be brief.") is None
    assert parse_say_instructions(say_instructions("x") + " And then sing.") is None


@pytest.mark.parametrize("bad", ["", "   ", None, 3])
def test_say_needs_text(bad: object) -> None:
    with pytest.raises(ValueError, match="say\\(\\) needs text"):
        say_instructions(bad)  # type: ignore[arg-type]
