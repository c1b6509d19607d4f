"""The session layer's exceptions, re-exported from the tree in :mod:`voxwire.exceptions`."""

from __future__ import annotations

from voxwire.exceptions import ConnectionFailed, SessionClosed

__all__ = ["ConnectionFailed", "SessionClosed"]
