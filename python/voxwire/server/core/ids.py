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
# Random bytes to letters and digits without bias: a byte below 248 (4 x 62) is kept as
# ``_ALPHABET[byte % 62]``, a byte from 248 up is dropped. Bytes are drawn 4 KiB at a time and
# cut into ids: one ``os.urandom`` call per ~190 ids, not 21 per id (a replay of thousands of
# items makes two event ids per item).
_KEPT: Final = 4 * len(_ALPHABET)
_TO_CHARS: Final = bytes(ord(_ALPHABET[b % len(_ALPHABET)]) if b < _KEPT else 0 for b in range(256))
_DROPPED: Final = bytes(range(_KEPT, 256))
_DRAW: Final = 4096


class ServerIds:
    """Makes fresh ids; ``seed=None`` draws from the operating system's randomness."""

    def __init__(self, seed: int | None = None) -> None:
        self._random = random.Random(seed) if seed is not None else random.SystemRandom()
        self._chars = ""  # drawn, not used yet
        self._used = 0

    def _make(self, prefix: str) -> str:
        end = self._used + _ID_CHARS
        if end > len(self._chars):
            drawn = self._random.randbytes(_DRAW).translate(_TO_CHARS, _DROPPED)
            self._chars = self._chars[self._used :] + drawn.decode("ascii")
            self._used, end = 0, _ID_CHARS
        made = self._chars[self._used : end]
        self._used = end
        return prefix + made

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
