"""The ``error`` events the server sends, with the codes and messages of the real service.

Every misuse by a client becomes one of these and the session goes on (GA: errors are not
fatal). Where the real message is known from public traces and issue threads it is reproduced;
``event_id`` names the client event that failed, as the real service does.
"""

from __future__ import annotations

from typing import Final

from voxwire.protocol import ErrorEvent, ErrorInfo
from voxwire.server.core.ids import ServerIds

__all__ = ["INVALID_REQUEST", "ServerError", "error_event"]

INVALID_REQUEST: Final = "invalid_request_error"


class ServerError(Exception):
    """Raised inside the session's handlers; the connection turns it into an ``error`` event."""

    def __init__(
        self,
        code: str | None,
        message: str,
        *,
        param: str | None = None,
        error_type: str = INVALID_REQUEST,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.param = param
        self.error_type = error_type

    def event(self, ids: ServerIds, client_event_id: str | None) -> ErrorEvent:
        return error_event(
            ids,
            self.code,
            self.message,
            param=self.param,
            client_event_id=client_event_id,
            error_type=self.error_type,
        )


def error_event(
    ids: ServerIds,
    code: str | None,
    message: str,
    *,
    param: str | None = None,
    client_event_id: str | None = None,
    error_type: str = INVALID_REQUEST,
) -> ErrorEvent:
    """An ``error`` event; ``client_event_id`` is the ``event_id`` of the event that failed."""
    return ErrorEvent(
        event_id=ids.event(),
        error=ErrorInfo(
            type=error_type, code=code, message=message, param=param, event_id=client_event_id
        ),
    )
