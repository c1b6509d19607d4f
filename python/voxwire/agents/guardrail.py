"""Output guardrails: checks over what the assistant says, while it says it.

A guardrail is a function of the agent and the assistant's transcript so far returning whether
it trips (``bool``, or a :class:`GuardrailResult` carrying details); it may be a coroutine
function. The session runs the active agent's guardrails over each assistant message as its
transcript grows — every ``debounce_chars`` new characters and once more when the transcript
is complete — not on every delta: speaking takes longer than producing the transcript, so a
check usually finishes before the words are heard.

This module holds the declarations and the two decisions the session needs, without I/O:
:class:`TranscriptWatch` (when to run) and :class:`TripLatch` (a response trips once, however
many checks run concurrently).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, overload

from voxwire.agents.call import AgentView
from voxwire.exceptions import ConfigurationError

__all__ = [
    "DEFAULT_DEBOUNCE_CHARS",
    "GuardrailFunction",
    "GuardrailResult",
    "OutputGuardrail",
    "TranscriptWatch",
    "TripLatch",
    "default_feedback",
    "output_guardrail",
]

#: Run the guardrails every this many new characters of transcript (openai-agents' default).
DEFAULT_DEBOUNCE_CHARS = 100


@dataclass(frozen=True, slots=True)
class GuardrailResult:
    """What a guardrail found: whether it trips, and anything worth reporting."""

    tripwire_triggered: bool
    output_info: Any = None
    message: str | None = None
    """Tool guardrails: what the model gets instead (``None``: the session's formatter or the
    default message). Ignored by agent guardrails."""


#: A check of the agent (a :class:`~voxwire.agents.RealtimeAgent`: typed ``Any`` so that a
#: function annotated with it type checks, see voxwire/agents/call.py) and the text.
GuardrailFunction: TypeAlias = (
    "Callable[[Any, str], bool | GuardrailResult | Awaitable[bool | GuardrailResult]]"
)


@dataclass(frozen=True, kw_only=True)
class OutputGuardrail:
    """A named check over the assistant's transcript (see the module docstring)."""

    function: GuardrailFunction
    name: str = ""

    def __post_init__(self) -> None:
        if not callable(self.function):
            raise ConfigurationError(f"guardrail function={self.function!r} must be callable")
        if not self.name:
            object.__setattr__(self, "name", getattr(self.function, "__name__", "guardrail"))

    async def run(self, agent: AgentView, text: str) -> GuardrailResult:
        """Run the check (awaiting a coroutine function); its exceptions propagate."""
        value: Any = self.function(agent, text)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, GuardrailResult):
            return value
        if isinstance(value, bool):
            return GuardrailResult(tripwire_triggered=value)
        raise TypeError(
            f"guardrail {self.name!r} returned {value!r}: expected a bool or a GuardrailResult"
        )


@overload
def output_guardrail(function: GuardrailFunction, /) -> OutputGuardrail: ...


@overload
def output_guardrail(
    *, name: str | None = None
) -> Callable[[GuardrailFunction], OutputGuardrail]: ...


def output_guardrail(
    function: GuardrailFunction | None = None, /, *, name: str | None = None
) -> OutputGuardrail | Callable[[GuardrailFunction], OutputGuardrail]:
    """``@output_guardrail`` or ``@output_guardrail(name="no_prices")``."""

    def build(fn: GuardrailFunction) -> OutputGuardrail:
        return OutputGuardrail(function=fn, name=name or "")

    return build(function) if function is not None else build


def default_feedback(names: Sequence[str]) -> str:
    """The system message sent after a trip (the model should not repeat what was cut)."""
    return (
        "Your last response was cut off because it failed the output check(s) "
        f"{', '.join(names)}. Do not repeat it; respond again in a way that passes them."
    )


@dataclass
class _Transcript:
    text: str = ""
    checked_chars: int = 0


@dataclass
class TranscriptWatch:
    """When to run the guardrails over an assistant message's transcript.

    ``debounce_chars``: after this many new characters since the last check (``None``: only
    when the transcript is complete). Each call returns the text to check now, or ``None``.
    """

    debounce_chars: int | None = DEFAULT_DEBOUNCE_CHARS
    _items: dict[str, _Transcript] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.debounce_chars is not None and self.debounce_chars <= 0:
            raise ConfigurationError(
                f"guardrail debounce_chars={self.debounce_chars!r} is invalid: expected a "
                "positive number of characters, or None to check complete transcripts only"
            )

    def delta(self, item_id: str, delta: str) -> str | None:
        transcript = self._items.setdefault(item_id, _Transcript())
        transcript.text += delta
        if self.debounce_chars is None:
            return None
        if len(transcript.text) - transcript.checked_chars < self.debounce_chars:
            return None
        transcript.checked_chars = len(transcript.text)
        return transcript.text

    def done(self, item_id: str, text: str) -> str | None:
        """The transcript is complete: check it unless exactly this text was checked."""
        transcript = self._items.pop(item_id, None)
        if transcript is not None and transcript.checked_chars == len(text) and text:
            return None
        return text or None

    def forget(self, item_id: str) -> None:
        self._items.pop(item_id, None)


@dataclass
class TripLatch:
    """A response trips at most once: the first check that trips wins, later ones are
    ignored (checks run concurrently and may finish in any order)."""

    _tripped: set[str] = field(default_factory=set)

    def trip(self, response_id: str) -> bool:
        """``True`` the first time for ``response_id``."""
        if response_id in self._tripped:
            return False
        self._tripped.add(response_id)
        return True

    def tripped(self, response_id: str) -> bool:
        return response_id in self._tripped
