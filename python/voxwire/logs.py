"""Logging that never shows a secret: one filter for the client and the server.

websockets logs each handshake header at debug level as ``("> %s: %s", name, value)`` (and
``"< %s: %s"`` for what it receives). The headers that carry credentials — ``Authorization``,
Azure's ``api-key``, and ``Sec-WebSocket-Protocol`` (where browsers put
``openai-insecure-api-key.<key>``) — have their value replaced by ``[redacted]``; every other
record passes unchanged.

websockets' server also logs every failed opening handshake as an error with a traceback,
whatever failed: :class:`ClientHandshakeFailures` makes the client's failures (a request that is
not HTTP, a bad header, a client gone before it finished: websockets' own exceptions) one warning
line, so a port scanner or a broken client leaves no traceback in a server's log; a failure of
the server's own code during the handshake keeps its traceback.
"""

from __future__ import annotations

import logging
from typing import Final

__all__ = [
    "SECRET_HEADERS",
    "ClientHandshakeFailures",
    "RedactSecrets",
    "quiet_client_handshake_failures",
    "redacted_logger",
]

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


class ClientHandshakeFailures(logging.Filter):
    """Turns websockets' error about a handshake the client's bytes broke into one warning line
    saying why (see the module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg in _HANDSHAKE_RECORDS and record.exc_info and _from_websockets(record):
            exc = record.exc_info[1]
            cause = f" ({exc.__cause__})" if exc is not None and exc.__cause__ else ""
            record.msg = f"{record.msg}: %r%s (a malformed request or a client gone)"
            record.args = (exc, cause)
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info, record.exc_text = None, None
        return True


_HANDSHAKE_RECORDS: Final = frozenset({"opening handshake failed", "unexpected internal error"})


def _from_websockets(record: logging.LogRecord) -> bool:
    """Whether websockets itself raised: one of its exceptions (InvalidMessage, InvalidHandshake,
    ConnectionClosed), or any raised in its own code (it trips on some malformed requests). An
    exception of the server's code in ``process_request`` is neither and keeps its traceback.
    Matched by module and file so that this stdlib-only module needs no import."""
    assert record.exc_info is not None
    _, exc, tb = record.exc_info
    if exc is None:
        return False
    if type(exc).__module__.startswith("websockets."):
        return True
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename.replace("\\", "/") if tb is not None else ""
    return "/websockets/" in path


def quiet_client_handshake_failures(logger: logging.Logger) -> logging.Logger:
    """``logger`` (a websockets server's) with :class:`ClientHandshakeFailures` on it (once)."""
    if not any(isinstance(f, ClientHandshakeFailures) for f in logger.filters):
        logger.addFilter(ClientHandshakeFailures())
    return logger
