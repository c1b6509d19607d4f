"""Identifiers for client events and client-created items.

The protocol core takes no randomness: ids come from an injectable factory. The default is a
deterministic counter, which keeps tests and recorded sessions reproducible. An application that
runs several sessions against one conversation store can pass a factory that adds a session
prefix or a UUID.

The GA reference says client ``event_id`` values are free-form and that client-created item ids
may be up to 32 characters; ``CounterIds`` stays far below that.
"""

from __future__ import annotations

from typing import Literal, Protocol

from voxwire.exceptions import ConfigurationError

__all__ = ["CounterIds", "IdFactory", "IdKind"]

#: What an id is for: a client event's ``event_id`` or a client-created item's ``id``.
IdKind = Literal["event", "item"]

_MAX_PREFIX_CHARS = 12


class IdFactory(Protocol):
    """Returns a fresh id for ``kind``; must never return the same id twice for one kind."""

    def __call__(self, kind: IdKind) -> str: ...


class CounterIds:
    """Deterministic ids: ``vx_evt_1``, ``vx_evt_2``, … and ``vx_item_1``, … per kind."""

    def __init__(self, prefix: str = "vx") -> None:
        if not prefix or len(prefix) > _MAX_PREFIX_CHARS or not prefix.isidentifier():
            raise ConfigurationError(
                f"id prefix must be 1..{_MAX_PREFIX_CHARS} identifier characters, got {prefix!r}"
            )
        self._prefix = prefix
        self._counts: dict[str, int] = {"event": 0, "item": 0}

    def __call__(self, kind: IdKind) -> str:
        self._counts[kind] += 1
        short = "evt" if kind == "event" else "item"
        return f"{self._prefix}_{short}_{self._counts[kind]}"
