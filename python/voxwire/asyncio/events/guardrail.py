"""Session events of guardrails over the user's input and around tool calls, and of tool
progress (re-exported by :mod:`voxwire.asyncio.events`, where every session event is listed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from voxwire.agents.agent import RealtimeAgent
from voxwire.agents.guardrail import GuardrailResult

__all__ = ["InputGuardrailTrippedEvent", "ToolGuardrailTrippedEvent", "ToolProgressEvent"]


@dataclass(frozen=True, kw_only=True, slots=True)
class InputGuardrailTrippedEvent:
    """Input guardrails tripped on what the user said (``text``: the message, or the final
    transcript of ``item_id``): the agent does not answer it. ``refusal``: what the assistant
    was asked to say instead (``None``: silent)."""

    type: Literal["input_guardrail_tripped"] = field(default="input_guardrail_tripped", init=False)
    item_id: str | None
    text: str
    guardrails: tuple[str, ...]
    results: tuple[GuardrailResult, ...]
    refusal: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolGuardrailTrippedEvent:
    """A tool guardrail tripped. ``stage="input"``: the call was rejected before the tool ran;
    ``"output"``: the tool ran and ``output`` (what it returned) was withheld. Either way the
    model got the guardrail's message as the call's output (``tool_end`` shows it)."""

    type: Literal["tool_guardrail_tripped"] = field(default="tool_guardrail_tripped", init=False)
    call_id: str
    name: str
    agent: RealtimeAgent
    guardrail: str
    stage: Literal["input", "output"]
    result: GuardrailResult
    output: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolProgressEvent:
    """A tool that yields sent an interim output (``progress(...)``): it joined the
    conversation as a system message; the call's result comes later (``tool_end``)."""

    type: Literal["tool_progress"] = field(default="tool_progress", init=False)
    call_id: str
    name: str
    agent: RealtimeAgent
    output: str
