"""The states of a session's life (``RealtimeSession.state``), from construction to close."""

from __future__ import annotations

import enum

__all__ = ["SessionState"]


class SessionState(enum.Enum):
    NEW = "new"
    CONNECTING = "connecting"
    OPEN = "open"
    RECONNECTING = "reconnecting"
    CLOSING = "closing"
    CLOSED = "closed"
