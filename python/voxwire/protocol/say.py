"""The instructions behind ``RealtimeSession.say()``: speak this text, word for word.

The Realtime protocol has no "say this" request; a response is asked to speak a text verbatim
through its per-response ``instructions``. The wording lives here, in one place, because both
sides use it: the client session writes it, and the local server's rules responder recognises it
(a language model simply follows it).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["parse_say_instructions", "say_instructions"]

_LEAD: Final = (
    "Say exactly the text between the triple quotes below, word for word, in the conversation's "
    "voice and language, and nothing else: no greeting, no comment, no tool call."
)
_PATTERN: Final = re.compile(re.escape(_LEAD) + r'\n"""\n(.*)\n"""', re.DOTALL)


def say_instructions(text: str) -> str:
    """Response instructions asking for ``text`` to be spoken verbatim."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"say() needs text to speak (got {text!r})")
    return f'{_LEAD}\n"""\n{text}\n"""'


def parse_say_instructions(instructions: str) -> str | None:
    """The text of :func:`say_instructions`, or ``None`` for any other instructions."""
    match = _PATTERN.fullmatch(instructions)
    return match.group(1) if match is not None else None
