"""The local server's rules for a Live session's configuration: what it refuses at
``session.start`` / ``session.update`` (:func:`start_problem`) and the session resource it
reports (:func:`session_resource`, the defaults filled in)."""

from __future__ import annotations

from typing import Final

from voxwire.live.decisions import decisions_config
from voxwire.live.objects import (
    AudioConfig,
    AudioFormat,
    AudioOutputConfig,
    DecisionsDelegation,
    LiveSessionConfig,
    LiveSessionResource,
    ResponsesDelegation,
)
from voxwire.server.live.core.decisions import session_decisions, triggers_problem

__all__ = ["DEFAULT_FORMAT", "DEFAULT_VOICE", "session_resource", "start_problem"]

DEFAULT_FORMAT: Final = AudioFormat(type="audio/pcm", rate=24000)
DEFAULT_VOICE: Final = "marin"


def start_problem(config: LiveSessionConfig) -> tuple[str, str] | None:
    """What is wrong with a session's configuration for this server, as (param, message)."""
    audio_format = config.audio.format if config.audio is not None else None
    if audio_format is not None and (audio_format.type, audio_format.rate) != ("audio/pcm", 24000):
        return (
            "session.audio.format",
            "the local voxwire server speaks audio/pcm at 24000 Hz only",
        )
    if not config.model.startswith("gpt-live"):
        return (
            "session.model",
            f"Invalid model {config.model[:64]!r}: use gpt-live-1 or gpt-live-1.1",
        )
    delegation = config.delegation
    if isinstance(delegation, ResponsesDelegation) and (
        delegation.responses is None or not delegation.responses.model
    ):
        return (
            "session.delegation.responses.model",
            "Responses delegation needs delegation.responses.model",
        )
    if isinstance(delegation, DecisionsDelegation) and session_decisions(config) is None:
        checked = decisions_config(delegation.decisions)
        return "session.delegation.decisions", str(checked)
    problem = triggers_problem(config.triggers)
    return None if problem is None else ("session.triggers", problem)


def session_resource(
    config: LiveSessionConfig, session_id: str, expires_at: int
) -> LiveSessionResource:
    """The session as ``session.started`` shows it (defaults filled in)."""
    audio = config.audio or AudioConfig()
    output = audio.output or AudioOutputConfig()
    return LiveSessionResource(
        id=session_id,
        expires_at=expires_at,
        status="active",
        model=config.model,
        instructions=config.instructions,
        audio=AudioConfig(
            format=audio.format or DEFAULT_FORMAT,
            output=AudioOutputConfig(voice=output.voice or DEFAULT_VOICE),
        ),
        delegation=config.delegation,
        input=config.input,
        safety_identifier=config.safety_identifier,
        store=bool(config.store),
        triggers=config.triggers,
    )
