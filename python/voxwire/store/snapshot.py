"""The stored form of a conversation, and the versioned JSON snapshot of a session.

One data model serves both: :meth:`ConversationStore.load
<voxwire.store.ConversationStore.load>` returns a :class:`SessionSnapshot`, and the same object
is what ``session.snapshot()`` hands out (``to_json`` / ``from_json``). Pure: no I/O, no clock
(times come in as arguments).

Two kinds of data are kept apart on purpose (openai-agents' run-item lifecycle: "keep provider
payloads, public run items and internal execution records distinct"):

* :attr:`StoredItem.wire` is the item exactly as the server last described it — provider ids
  and fields this SDK does not model included — minus the base64 ``audio`` of its content parts
  (audio lives in :attr:`StoredItem.audio`, and only when recording it was asked for). Nothing
  the SDK invents is ever written into it.
* everything the SDK knows beside the wire — the transcripts it collected, where audio was
  truncated, which response produced the item, who created it (:data:`Origin`) — lives in the
  other fields of :class:`StoredItem`, so it can never be sent back by accident:
  :func:`~voxwire.store.replay.wire_item` reads ``wire`` only.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Final, Literal

import msgspec
from msgspec import Struct

from voxwire.exceptions import ConfigurationError, StoreVersionError
from voxwire.protocol.objects import Usage

__all__ = [
    "SNAPSHOT_VERSION",
    "Origin",
    "SessionSnapshot",
    "StoredItem",
    "UsageTotals",
]

#: Version of the snapshot JSON this release writes and the newest it reads.
SNAPSHOT_VERSION: Final = 1

#: Who put an item in the conversation, as far as the SDK can tell:
#: ``"model"`` — output of a response (``response.output_item.added`` named it);
#: ``"sdk"`` — a function call output the SDK computed (:meth:`ConversationRecorder.output_ready
#: <voxwire.store.recorder.ConversationRecorder.output_ready>`) and delivered;
#: ``"caller"`` — anything else: items the application created, committed user audio. Replay
#: never drops a ``"caller"`` item (:func:`~voxwire.store.replay.replay_items`).
Origin = Literal["model", "sdk", "caller"]


class _Record(Struct, kw_only=True, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """Immutable record; unknown fields in a snapshot are an error (it is our own format)."""


class StoredItem(_Record, frozen=True):
    """One conversation item as stored.

    ``position`` orders the items (ascending; gaps are normal). ``transcripts`` and
    ``truncated_ms`` are keyed by content index, like
    :class:`~voxwire.protocol.ConversationState`: a truncated part has no transcript (the server
    removes it). ``audio`` holds PCM16 per content index when audio recording is on.
    """

    id: str
    position: int
    wire: dict[str, Any]
    transcripts: dict[int, str] = {}
    truncated_ms: dict[int, int] = {}
    audio: dict[int, bytes] = {}
    response_id: str | None = None
    origin: Origin = "caller"

    @property
    def type(self) -> str:
        """The item's ``type`` (``message``, ``function_call``, ``function_call_output`` …)."""
        return str(self.wire.get("type", ""))

    @property
    def role(self) -> str | None:
        role = self.wire.get("role")
        return role if isinstance(role, str) else None

    @property
    def call_id(self) -> str | None:
        call_id = self.wire.get("call_id")
        return call_id if isinstance(call_id, str) else None


class UsageTotals(_Record, frozen=True):
    """Token usage summed over the responses of a conversation (``response.done`` ``usage``)."""

    responses: int = 0
    total_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    input_text_tokens: int = 0
    input_audio_tokens: int = 0
    input_image_tokens: int = 0
    cached_tokens: int = 0
    output_text_tokens: int = 0
    output_audio_tokens: int = 0
    cached_text_tokens: int = 0
    cached_audio_tokens: int = 0
    """Of ``cached_tokens``, the text and audio ones (``cached_tokens_details``; stored as JSON:
    totals written before these fields read as 0)."""
    live_seconds: float = 0.0
    """A GPT-Live conversation's billed session time, over every session that held it."""

    def add(self, usage: Usage | None) -> UsageTotals:
        """These totals plus one response's usage (``None``: a response without usage)."""
        if usage is None:
            return msgspec.structs.replace(self, responses=self.responses + 1)
        inp = usage.input_token_details
        out = usage.output_token_details
        cached = inp.cached_tokens_details if inp is not None else None
        return UsageTotals(
            responses=self.responses + 1,
            total_tokens=self.total_tokens + _count(usage, "total_tokens"),
            input_tokens=self.input_tokens + _count(usage, "input_tokens"),
            output_tokens=self.output_tokens + _count(usage, "output_tokens"),
            input_text_tokens=self.input_text_tokens + _count(inp, "text_tokens"),
            input_audio_tokens=self.input_audio_tokens + _count(inp, "audio_tokens"),
            input_image_tokens=self.input_image_tokens + _count(inp, "image_tokens"),
            cached_tokens=self.cached_tokens + _count(inp, "cached_tokens"),
            output_text_tokens=self.output_text_tokens + _count(out, "text_tokens"),
            output_audio_tokens=self.output_audio_tokens + _count(out, "audio_tokens"),
            cached_text_tokens=self.cached_text_tokens + _count(cached, "text_tokens"),
            cached_audio_tokens=self.cached_audio_tokens + _count(cached, "audio_tokens"),
        )


