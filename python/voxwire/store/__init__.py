"""Persistence: conversations stored as the server confirms them, and session snapshots.

* :class:`ConversationStore` — the interface; :class:`SQLiteStore` (stdlib sqlite3, one file,
  the default) and :class:`PostgresStore` (``pip install "voxwire[postgres]"``). ``PostgresStore``
  is imported on first use (``from voxwire.store import PostgresStore``, or from
  ``voxwire.store.postgres``), so psycopg is needed only by those who use it.
* :class:`ConversationRecorder` — sans-I/O: server events in, :mod:`store operations
  <voxwire.store.ops>` out, so a session only forwards what it receives.
* :class:`SessionSnapshot` — the versioned JSON form of a conversation and its session state.
* :class:`Lease`, :class:`HeldConversation` — one live writer per conversation, with a fencing
  token (:mod:`voxwire.store.lease`).
* :func:`replay_items`, :func:`conversation_state`, :func:`wire_item` — item integrity on replay.

docs/persistence.md describes the API, the schema and the snapshot format.
"""

from typing import TYPE_CHECKING, Any

from voxwire.store.base import ConversationInfo, ConversationStore
from voxwire.store.lease import DEFAULT_LEASE_TTL_S, HeldConversation, Lease
from voxwire.store.ops import (
    DeleteItem,
    DropApproval,
    DropOutput,
    MoveItems,
    PutApproval,
    PutItem,
    PutOutput,
    SetAgent,
    SetUsage,
    StoreOp,
)
from voxwire.store.recorder import POSITION_GAP, AudioPolicy, ConversationRecorder
from voxwire.store.replay import (
    Replay,
    conversation_state,
    orphaned_call_ids,
    replay_items,
    wire_item,
)
from voxwire.store.snapshot import (
    SNAPSHOT_VERSION,
    Origin,
    SessionSnapshot,
    StoredItem,
    UsageTotals,
)
from voxwire.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from voxwire.store.postgres import PostgresStore

__all__ = [
    "DEFAULT_LEASE_TTL_S",
    "POSITION_GAP",
    "SNAPSHOT_VERSION",
    "AudioPolicy",
    "ConversationInfo",
    "ConversationRecorder",
    "ConversationStore",
    "DeleteItem",
    "DropApproval",
    "DropOutput",
    "HeldConversation",
    "Lease",
    "MoveItems",
    "Origin",
    "PostgresStore",
    "PutApproval",
    "PutItem",
    "PutOutput",
    "Replay",
    "SQLiteStore",
    "SessionSnapshot",
    "SetAgent",
    "SetUsage",
    "StoreOp",
    "StoredItem",
    "UsageTotals",
    "conversation_state",
    "orphaned_call_ids",
    "replay_items",
    "wire_item",
]


def __getattr__(name: str) -> Any:
    """``PostgresStore`` on first use: psycopg is imported only by those who use it."""
    if name == "PostgresStore":
        try:
            from voxwire.store.postgres import PostgresStore
        except ImportError as exc:
            raise ImportError(
                f"PostgresStore needs psycopg 3 and psycopg-pool: pip install "
                f"'voxwire[postgres]' ({exc})"
            ) from exc
        return PostgresStore
    raise AttributeError(f"module 'voxwire.store' has no attribute {name!r}")
