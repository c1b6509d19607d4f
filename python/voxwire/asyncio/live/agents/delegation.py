"""The two delegation modes, run for a :class:`~voxwire.asyncio.live.LiveSession`.

* :class:`ResponsesWork`: the agent's function tools are declared to the session's Responses
  backend; each ``function_call`` it makes (inside ``response.event``) runs through voxwire's
  tool machinery (:class:`~voxwire.asyncio.agents.tool_execution.CallExecutor`: argument
  checks, input guardrails, approvals, timeout, output guardrails, the application's
  ``context``), and once every pending call of the delegation has its output the outputs go
  back with ``response.item.create`` and the backend continues with ``response.create``.
* :class:`ClientWork`: the application's backend (an async function of a
  :class:`DelegationRequest`) answers a client delegation; a :class:`DelegationAnswer` is spoken
  (``session.commentary.append``) or kept silent (``session.thinking.append``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import voxwire.asyncio.events as ev
from voxwire.agents.agent import ResolvedAgent
from voxwire.agents.batch import CallOutcome
from voxwire.asyncio.agents.tool_execution import CallExecutor
from voxwire.asyncio.live.agents.handoffs import LiveHandoffs
from voxwire.asyncio.live.events import DelegationAnsweredEvent
from voxwire.live import Delegation, LiveProtocol

__all__ = ["ClientBackend", "ClientWork", "DelegationAnswer", "DelegationRequest", "ResponsesWork"]

#: What a tool that failed without an output (a timeout with ``on_timeout="raise"``) tells the
#: backend, which waits for an output of every call.
_NO_OUTPUT = "The tool did not return a result."


@dataclass(frozen=True, slots=True)
class DelegationRequest:
    """What the application's backend gets: the delegation, what the user said so far
    (``transcript``: every user transcript of the session, joined), the application's
    ``context``."""

    delegation_id: str
    transcript: str
    context: Any


@dataclass(frozen=True, slots=True)
class DelegationAnswer:
    """A backend's answer: ``spoken`` (commentary, the model says it) or silent (thinking, it
    informs what the model says next)."""

    text: str
    spoken: bool = True


ClientBackend = Callable[[DelegationRequest], Awaitable[DelegationAnswer | str | None]]
"""An async function answering a client delegation: text (spoken), a
:class:`DelegationAnswer`, or ``None`` (nothing to send)."""


class WorkHost(Protocol):
    """What the delegation work needs of the session."""

    @property
    def protocol(self) -> LiveProtocol: ...

    def emit(self, event: ev.SessionEvent | DelegationAnsweredEvent) -> None: ...

    async def flush(self) -> None:
        """Send what the protocol queued."""

    def spawn(self, work: Awaitable[None], name: str) -> None: ...

    async def may_run(self) -> bool:
        """Whether the current user turn's work may run (its input guardrails passed)."""

    def refused_output(self) -> str:
        """What the backend gets for a call of a turn the input guardrails refused."""

    def delivered(self, call_id: str, output: str) -> None:
        """A function call's output was sent to the backend (recorded)."""

    def answered(self, delegation_id: str, text: str, spoken: bool) -> None:
        """A client delegation's answer was sent (recorded)."""


class ResponsesWork:
    """Runs the Responses backend's function calls with the agent's tools."""

    def __init__(self, host: WorkHost, agent: ResolvedAgent, executor: CallExecutor) -> None:
        self._host = host
        self._agent = agent
        self._executor = executor
        self._started: set[str] = set()
        self._outputs: dict[str, dict[str, str]] = {}
        self.calls = 0
        # transfer tools (asyncio/live/agents/handoffs.py)
        self.handoffs: LiveHandoffs | None = None

    def check(self, delegation: Delegation) -> None:
        """Start the calls of ``delegation`` not started yet."""
        for call in list(delegation.pending_calls.values()):
            if call.call_id in self._started:
                continue
            self._started.add(call.call_id)
            self.calls += 1
            self._host.spawn(
                self._run(delegation, call.call_id, call.name, call.arguments), call.name
            )

    async def _run(self, delegation: Delegation, call_id: str, name: str, arguments: str) -> None:
        tool, handoff = self._agent.tools.get(name), self._agent.handoffs.get(name)
        if not await self._host.may_run():
            outcome = CallOutcome(
                call_id=call_id,
                name=name,
                arguments=arguments,
                output=self._host.refused_output(),
                is_error=True,
            )
        elif handoff is not None and self.handoffs is not None:
            outcome, resolved = await self.handoffs.hand_off(call_id, handoff, self._agent)
            self._agent = resolved or self._agent
        elif tool is None:
            outcome = CallOutcome(
                call_id=call_id,
                name=name,
                arguments=arguments,
                output=f"No tool named {name!r} is available.",
                is_error=True,
            )
        else:
            outcome = await self._executor.execute(
                tool, call_id, arguments, self._agent.agent, history=()
            )
        self._outputs.setdefault(delegation.id, {})[call_id] = outcome.output or _NO_OUTPUT
        await self._deliver(delegation)

    async def _deliver(self, delegation: Delegation) -> None:
        ready = self._outputs.get(delegation.id, {})
        if any(call_id not in ready for call_id in delegation.pending_calls):
            return  # the backend continues once every pending call has its output
        protocol = self._host.protocol
        if protocol.state != "active" or protocol.delegations.get(delegation.id) is not delegation:
            return  # closed, or abandoned with a lost connection (a fork does not continue it)
        for call_id, output in ready.items():
            protocol.send_function_output(call_id, output)
        protocol.send_response_create()
        await self._host.flush()
        for call_id, output in ready.items():
            self._host.delivered(call_id, output)
        ready.clear()


class ClientWork:
    """Answers client delegations with the application's backend."""

    def __init__(self, host: WorkHost, backend: ClientBackend, context: Any) -> None:
        self._host = host
        self._backend = backend
        self._context = context

    def start(self, delegation: Delegation, transcript: str) -> None:
        request = DelegationRequest(delegation.id, transcript, self._context)
        self._host.spawn(self._answer(request), f"delegation {delegation.id}")

    async def _answer(self, request: DelegationRequest) -> None:
        if not await self._host.may_run():
            return  # the input guardrails refused the turn: the backend is not asked
        try:
            answer = await self._backend(request)
        except Exception as exc:  # the application's code: reported, the session goes on
            self._host.emit(
                ev.ErrorEvent(
                    message=f"the delegation backend failed on {request.delegation_id}: {exc!r}",
                    source="tool",
                    exception=exc,
                )
            )
            answer = DelegationAnswer("The backend could not complete this task.", spoken=False)
        if answer is None:
            return
        if isinstance(answer, str):
            answer = DelegationAnswer(answer)
        protocol = self._host.protocol
        if protocol.state != "active" or protocol.delegations.get(request.delegation_id) is None:
            return  # closed, or abandoned with a lost connection (a fork does not continue it)
        send = protocol.send_commentary if answer.spoken else protocol.send_thinking
        send(answer.text, request.delegation_id)
        await self._host.flush()
        self._host.answered(request.delegation_id, answer.text, answer.spoken)
        self._host.emit(
            DelegationAnsweredEvent(
                delegation_id=request.delegation_id, answer=answer.text, spoken=answer.spoken
            )
        )