def _count(details: object, name: str) -> int:
    """A token count of a usage object; a missing object or field counts 0."""
    value = getattr(details, name, None)
    return value if isinstance(value, int) else 0


class SessionSnapshot(_Record, frozen=True, omit_defaults=False):
    """A conversation and the session state that must survive the process.

    * ``items`` — in conversation order (by :attr:`StoredItem.position`);
    * ``agent`` — the name of the active agent;
    * ``approvals`` — function calls waiting for an approval: call id -> the call item's wire
      form (``type``, ``name``, ``arguments``, ``call_id`` …);
    * ``outputs`` — tool outputs computed but not yet delivered: call id -> the output, any JSON
      value. ``""``, ``0``, ``false``, ``null``, ``{}`` are outputs like any other: an output
      exists when its call id is a key, never by its truthiness;
    * ``usage`` — token usage totals; ``created_at`` / ``updated_at`` — UTC.
    """

    conversation_id: str
    created_at: datetime
    updated_at: datetime
    version: int = SNAPSHOT_VERSION
    agent: str | None = None
    items: tuple[StoredItem, ...] = ()
    approvals: dict[str, dict[str, Any]] = {}
    outputs: dict[str, Any] = {}
    usage: UsageTotals = UsageTotals()

    def __post_init__(self) -> None:
        for name in ("created_at", "updated_at"):
            moment = getattr(self, name)
            if moment.tzinfo is None or moment.utcoffset() is None:
                raise ConfigurationError(
                    f"SessionSnapshot.{name}={moment!r} has no time zone: pass an aware "
                    "datetime, e.g. datetime.now(timezone.utc)"
                )
        positions = [item.position for item in self.items]
        if positions != sorted(positions):
            raise ConfigurationError(
                "SessionSnapshot.items must be in conversation order (ascending position); "
                "sort them by StoredItem.position"
            )

    def to_json(self) -> str:
        """The snapshot as JSON text (audio as base64; times as RFC 3339 UTC)."""
        return _encoder.encode(self).decode()

    @classmethod
    def from_json(cls, data: str | bytes) -> SessionSnapshot:
        """Read a snapshot written by :meth:`to_json` of this or an older release.

        Raises :class:`~voxwire.exceptions.StoreVersionError` for a snapshot of a newer format
        and :class:`~voxwire.exceptions.ConfigurationError` for text that is not a snapshot.
        """
        try:
            header = _header_decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise ConfigurationError(
                f"not a voxwire session snapshot ({exc}): "
                "pass the text of SessionSnapshot.to_json()"
            ) from None
        if header.version > SNAPSHOT_VERSION:
            raise StoreVersionError(
                f"session snapshot format version {header.version} is newer than this voxwire "
                f"reads (up to version {SNAPSHOT_VERSION}): it was written by a newer voxwire; "
                "upgrade voxwire (pip install -U voxwire) to read it"
            )
        try:
            return _decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise ConfigurationError(f"invalid session snapshot: {exc}") from None


class _Header(Struct):
    version: int


def utc(moment: datetime) -> datetime:
    """``moment`` in UTC (an aware datetime)."""
    return moment.astimezone(timezone.utc)


_encoder: Final = msgspec.json.Encoder()
_decoder: Final = msgspec.json.Decoder(SessionSnapshot)
_header_decoder: Final = msgspec.json.Decoder(_Header)
