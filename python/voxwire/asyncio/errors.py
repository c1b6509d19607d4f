"""Exceptions of the session layer.

::

    VoxwireError
     ├── InvalidState
     │    └── SessionClosed      the session is closed (or closed while the call waited)
     └── ConnectionFailed        the connection could not be opened (also a ConnectionError)

Misbehaviour of the peer after the connection is open is never raised: it becomes an ``error``
event, and the end of the connection a ``close`` event.
"""

from __future__ import annotations

from voxwire.exceptions import InvalidState, VoxwireError

__all__ = ["ConnectionFailed", "SessionClosed"]


class SessionClosed(InvalidState):
    """The session is closed: nothing more can be sent. Iterate it to see why (``close``)."""


class ConnectionFailed(VoxwireError, ConnectionError):
    """Opening the connection failed (refused, handshake rejected, timed out); the message says
    which endpoint and why, and ``__cause__`` holds the underlying error."""
