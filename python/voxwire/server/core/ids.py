"""Server-made identifiers: ``event_…``, ``item_…``, ``resp_…``, ``sess_…``, ``conv_…``, ``call_…``.

The real service uses a prefix and 21 random letters and digits (``event_Ct1OVqJmiaDhg4nkh3JWr``);
these ids have the same shape so that clients which log, store or pattern-match them see what they
will see in production. A seed makes a server's ids reproducible (tests, recorded sessions).
"""

from __future__ import annotations

import random
import string
from typing import Final

__all__ = ["ServerIds"]

_ALPHABET: Final = string.ascii_letters + string.digits
_ID_CHARS: Final = 21


class ServerIds:
    """Makes fresh ids; ``seed=None`` draws from the operating system's randomness."""

    def __init__(self, seed: int | None = None) -> None:
        self._random = random.Random(seed) if seed is not None else random.SystemRandom()

    def _make(self, prefix: str) -> str:
        return prefix + "".join(self._random.choices(_ALPHABET, k=_ID_CHARS))

    def event(self) -> str:
        return self._make("event_")

    def item(self) -> str:
        return self._make("item_")

    def response(self) -> str:
        return self._make("resp_")

    def session(self) -> str:
        return self._make("sess_")

    def conversation(self) -> str:
        return self._make("conv_")

    def call(self) -> str:
        return self._make("call_")
