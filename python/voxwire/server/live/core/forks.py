"""Stored Live sessions and their forks, for the local server's Live emulation; pure.

A session started with ``store: true`` is kept when it ends — a ``session.close``, or its
connection lost — with its final configuration and its conversation (what the user said, what
the model said, in order): "a stored, closed session whose recording has finalized", which is
what ``/v1/live/sessions/{id}/fork`` forks (the Live reference, ``live.forks.connect``). While its
connection lives it is stored but not finalized, and a fork of it is refused. A fork's
``session.start`` carries overrides only (``ForkSessionConfig``: ``audio``, ``client``,
``delegation``, ``store``); the model, voice, instructions and prior conversation are inherited.

The reference documents the fork's shape, not its error codes: the codes here
(``session_not_found``, ``session_not_finalized``, and the primary connection's
``unknown_parameter`` / ``invalid_value``) are the emulation's, in the documented error shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from voxwire.live.objects import (
    AudioConfig,
    ForkSessionConfig,
    LiveSessionResource,
    ResponsesDelegation,
)

__all__ = ["ForkRefused", "LiveSessionStore", "StoredLiveSession", "fork_resource"]

Role = Literal["user", "assistant"]


@dataclass
class StoredLiveSession:
    """A session kept for forking: its configuration as it ended, its conversation."""

    resource: LiveSessionResource
    conversation: list[tuple[Role, str]] = field(default_factory=list)
    finalized: bool = False


@dataclass(frozen=True)
class ForkRefused:
    """Why a fork was refused: an ``error`` event's code, param and message."""

    code: str
    message: str
    param: str | None = None


class LiveSessionStore:
    """The server's stored Live sessions, by id (one store per server, shared by connections)."""

    def __init__(self) -> None:
        self._sessions: dict[str, StoredLiveSession] = {}

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    def get(self, session_id: str) -> StoredLiveSession | None:
        return self._sessions.get(session_id)

    def begin(self, resource: LiveSessionResource, conversation: list[tuple[Role, str]]) -> None:
        """A session with ``store: true`` started (a fork carries its inherited conversation)."""
        self._sessions[resource.id] = StoredLiveSession(resource, list(conversation))

    def said(self, session_id: str, role: Role, text: str) -> None:
        """One stretch of the conversation (the user's turn, or what the model said)."""
        stored = self._sessions.get(session_id)
        if stored is not None and not stored.finalized and text:
            stored.conversation.append((role, text))

    def finalize(self, resource: LiveSessionResource) -> None:
        """The session ended: it can be forked from now on."""
        stored = self._sessions.get(resource.id)
        if stored is not None:
            stored.resource = resource
            stored.finalized = True


def fork_resource(
    stored: StoredLiveSession | None,
    source_id: str,
    overrides: ForkSessionConfig,
    unknown: dict[str, Any],
    new_id: Callable[[], str],
    expires_at: int,
) -> LiveSessionResource | ForkRefused:
    """The forked session's configuration: the stored one with ``overrides``, a new id (from
    ``new_id``, never the stored session's), or why the fork is refused."""
    if stored is None:
        return ForkRefused(
            "session_not_found",
            f"No stored Live session with id {source_id[:64]!r}: only a session started with "
            "store: true can be forked, after it has closed",
        )
    if not stored.finalized:
        return ForkRefused(
            "session_not_finalized",
            f"Live session {source_id[:64]!r} is still active or finalizing: fork it once it "
            "has closed and its recording has finalized",
        )
    if unknown:
        name = sorted(unknown)[0]
        return ForkRefused(
            "unknown_parameter",
            f"Unknown parameter: {name!r} (a fork inherits the model, voice, instructions and "
            "conversation; it may override audio, client, delegation, store)",
            name,
        )
    return _forked(stored.resource, overrides, new_id, expires_at)


def _forked(
    base: LiveSessionResource,
    overrides: ForkSessionConfig,
    new_id: Callable[[], str],
    expires_at: int,
) -> LiveSessionResource | ForkRefused:
    if overrides.client is not None:
        return ForkRefused(
            "invalid_value",
            "client overrides are only supported for WebRTC forks",
            "session.client",
        )
    current = msgspec.to_builtins(base)
    if overrides.delegation is not None:
        update = overrides.delegation
        if not isinstance(base.delegation, ResponsesDelegation) or update.get("type") != (
            "responses"
        ):
            return ForkRefused(
                "invalid_value",
                "a fork may update the Responses backend of a session that delegates to "
                "Responses; the delegation type cannot change",
                "session.delegation",
            )
        old = current.get("delegation") or {}
        merged = {**old, **update}
        if isinstance(update.get("responses"), dict):
            merged["responses"] = {**(old.get("responses") or {}), **update["responses"]}
        current["delegation"] = merged
    if overrides.audio is not None and overrides.audio.format is not None:
        audio = base.audio or AudioConfig()
        current["audio"] = msgspec.to_builtins(
            msgspec.structs.replace(audio, format=overrides.audio.format)
        )
    if overrides.store is not None:
        current["store"] = overrides.store
    session_id = new_id()
    while session_id == base.id:
        session_id = new_id()
    current.update(id=session_id, expires_at=expires_at, status="active")
    try:
        return msgspec.convert(current, LiveSessionResource)
    except msgspec.ValidationError as exc:
        return ForkRefused("invalid_value", f"invalid fork overrides: {exc}", "session")
