"""Persistence: conversations stored as the server confirms them, and session snapshots.

* :class:`ConversationStore` — the interface; :class:`SQLiteStore` (stdlib sqlite3, one file,
  the default) here, ``voxwire.store.postgres.PostgresStore`` with ``pip install
  "voxwire[postgres]"`` (imported from its module, so psycopg is needed only by those who use it).
* :class:`ConversationRecorder` — sans-I/O: server events in, :mod:`store operations
  <voxwire.store.ops>` out, so a session only forwards what it receives.
* :class:`SessionSnapshot` — the versioned JSON form of a conversation and its session state.
* :class:`Lease`, :class:`HeldConversation` — one live writer per conversation, with a fencing
  token (:mod:`voxwire.store.lease`).
* :func:`replay_items`, :func:`conversation_state`, :func:`wire_item` — item integrity on replay.

docs/persistence.md describes the API, the schema and the snapshot format.
"""

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
