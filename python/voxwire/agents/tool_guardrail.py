"""Tool guardrails and error messages: checks around one function call, and the text the model
gets when a call does not give an output of its own.

* :class:`ToolInputGuardrail` (``@tool_input_guardrail``) checks a call's arguments before the
  tool runs — after the application approved it, or, with ``before_approval=True``, before the
  application is even asked. A trip rejects the call: the tool does not run, the model gets
  the guardrail's message as the call's output.
* :class:`ToolOutputGuardrail` (``@tool_output_guardrail``) checks what the tool returned before
  it is sent. A trip replaces the output with the guardrail's message.

A tool guardrail returns ``True`` (trip) / ``False``, or a
:class:`~voxwire.agents.GuardrailResult` whose ``message`` is what the model gets instead; it
may be a coroutine function. One that raises is reported and counts as not tripped (as agent
guardrails do).

:class:`ToolErrorInfo` is what a session's ``tool_error_formatter`` sees; :func:`error_message`
applies the precedence every error message follows: the per-call message (``reject_tool_call(
message=...)``, a tool's own ``timeout_message`` / ``failure_message``, a guardrail result's
``message``), then the formatter, then the default.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, overload

from voxwire.agents.call import ToolCall
from voxwire.agents.guardrail import GuardrailResult
from voxwire.exceptions import ConfigurationError

__all__ = [
    "ToolErrorFormatter",
    "ToolErrorInfo",
    "ToolErrorKind",
    "ToolInputGuardrail",
    "ToolOutputGuardrail",
    "error_message",
    "tool_input_guardrail",
    "tool_output_guardrail",
]

ToolErrorKind = Literal["rejected", "guardrail", "timeout", "exception"]
"""``rejected``: the application rejected the call; ``guardrail``: a tool guardrail tripped
(input: the tool did not run; output: its output was withheld); ``timeout``: the tool ran out
of time; ``exception``: the tool raised."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolErrorInfo:
    """A call that gives the model an error message instead of an output."""

    kind: ToolErrorKind
    call: ToolCall
    default_message: str
    """What the model gets if the formatter returns ``None``."""
    error: BaseException | None = None
    """The exception (``timeout``: a :class:`~voxwire.agents.ToolTimeoutError`)."""
    guardrail: str | None = None
    """The guardrail that tripped (``guardrail`` only)."""


#: A session's ``tool_error_formatter``: the model's text for a failed call, or ``None`` (the
#: default message).
ToolErrorFormatter: TypeAlias = Callable[[ToolErrorInfo], "str | None"]


def error_message(
    per_call: str | None, formatter: ToolErrorFormatter | None, info: ToolErrorInfo
) -> str:
    """The model's text for a failed call: ``per_call``, else the formatter's, else the
    default. A formatter that raises or returns something else than text is skipped — the
    call must still be answered — and the exception propagates for the caller to report."""
    if per_call is not None:
        return per_call
    if formatter is not None:
        text = formatter(info)
        if text is not None:
            if not isinstance(text, str):
                raise TypeError(f"tool_error_formatter returned {text!r}: expected text or None")
            return text
    return info.default_message


ToolInputFunction: TypeAlias = Callable[
    ["ToolCall"], "bool | GuardrailResult | Awaitable[bool | GuardrailResult]"
]
ToolOutputFunction: TypeAlias = Callable[
    ["ToolCall", str], "bool | GuardrailResult | Awaitable[bool | GuardrailResult]"
]


async def _settle(name: str, value: Any) -> GuardrailResult:
    if inspect.isawaitable(value):
        value = await value
    if isinstance(value, GuardrailResult):
        return value
    if isinstance(value, bool):
        return GuardrailResult(tripwire_triggered=value)
    raise TypeError(
        f"tool guardrail {name!r} returned {value!r}: expected a bool or a GuardrailResult"
    )


def _name_of(function: Callable[..., Any], name: str) -> str:
    if not callable(function):
        raise ConfigurationError(f"tool guardrail function={function!r} must be callable")
    return name or getattr(function, "__name__", "tool_guardrail")


@dataclass(frozen=True, kw_only=True)
class ToolInputGuardrail:
    """A check over a call's arguments (see the module docstring)."""

    function: ToolInputFunction
    name: str = ""
    before_approval: bool = False
    """Run before the application is asked to approve (a trip then asks nothing)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", _name_of(self.function, self.name))

    async def run(self, call: ToolCall) -> GuardrailResult:
        return await _settle(self.name, self.function(call))


@dataclass(frozen=True, kw_only=True)
class ToolOutputGuardrail:
    """A check over a tool's output before it is sent (see the module docstring)."""

    function: ToolOutputFunction
    name: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", _name_of(self.function, self.name))

    async def run(self, call: ToolCall, output: str) -> GuardrailResult:
        return await _settle(self.name, self.function(call, output))


@overload
def tool_input_guardrail(function: ToolInputFunction, /) -> ToolInputGuardrail: ...


@overload
def tool_input_guardrail(
    *, name: str | None = None, before_approval: bool = False
) -> Callable[[ToolInputFunction], ToolInputGuardrail]: ...


def tool_input_guardrail(
    function: ToolInputFunction | None = None,
    /,
    *,
    name: str | None = None,
    before_approval: bool = False,
) -> ToolInputGuardrail | Callable[[ToolInputFunction], ToolInputGuardrail]:
    """``@tool_input_guardrail`` or ``@tool_input_guardrail(before_approval=True)``: a function
    of the :class:`~voxwire.agents.ToolCall` returning whether to reject it."""

    def build(fn: ToolInputFunction) -> ToolInputGuardrail:
        return ToolInputGuardrail(function=fn, name=name or "", before_approval=before_approval)

    return build(function) if function is not None else build


@overload
def tool_output_guardrail(function: ToolOutputFunction, /) -> ToolOutputGuardrail: ...


@overload
def tool_output_guardrail(
    *, name: str | None = None
) -> Callable[[ToolOutputFunction], ToolOutputGuardrail]: ...


def tool_output_guardrail(
    function: ToolOutputFunction | None = None, /, *, name: str | None = None
) -> ToolOutputGuardrail | Callable[[ToolOutputFunction], ToolOutputGuardrail]:
    """``@tool_output_guardrail``: a function of the call and the output text returning whether
    to withhold the output."""

    def build(fn: ToolOutputFunction) -> ToolOutputGuardrail:
        return ToolOutputGuardrail(function=fn, name=name or "")

    return build(function) if function is not None else build


def check_guardrails(
    tool: str, kind: str, guardrails: Sequence[Any], expected: type[Any]
) -> tuple[Any, ...]:
    """``guardrails`` as a tuple, each one of ``expected`` (a clear error otherwise)."""
    for guardrail in guardrails:
        if not isinstance(guardrail, expected):
            raise ConfigurationError(
                f"tool {tool!r}: {kind} {guardrail!r} is invalid: expected a {expected.__name__} "
                f"(voxwire.agents.{kind.replace(' ', '_')})"
            )
    return tuple(guardrails)


def freeze_guardrails(owner: Any) -> None:
    """Check ``owner``'s ``input_guardrails`` and ``output_guardrails`` (a function tool's or an
    MCP server's: a frozen dataclass with a ``name``) and store them as tuples."""
    guards = (
        ("input_guardrails", "tool input guardrail", ToolInputGuardrail),
        ("output_guardrails", "tool output guardrail", ToolOutputGuardrail),
    )
    for option, kind, expected in guards:
        value = check_guardrails(owner.name, kind, getattr(owner, option), expected)
        object.__setattr__(owner, option, value)
