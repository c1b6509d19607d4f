"""``ToolRunner``: runs the function calls the model makes, for one session.

The session hands it every wire event (:meth:`ToolRunner.on_server_event`, synchronous, from
the receive loop); the runner never blocks that loop. A call starts when its function call item
is done (``response.output_item.done``) and runs as a task owned by the session's
:class:`~voxwire.asyncio.supervisor.OwnedTasks`:

1. the tool is looked up in the agent snapshot that was active when the call arrived (a
   handoff in the same response does not reroute it); an unknown name, or arguments that do
   not parse or fit, become an error output the model sees, plus an ``error`` event;
2. the call itself — tool guardrails, approval, the function under its timeout, progress of
   a generator tool, the error messages — is the ``CallExecutor``'s
   (asyncio/agents/tool_execution.py, which says it step by step); a timeout or an exception gives
   the model an error message and the application an ``error`` event (``source="tool"``), and the
   session goes on;
3. delivery: a ``function_call_output`` item. The output is computed once; if sending it fails,
   or the server rejects it, the same output (same item id) is sent again, up to
   ``delivery_attempts`` times — the tool never runs twice. A call that failed without an
   output (``on_timeout="raise"``) sends nothing and counts as answered.

When a response is done and every call it made has an output the server acknowledged, the
runner reports ``function_tools_executed`` and asks for ONE follow-up response, through the
session's response gate (held while another response is active). The decision is
:class:`~voxwire.agents.ToolBatches`'.

Calls of declaration-only tools (:class:`voxwire.protocol.FunctionTool`), and calls made by
out-of-band responses, are the application's to answer: the runner leaves them alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import voxwire.asyncio.events as ev
from voxwire.agents.agent import ResolvedAgent, ResolvedHandoff
from voxwire.agents.batch import CallOutcome, ToolBatches
from voxwire.agents.tool import format_output
from voxwire.agents.tool_guardrail import ToolErrorFormatter
from voxwire.asyncio.agents.tool_execution import Approvals, CallExecutor
from voxwire.asyncio.errors import SessionClosed
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import server_events as se
from voxwire.protocol.items import FunctionCallItem

__all__ = ["DEFAULT_REJECTION_MESSAGE", "ToolHost", "ToolObserver", "ToolRunner"]

DEFAULT_REJECTION_MESSAGE = "The user declined this tool call; it was not run."


class ToolHost(Protocol):
    """What the runner needs of the session."""

    def emit(self, event: ev.SessionEvent) -> None:
        """Queue a session event for the application."""

    def send_output(self, call_id: str, output: str, item_id: str | None) -> tuple[str, str]:
        """Queue a ``function_call_output`` create (``item_id``: reuse it when resending);
        ``(event_id, item_id)``."""

    async def flush(self) -> None:
        """Send what is queued; raises :class:`SessionClosed` when the connection is gone."""

    def request_response(self) -> None:
        """Queue the gated follow-up ``response.create``."""

    def is_out_of_band(self, response_id: str) -> bool: ...

    def tool_span(self, name: str, call_id: str) -> contextlib.AbstractContextManager[Any]:
        """Tracing around one tool run."""

    async def hand_off(self, call_id: str, handoff: ResolvedHandoff, source: ResolvedAgent) -> None:
        """Switch to ``handoff``'s target (raises if it cannot; then nothing changed)."""

    def history(self) -> tuple[Any, ...]:
        """``session.history`` now (the snapshot a tool's context gets)."""

    async def send_progress(self, call_id: str, name: str, text: str, respond: bool) -> None:
        """Add a tool's interim output to the conversation (and ask for a response if
        ``respond``); dropped while the session is not open (the tool goes on)."""


class ToolObserver(Protocol):
    """Who is told what only the runner knows (the session's persistence part,
    asyncio/persistence/recording.py): a call waits for approval, its approval was answered, its
    output is about to be sent (awaited before sending, so a stored output survives a crash)."""

    def approval_pending(self, call_id: str, name: str, arguments: str) -> None: ...

    def approval_resolved(self, call_id: str) -> None: ...

    async def output_ready(self, call_id: str, output: str) -> None: ...


@dataclass
class _Call:
    call_id: str
    name: str
    arguments: str
    response_id: str
    snapshot: ResolvedAgent
    history: tuple[Any, ...] = ()
    outcome: CallOutcome | None = None
    item_id: str | None = None
    attempts: int = 0
    delivered: bool = False


