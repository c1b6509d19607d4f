"""Input guardrails: checks over what the user said, run before the agent answers.

A guardrail is a function of the agent and the user's text — a text message, or the final
transcript of a spoken turn — returning whether it trips (``bool``, or a
:class:`~voxwire.agents.GuardrailResult`); it may be a coroutine function. The session runs the
active agent's input guardrails concurrently over each user turn and asks for the response only
when none tripped; on a trip it emits ``input_guardrail_tripped`` and refuses (says the
session's ``input_guardrail_refusal``, or stays silent).

To answer only after the check, the session must be the one that asks for responses. With
turn detection on, the server would otherwise start one itself at the end of each spoken turn
(``turn_detection.create_response``). :class:`ResponseHold` keeps ``create_response: false``
on the wire while the active agent has input guardrails, and remembers what the application
configured, so that the value is restored when an agent without input guardrails takes over and
the session can show the application its own setting. It is pure: configurations in,
configurations out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, overload

import msgspec

from voxwire.agents.call import AgentView
from voxwire.agents.guardrail import GuardrailFunction, GuardrailResult, OutputGuardrail
from voxwire.protocol.config import (
    AudioConfig,
    AudioInputConfig,
    SemanticVad,
    ServerVad,
    SessionConfig,
)

__all__ = [
    "DEFAULT_REFUSAL",
    "InputGuardrail",
    "ResponseHold",
    "input_guardrail",
    "turn_detection_of",
    "with_turn_detection",
]

#: What the assistant says when an input guardrail trips (the session's default refusal).
DEFAULT_REFUSAL = "Sorry, I can't help with that."


@dataclass(frozen=True, kw_only=True)
class InputGuardrail:
    """A named check over the user's text (see the module docstring)."""

    function: GuardrailFunction
    name: str = ""

    def __post_init__(self) -> None:
        # The same shape and rules as an output guardrail's function.
        named = OutputGuardrail(function=self.function, name=self.name)
        object.__setattr__(self, "name", named.name)

    async def run(self, agent: AgentView, text: str) -> GuardrailResult:
        """Run the check (awaiting a coroutine function); its exceptions propagate."""
        return await OutputGuardrail(function=self.function, name=self.name).run(agent, text)


@overload
def input_guardrail(function: GuardrailFunction, /) -> InputGuardrail: ...


@overload
def input_guardrail(
    *, name: str | None = None
) -> Callable[[GuardrailFunction], InputGuardrail]: ...


def input_guardrail(
    function: GuardrailFunction | None = None, /, *, name: str | None = None
) -> InputGuardrail | Callable[[GuardrailFunction], InputGuardrail]:
    """``@input_guardrail`` or ``@input_guardrail(name="no_account_numbers")``."""

    def build(fn: GuardrailFunction) -> InputGuardrail:
        return InputGuardrail(function=fn, name=name or "")

    return build(function) if function is not None else build


# --- create_response on the wire ------------------------------------------------------------------


def turn_detection_of(config: SessionConfig | None) -> Any:
    """``audio.input.turn_detection`` of ``config``: a struct, ``None`` (off) or UNSET."""
    if config is None or not isinstance(config.audio, AudioConfig):
        return msgspec.UNSET
    audio_input = config.audio.input
    if not isinstance(audio_input, AudioInputConfig):
        return msgspec.UNSET
    return audio_input.turn_detection


def with_turn_detection(config: SessionConfig, detection: Any) -> SessionConfig:
    """``config`` with ``audio.input.turn_detection`` set to ``detection``."""
    audio = config.audio if isinstance(config.audio, AudioConfig) else AudioConfig()
    audio_input = audio.input if isinstance(audio.input, AudioInputConfig) else AudioInputConfig()
    audio_input = msgspec.structs.replace(audio_input, turn_detection=detection)
    return msgspec.structs.replace(config, audio=msgspec.structs.replace(audio, input=audio_input))


def _set_create(config: SessionConfig, detection: Any, create: bool) -> SessionConfig:
    return with_turn_detection(config, msgspec.structs.replace(detection, create_response=create))


class ResponseHold:
    """``create_response`` as the application wants it, and as the wire must carry it.

    ``base`` is the application's configuration at construction. Every configuration the
    session sends passes through one of the methods below with ``holding``: whether the agent
    it is for has input guardrails.
    """

    def __init__(self, base: SessionConfig) -> None:
        self.wanted = True
        """``create_response`` as the application configured it (the server's default: on)."""
        self._note(base)

    def _note(self, config: SessionConfig) -> None:
        detection = turn_detection_of(config)
        if isinstance(detection, ServerVad | SemanticVad):
            create = detection.create_response
            self.wanted = True if create is msgspec.UNSET else bool(create)

    def application_update(self, config: SessionConfig, *, holding: bool) -> SessionConfig:
        """A ``session.update`` of the application: its ``create_response`` is noted, and
        turned off on the wire while holding."""
        self._note(config)
        detection = turn_detection_of(config)
        if holding and isinstance(detection, ServerVad | SemanticVad):
            return _set_create(config, detection, False)
        return config

    def first_config(self, config: SessionConfig, *, holding: bool) -> SessionConfig:
        """The first ``session.update`` of a server session (at connect, after a reconnection):
        while holding, turn detection that is on (or left to the server's default, server VAD)
        goes out with ``create_response: false``."""
        if not holding:
            return config
        detection = turn_detection_of(config)
        if detection is None:
            return config  # turn detection off: the application asks for every response
        if detection is msgspec.UNSET:
            detection = ServerVad()
        return _set_create(config, detection, False)

    def switch_config(
        self,
        config: SessionConfig,
        *,
        holding: bool,
        was_holding: bool,
        current: SessionConfig | None,
    ) -> SessionConfig:
        """An agent switch's ``session.update``: when holding changes, it carries the server's
        ``current`` turn detection with ``create_response`` set for the new agent (turned off,
        or back to what the application wants)."""
        detection = turn_detection_of(current)
        if holding == was_holding or not isinstance(detection, ServerVad | SemanticVad):
            return config
        return _set_create(config, detection, False if holding else self.wanted)

    def view(self, config: SessionConfig | None) -> SessionConfig | None:
        """The server's configuration as the application configured it: ``create_response``
        shown as the application set it, not as the session holds it."""
        detection = turn_detection_of(config)
        if config is None or not isinstance(detection, ServerVad | SemanticVad):
            return config
        if detection.create_response is msgspec.UNSET:
            return config
        return _set_create(config, detection, self.wanted)


def holds(agent: AgentView | None) -> bool:
    """Whether the session must hold responses for ``agent``."""
    return agent is not None and bool(agent.input_guardrails)


def turn_detection_on(config: SessionConfig | None) -> bool:
    """The server detects turns (and would start responses itself)."""
    return isinstance(turn_detection_of(config), ServerVad | SemanticVad)


def transcription_on(config: SessionConfig | None) -> bool:
    """The server transcribes the user's audio (input guardrails need the transcript)."""
    if config is None or not isinstance(config.audio, AudioConfig):
        return False
    audio_input = config.audio.input
    return isinstance(audio_input, AudioInputConfig) and audio_input.transcription not in (
        None,
        msgspec.UNSET,
    )
