"""Delegation state: which delegations are open, who owns them, what answered them.

GPT-Live hands work to a backend instead of calling tools itself. Each
``session.delegation.created`` opens a :class:`Delegation` owned by its ``target``:

* ``client``: the application answers with ``session.commentary.append`` (spoken: the answer;
  the delegation is then *answered*) or ``session.thinking.append`` (silent progress; it stays
  open). More appends after the answer are recorded too.
* ``responses``: the session's Responses backend works on it; its stream arrives as
  ``response.event``. A ``function_call`` output item waits for the application
  (``pending_calls``) until a ``function_call_output`` for its ``call_id`` goes back with
  ``response.item.create``; ``response.completed`` ends the delegation as *completed*,
  ``response.failed`` / ``response.incomplete`` / ``response.cancelled`` as *failed*.
* ``decisions``: the Decisions API answers it with ``decision.event`` (``decision``); the
  delegation is then *completed*. The model's delegations wait for the application to report
  what it did (commentary or thinking by id, as for a client delegation); one the application
  asked for with ``decision.create`` names that command (``client_event_id``).

A lost connection leaves every open delegation *abandoned*. Pure data: no I/O, no clocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from voxwire.live.decisions import Decision
from voxwire.live.objects import DelegationTarget

__all__ = ["Answer", "Delegation", "DelegationBook", "DelegationStatus", "FunctionCall"]

DelegationStatus = Literal["open", "answered", "completed", "failed", "abandoned"]

# Terminal Responses streaming events and the status they leave a delegation in.
_TERMINAL: Final[dict[str, DelegationStatus]] = {
    "response.completed": "completed",
    "response.failed": "failed",
    "response.incomplete": "failed",
    "response.cancelled": "failed",
}


@dataclass(frozen=True)
class Answer:
    """One thing the application sent for a delegation: ``commentary`` (spoken), ``thinking``
    (silent), ``instructions``, or a ``function_output`` (for ``call_id``)."""

    kind: Literal["commentary", "thinking", "instructions", "function_output"]
    content: str
    call_id: str | None = None


@dataclass(frozen=True)
class FunctionCall:
    """A function call of the Responses backend, waiting for its output."""

    call_id: str
    name: str
    arguments: str
    item_id: str | None = None


@dataclass
class Delegation:
    """One delegated task: its owner (``target``), status and what answered it."""

    id: str
    target: DelegationTarget
    offset_ms: int
    response_id: str | None = None
    status: DelegationStatus = "open"
    answers: list[Answer] = field(default_factory=list)
    pending_calls: dict[str, FunctionCall] = field(default_factory=dict)
    answered_calls: list[str] = field(default_factory=list)
    backend_events: int = 0
    decision: Decision | None = None
    client_event_id: str | None = None  # the decision.create that asked for it, if any

    @property
    def is_open(self) -> bool:
        """Still expecting work: open, or a Responses delegation waiting on a tool output."""
        return self.status == "open"


class DelegationBook:
    """Every delegation of the session, by id, in the order the server created them."""

    def __init__(self) -> None:
        self._by_id: dict[str, Delegation] = {}
        self._by_call: dict[str, str] = {}

    def __iter__(self) -> Any:
        return iter(self._by_id.values())

    def get(self, delegation_id: str) -> Delegation | None:
        """The delegation with this id, or ``None``."""
        return self._by_id.get(delegation_id)

    def open(self) -> list[Delegation]:
        """The delegations still open, oldest first."""
        return [d for d in self._by_id.values() if d.is_open]

    def created(self, delegation: Delegation) -> None:
        # A repeated id replaces nothing: the first announcement stands.
        self._by_id.setdefault(delegation.id, delegation)

    def answered(self, delegation_id: str, answer: Answer) -> None:
        delegation = self._by_id.get(delegation_id)
        if delegation is None:
            return
        delegation.answers.append(answer)
        if answer.kind == "commentary" and delegation.status == "open":
            delegation.status = "answered"

    def call_answered(self, call_id: str, output: str) -> Delegation | None:
        """A ``function_call_output`` went back: the call is no longer pending."""
        delegation = self._by_id.get(self._by_call.pop(call_id, ""))
        if delegation is None:
            return None
        delegation.pending_calls.pop(call_id, None)
        delegation.answered_calls.append(call_id)
        delegation.answers.append(Answer("function_output", output, call_id))
        return delegation

    def call_for(self, call_id: str) -> Delegation | None:
        """The delegation whose backend made the call ``call_id``, if pending."""
        return self._by_id.get(self._by_call.get(call_id, ""))

    def backend_event(self, delegation_id: str | None, event: dict[str, Any]) -> Delegation | None:
        """Fold one Responses streaming event into its delegation (by ``delegation_id``, else by
        the response id it names). Never raises on odd shapes: what cannot be read is skipped."""
        delegation = self._owner(delegation_id, event)
        if delegation is None:
            return None
        delegation.backend_events += 1
        kind = event.get("type")
        item = event.get("item")
        if kind == "response.output_item.done" and isinstance(item, dict):
            call = _function_call(item)
            if call is not None and call.call_id not in delegation.answered_calls:
                delegation.pending_calls[call.call_id] = call
                self._by_call[call.call_id] = delegation.id
        elif isinstance(kind, str) and kind in _TERMINAL and delegation.status == "open":
            delegation.status = _TERMINAL[kind]
        return delegation

    def decided(self, delegation_id: str | None, decision: Decision | None) -> Delegation | None:
        """A ``decision.event`` for ``delegation_id``: the Decisions API answered it."""
        delegation = self._by_id.get(delegation_id or "")
        if delegation is None or decision is None:
            return delegation
        delegation.decision = decision
        if delegation.status == "open":
            delegation.status = "completed"
        return delegation

    def abandon_open(self) -> list[Delegation]:
        """The connection is gone: every open delegation is abandoned (returned)."""
        left = self.open()
        for delegation in left:
            delegation.status = "abandoned"
        self._by_call.clear()
        return left

    def _owner(self, delegation_id: str | None, event: dict[str, Any]) -> Delegation | None:
        if delegation_id is not None:
            return self._by_id.get(delegation_id)
        response = event.get("response")
        response_id = response.get("id") if isinstance(response, dict) else None
        if not isinstance(response_id, str):
            return None
        for delegation in self._by_id.values():
            if delegation.response_id == response_id:
                return delegation
        return None


def _function_call(item: dict[str, Any]) -> FunctionCall | None:
    if item.get("type") != "function_call":
        return None
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
    if not (isinstance(call_id, str) and isinstance(name, str)):
        return None
    item_id = item.get("id")
    return FunctionCall(
        call_id=call_id,
        name=name,
        arguments=arguments if isinstance(arguments, str) else "{}",
        item_id=item_id if isinstance(item_id, str) else None,
    )