class ToolRunner:
    """Runs calls for one session (see the module docstring). ``agent`` returns the active
    agent snapshot (``None``: no agent, nothing runs)."""

    def __init__(
        self,
        host: ToolHost,
        tasks: OwnedTasks,
        agent: Callable[[], ResolvedAgent | None],
        *,
        delivery_attempts: int = 3,
        retry_delay_s: float = 0.05,
        rejection_message: str = DEFAULT_REJECTION_MESSAGE,
        error_formatter: ToolErrorFormatter | None = None,
        context: Any = None,
        observer: ToolObserver | None = None,
    ) -> None:
        if delivery_attempts < 1:
            raise ConfigurationError(
                f"tool_output_attempts={delivery_attempts!r} is invalid: expected 1 or more"
            )
        self._host = host
        self._tasks = tasks
        self._agent = agent
        self._attempts = delivery_attempts
        self._retry_delay_s = retry_delay_s
        self._batches = ToolBatches()
        self._calls: dict[str, _Call] = {}
        self._by_event: dict[str, _Call] = {}
        self._by_item: dict[str, _Call] = {}
        self._observer = observer
        self._approvals = Approvals(observer.approval_pending if observer is not None else None)
        self._executor = CallExecutor(
            host,
            self._approvals,
            rejection_message=rejection_message,
            error_formatter=error_formatter,
            context=context,
        )

    # --- what the application sees ----------------------------------------------------------------

    @property
    def pending_approvals(self) -> tuple[str, ...]:
        """Call ids waiting for approve / reject."""
        return self._approvals.pending

    @property
    def running(self) -> int:
        """Calls started whose response's follow-up has not been decided yet."""
        return len(self._calls)

    def approve(self, call_id: str, *, always: bool = False) -> None:
        self._approvals.answer(call_id, True, None, always)
        if self._observer is not None:
            self._observer.approval_resolved(call_id)

    def reject(self, call_id: str, *, message: str | None = None, always: bool = False) -> None:
        self._approvals.answer(call_id, False, message, always)
        if self._observer is not None:
            self._observer.approval_resolved(call_id)

    def connection_replaced(self) -> None:
        """A new connection replaced a lost one and the conversation was restored
        (asyncio/connection/reconnect.py): every output computed but not acknowledged is queued
        again — the same output, the same item id; the tool does not run again. Calls still running
        deliver when they finish. The session flushes."""
        for call in self._calls.values():
            if call.outcome is not None and not call.delivered:
                self._queue_output(call)

    def resume_call(self, call: FunctionCallItem, response_id: str, output: str | None) -> None:
        """A call of a resumed conversation (asyncio/persistence/resumption.py), part of the batch
        of ``response_id`` (a response that is over): ``output``, computed before the process
        ended, is delivered without running the tool again; ``None``: the call runs from the
        start (approval included)."""
        snapshot = self._agent()
        if snapshot is None or call.call_id is None or call.call_id in self._calls:
            return
        entry = _Call(call.call_id, call.name, call.arguments, response_id, snapshot)
        self._calls[entry.call_id] = entry
        self._batches.call_started(response_id, entry.call_id)
        self._batches.response_done(response_id, "completed")
        if output is None:
            work = self._run(entry)
        else:
            outcome = CallOutcome(
                call_id=entry.call_id, name=entry.name, arguments=entry.arguments, output=output
            )
            work = self._deliver(entry, outcome)
        self._tasks.spawn(work, name=f"voxwire-client-tool-{entry.name}", kind="tool")

    # --- events in (synchronous, from the receive loop) -------------------------------------------

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        if isinstance(event, se.ResponseOutputItemDone):
            self._call_done(event)
        elif isinstance(event, se.ConversationItemAdded | se.ConversationItemCreated):
            call = self._by_item.get(event.item.id or "")
            if call is not None and not call.delivered:
                self._delivered(call)
        elif isinstance(event, se.ErrorEvent):
            call = self._by_event.pop(event.error.event_id or "", None)
            if call is not None and not call.delivered:
                self._rejected(call, event.error.message)
        elif isinstance(event, se.ResponseDone) and event.response.id is not None:
            self._batches.response_done(event.response.id, event.response.status)
        else:
            return
        self._follow_up()

    def _call_done(self, event: se.ResponseOutputItemDone) -> None:
        item = event.item
        if not isinstance(item, FunctionCallItem) or item.call_id is None:
            return
        if item.status == "incomplete" or item.call_id in self._calls:
            return
        snapshot = self._agent()
        if snapshot is None or item.name in snapshot.declared:
            return  # the application answers declaration-only tools
        if self._host.is_out_of_band(event.response_id):
            return
        call = _Call(
            call_id=item.call_id,
            name=item.name,
            arguments=item.arguments,
            response_id=event.response_id,
            snapshot=snapshot,
            history=self._host.history(),
        )
        self._calls[call.call_id] = call
        self._batches.call_started(call.response_id, call.call_id)
        self._tasks.spawn(self._run(call), name=f"voxwire-client-tool-{call.name}", kind="tool")

    def _delivered(self, call: _Call) -> None:
        call.delivered = True
        self._batches.delivered(call.call_id)
        for event_id in [e for e, c in self._by_event.items() if c is call]:
            del self._by_event[event_id]

    def _rejected(self, call: _Call, reason: str) -> None:
        """The server refused the output item: send it again (same output), or give up."""
        if call.outcome is None:
            return
        if call.attempts < self._attempts:
            self._queue_output(call)  # the receive loop flushes after this event
            return
        self._give_up(call, reason)

    def _give_up(self, call: _Call, reason: str) -> None:
        self._host.emit(
            ev.ErrorEvent(
                message=f"the output of tool call {call.call_id} ({call.name}) could not be "
                f"delivered after {call.attempts} attempt(s): {reason}",
                source="tool",
            )
        )
        if call.outcome is not None:
            self._batches.call_finished(
                dataclasses.replace(call.outcome, trigger_response=False, is_error=True)
            )
        self._delivered(call)

    def _follow_up(self) -> None:
        for batch in self._batches.pop_ready():
            for outcome in batch.outcomes:
                self._forget(outcome.call_id)
            if batch.trigger_response:
                self._host.request_response()
            self._host.emit(
                ev.FunctionToolsExecutedEvent(
                    response_id=batch.response_id,
                    outcomes=batch.outcomes,
                    response_requested=batch.trigger_response,
                )
            )

    def _forget(self, call_id: str) -> None:
        call = self._calls.pop(call_id, None)
        if call is not None and call.item_id is not None:
            self._by_item.pop(call.item_id, None)

    # --- one call (an owned task) -----------------------------------------------------------------

    async def _run(self, call: _Call) -> None:
        target = call.snapshot.lookup(call.name)
        try:
            if target is None:
                outcome = self._error_outcome(
                    call,
                    f"the model called {call.name!r}, which is not a tool of agent "
                    f"{call.snapshot.agent.name!r}",
                    model_text=f"There is no tool named {call.name}.",
                )
            elif isinstance(target, ResolvedHandoff):
                outcome = await self._hand_off(call, target)
            else:
                outcome = await self._executor.execute(
                    target, call.call_id, call.arguments, call.snapshot.agent, call.history
                )
        except Exception as exc:  # a bug of ours: still answer the model, and report it
            outcome = self._error_outcome(
                call, f"running tool call {call.call_id} failed: {exc!r}", exc=exc
            )
        await self._deliver(call, outcome)

    def _error_outcome(
        self,
        call: _Call,
        message: str,
        *,
        model_text: str | None = None,
        exc: BaseException | None = None,
        source: ev.ErrorSource = "tool",
    ) -> CallOutcome:
        self._host.emit(ev.ErrorEvent(message=message, source=source, exception=exc))
        return CallOutcome(
            call_id=call.call_id,
            name=call.name,
            arguments=call.arguments,
            output=model_text if model_text is not None else message,
            is_error=True,
        )

    async def _hand_off(self, call: _Call, target: ResolvedHandoff) -> CallOutcome:
        try:
            await self._host.hand_off(call.call_id, target, call.snapshot)
        except SessionClosed:
            raise
        except Exception as exc:
            return self._error_outcome(
                call,
                f"the handoff from {call.snapshot.agent.name!r} to {target.target.name!r} "
                f"failed: {exc!r}",
                model_text=f"The transfer to {target.target.name} failed: {exc}. Carry on "
                "with the user yourself.",
                exc=exc,
                source="agent",
            )
        return CallOutcome(
            call_id=call.call_id,
            name=call.name,
            arguments=call.arguments,
            output=format_output({"assistant": target.target.name}),
        )

    # --- delivery ---------------------------------------------------------------------------------

    def _queue_output(self, call: _Call) -> None:
        assert call.outcome is not None
        call.attempts += 1
        event_id, item_id = self._host.send_output(call.call_id, call.outcome.output, call.item_id)
        call.item_id = item_id
        self._by_item[item_id] = call
        self._by_event[event_id] = call

    async def _deliver(self, call: _Call, outcome: CallOutcome) -> None:
        """Send the output until it is handed to the connection (the acknowledgement comes as
        an event). The output is fixed here: a retry sends the same text."""
        if self._observer is not None and not outcome.failed:
            await self._observer.output_ready(call.call_id, outcome.output)
        call.outcome = outcome
        self._batches.call_finished(outcome)
        if outcome.failed:  # no output is sent: the call counts as answered
            self._delivered(call)
            self._follow_up()
            return
        while True:
            try:
                self._queue_output(call)
                await self._host.flush()
                return
            except SessionClosed:
                return  # the connection is gone; the output stays with the call, unsent
            except Exception as exc:
                if call.delivered:
                    return
                if call.attempts >= self._attempts:
                    self._give_up(call, repr(exc))
                    self._follow_up()
                    return
                await asyncio.sleep(self._retry_delay_s * call.attempts)
                if call.delivered:
                    return
