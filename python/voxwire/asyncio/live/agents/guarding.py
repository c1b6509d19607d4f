"""Input guardrails over GPT-Live: the user's words checked as their transcript arrives.

Live has no response to hold back: the model listens while the user speaks and may start
answering before a check ends (full duplex, no ``response.create`` gating). So the check steers
and gates what it can, per user turn (the stretch of transcript deltas between two assistant
turns):

* the turn's text is checked by the agent's input guardrails
  (:func:`~voxwire.asyncio.agents.guardrails.run_guardrails`, as ``RealtimeSession`` does) each
  time it ends a sentence, and once more when the turn is over (a delegation is created or the
  assistant's words arrive) if text came after the last check;
* the *work* is gated: a delegation's function calls (Responses delegation) and the
  application's backend (client delegation) wait for the turn's checks and do not run when one
  tripped — the backend gets the refusal as the call's output;
* on a trip the host silences the model's answer (its audio not yet heard is dropped, the
  transcripts held back are discarded), tells the model not to act on the request
  (``session.instructions.append``) and, with a refusal text, asks it to say so
  (``session.commentary.append``: in its own words), and an ``input_guardrail_tripped`` event
  says what tripped. What the model said before the check ended was heard: that is the limit
  of a full-duplex model without gating.
"""

from __future__ import annotations

import asyncio
import re
from typing import Final, Protocol

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent
from voxwire.agents.guardrail import GuardrailResult
from voxwire.asyncio.agents.guardrails import run_guardrails
from voxwire.asyncio.agents.input_guardrails import Refusal
from voxwire.asyncio.supervisor import OwnedTasks

__all__ = ["LiveInputGuard", "Refusal", "TripHost"]

_SENTENCE_END: Final = re.compile(r"[.!?…]\s*$")


class TripHost(Protocol):
    def emit(self, event: ev.SessionEvent) -> None: ...

    async def input_tripped(self, names: tuple[str, ...], refusal: str | None) -> None:
        """Silence the model's answer and steer it (module docstring)."""


class LiveInputGuard:
    """The input checks of one Live session."""

    def __init__(
        self, host: TripHost, tasks: OwnedTasks, agent: RealtimeAgent, refusal: Refusal
    ) -> None:
        self._host = host
        self._tasks = tasks
        self._agent = agent
        self._refusal = refusal
        self._text = ""  # the current user turn
        self._checked = 0  # how much of it a check has taken
        self._checks: list[asyncio.Task[bool]] = []  # the turn's checks (True: tripped)
        self._tripped = False

    @property
    def active(self) -> bool:
        return bool(self._agent.input_guardrails)

    @property
    def tripped(self) -> bool:
        """Whether the current user turn tripped a guardrail."""
        return self._tripped

    def user_words(self, delta: str, new_turn: bool) -> None:
        """A user transcript delta (``new_turn``: the first since the assistant's turn)."""
        if not self.active:
            return
        if new_turn:
            self._text, self._checked, self._checks, self._tripped = "", 0, [], False
        self._text += delta
        if _SENTENCE_END.search(self._text):
            self._check()

    def turn_over(self) -> None:
        """The assistant took over (a delegation, its words): check what was not checked."""
        if self.active:
            self._check()

    async def allowed(self) -> bool:
        """Whether the current turn's work may run: waits for its checks; ``False`` if one
        tripped."""
        if not self.active:
            return True
        self._check()
        checks = list(self._checks)
        if not checks:
            return True
        results = await asyncio.gather(*(asyncio.shield(c) for c in checks))
        return not any(results)

    def refusal_output(self) -> str:
        return "The user's request was refused by the input guardrails; do not act on it."

    def _check(self) -> None:
        text = self._text.strip()
        if not text or len(self._text) == self._checked:
            return
        self._checked = len(self._text)
        task = self._tasks.spawn(self._run(text), name="live input guardrails", kind="guardrail")
        self._checks.append(task)

    async def _run(self, text: str) -> bool:
        tripped = await run_guardrails(
            self._agent.input_guardrails, self._agent, text, self._host.emit, "input"
        )
        if not tripped or self._tripped:
            return bool(tripped)
        self._tripped = True
        names = tuple(name for name, _ in tripped)
        refusal = self._refusal(names) if callable(self._refusal) else self._refusal
        results: tuple[GuardrailResult, ...] = tuple(result for _, result in tripped)
        self._host.emit(
            ev.InputGuardrailTrippedEvent(
                item_id=None, text=text, guardrails=names, results=results, refusal=refusal
            )
        )
        await self._host.input_tripped(names, refusal)
        return True
