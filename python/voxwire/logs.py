"""Logging that never shows a secret: one filter for the client and the server.

websockets logs each handshake header at debug level as ``("> %s: %s", name, value)`` (and
``"< %s: %s"`` for what it receives). The headers that carry credentials — ``Authorization``,
Azure's ``api-key``, and ``Sec-WebSocket-Protocol`` (where browsers put
``openai-insecure-api-key.<key>``) — have their value replaced by ``[redacted]``; every other
record passes unchanged.
"""

from __future__ import annotations

import logging
from typing import Final

__all__ = ["SECRET_HEADERS", "RedactSecrets", "redacted_logger"]

#: Header names (lower case) whose values are credentials.
SECRET_HEADERS: Final = frozenset({"authorization", "api-key", "sec-websocket-protocol"})


class RedactSecrets(logging.Filter):
    """Replaces the value of a credential header in a websockets header record."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if (
            isinstance(args, tuple)
            and len(args) == 2
            and isinstance(args[0], str)
            and args[0].lower() in SECRET_HEADERS
        ):
            record.args = (args[0], "[redacted]")
        return True


def redacted_logger(name: str) -> logging.Logger:
    """The logger ``name`` with the redacting filter on it (added once)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactSecrets) for f in logger.filters):
        logger.addFilter(RedactSecrets())
    return logger
