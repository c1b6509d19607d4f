"""The exceptions voxwire raises.

::

    VoxwireError                 base of everything voxwire raises on purpose
     ├── ConfigurationError      bad parameters given by the caller (also a ValueError)
     │    └── HistoryError       a desired conversation history that cannot be reached
     ├── InvalidState            an operation that the current state does not allow
     │    └── SessionClosed      the session is closed (or closed while the call waited)
     ├── ConnectionFailed        a connection could not be opened (also a ConnectionError)
     ├── AudioDeviceError        no such audio device, or sounddevice / PortAudio not installed
     ├── WebhookError            a webhook that is forged, stale or malformed (also a ValueError)
     ├── CallControlError        a SIP call could not be accepted, rejected, referred or hung up
     └── StoreError              a conversation store cannot do what was asked (busy, unreachable,
          │                      closed …); every failure out of voxwire.store is one of these
          ├── StoreVersionError  a store or snapshot written by a newer voxwire
          ├── StoreCorrupt       damaged: not a database, a malformed file, rows that fail the
          │    │                 integrity checks at load
          │    └── StoreSchemaError   voxwire's tables or its schema_version row are missing
          ├── StoreReadOnly      the store cannot be written (read-only file, directory, database)
          ├── StoreFull          the disk (or the database's space) is full
          ├── ConversationHeld   another live session holds the conversation's lease
          ├── LeaseLost          this holder's lease was taken over: its writes are refused
          ├── ConversationNotFound   no conversation with that id (also a LookupError)
          └── ConversationExists     a conversation with that id is already stored

Every ``StoreError`` message names the store, the conversation (when there is one), what is
wrong and what to do; ``store`` and ``conversation_id`` are also attributes.

Misbehaviour of a peer after a connection is open is never raised: the session turns it into an
``error`` event, and the end of the connection into a ``close`` event.

Audio parameters that are wrong (an unsupported rate, a wrong dtype, an odd byte count) raise the
built-in ``ValueError`` / ``TypeError`` straight from the Rust core, naming the bad value and what
is allowed.
"""

from __future__ import annotations


class VoxwireError(Exception):
    """Base class of every exception voxwire raises on purpose."""


class ConfigurationError(VoxwireError, ValueError):
    """A parameter given by the caller cannot be used; the message says what is allowed."""


class InvalidState(VoxwireError):
    """The operation is not allowed in the current state; the message says what to do instead."""


class HistoryError(ConfigurationError):
    """The desired history cannot be reached with delete/create events; the message says which
    item is the problem and what to use instead."""


class SessionClosed(InvalidState):
    """The session is closed: nothing more can be sent. Iterate it to see why (``close``)."""


class ConnectionFailed(VoxwireError, ConnectionError):
    """Opening the connection failed (refused, handshake rejected, timed out); the message says
    which endpoint and why, and ``__cause__`` holds the underlying error."""


class StoreError(VoxwireError):
    """A conversation store (``voxwire.store``) cannot do what was asked; the message says why,
    which store (``store``) and which conversation (``conversation_id``, ``None`` if none)."""

    def __init__(
        self, message: str, *, store: str | None = None, conversation_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.store = store
        self.conversation_id = conversation_id


class StoreVersionError(StoreError):
    """A store or snapshot was written by a newer voxwire than this one; the message names both
    versions and what to do."""


class StoreCorrupt(StoreError):
    """The store is damaged: the file is not a database or is malformed, or rows fail the
    integrity checks made at load (the message names the row and the check). Nothing is resumed
    from a damaged conversation."""


class StoreSchemaError(StoreCorrupt):
    """voxwire's tables, or the ``schema_version`` row that says which version they are, are
    missing from a store that has some of them: it was damaged or edited by hand."""


class StoreReadOnly(StoreError):
    """The store cannot be written: a read-only file, directory, file system or database."""


class StoreFull(StoreError):
    """The disk, or the database's space, is full: the write was rolled back, nothing of it was
    stored."""


class ConversationHeld(StoreError):
    """The conversation is held by another live session (its lease has not expired); the
    message names the holder and when the lease expires if it is not renewed."""


class LeaseLost(StoreError):
    """This holder's lease on the conversation was taken over by another (it had expired): the
    write was refused, and every later write with this lease will be."""


class ConversationNotFound(StoreError, LookupError):
    """No conversation with this id in the store."""


class ConversationExists(StoreError):
    """A conversation with this id is already in the store."""


class AudioDeviceError(VoxwireError):
    """An audio device cannot be used: sounddevice or the PortAudio library is not installed, no
    device matches the name or index given (the message lists those available), or the device
    refused the stream parameters."""


class WebhookError(VoxwireError, ValueError):
    """A webhook request is refused: a header is missing, the signature does not match the
    secret, the timestamp is outside the tolerance window, or the payload is not an event.
    ``reason`` says which (``missing_header``, ``bad_timestamp``, ``stale``, ``bad_signature``,
    ``malformed``); the message says what to check. Answer such a request with HTTP 400."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class CallControlError(VoxwireError):
    """A SIP call-control request (accept, reject, refer, hangup) failed: ``status`` is the HTTP
    status (``None``: no answer), ``code`` the service's error code; the message says why."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
