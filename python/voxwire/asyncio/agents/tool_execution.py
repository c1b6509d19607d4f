"""One function call, from its arguments to the outcome the model gets (for
:class:`~voxwire.asyncio.agents.tools.ToolRunner`, which starts calls and delivers outputs).

The steps, in order; each may end the call with a message instead of running the tool:

1. the arguments are parsed and checked against the tool's parameters;
2. input guardrails marked ``before_approval`` run; a trip rejects the call
   (``tool_guardrail_tripped``, and the guardrail's message as the output);
3. approval, if the tool needs it (:class:`Approvals`: ``tool_approval_requested``, then
   ``approve`` / ``reject``; a sticky ``always`` decision answers later calls of the tool);
4. the other input guardrails;
5. ``tool_start``, the function under its timeout — an async generator's
   :func:`~voxwire.agents.progress` values go out as they come (``tool_progress``) and its
   first other value is the result —, the output guardrails over the result, ``tool_end``.

Every error message follows one precedence (:func:`~voxwire.agents.tool_guardrail.error_message`):
the per-call message, the session's ``tool_error_formatter``, the default. A timeout with
``on_timeout="raise"`` sends no output at all: the outcome is ``failed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import Any, Protocol

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent
from voxwire.agents.batch import CallOutcome
from voxwire.agents.guardrail import GuardrailResult
from voxwire.agents.tool import (
    BackgroundResult,
    FunctionTool,
    ToolArgumentsError,
    ToolCall,
    ToolContext,
    ToolProgress,
    ToolTimeoutError,
    default_failure,
    default_timeout,
    format_output,
    needs_approval,
)
from voxwire.agents.tool_guardrail import ToolErrorFormatter, ToolErrorInfo, error_message
from voxwire.asyncio.supervisor import UserCodeTimeout, run_user_code
from voxwire.exceptions import InvalidState

__all__ = ["Approvals", "CallExecutor", "ExecutionHost"]

_Work = Coroutine[Any, Any, GuardrailResult]
_Check = tuple[str, Callable[[], _Work]]


def agent_of(call: ToolCall) -> RealtimeAgent:
    """The agent of a call the session made (always a ``RealtimeAgent``: the runner builds the
    call; :class:`~voxwire.agents.ToolCall` types it as the narrower ``AgentView``)."""
    agent = call.agent
    assert isinstance(agent, RealtimeAgent)
    return agent


class ExecutionHost(Protocol):
    """What a call needs of the session."""

    def emit(self, event: ev.SessionEvent) -> None: ...

    def tool_span(self, name: str, call_id: str) -> contextlib.AbstractContextManager[Any]: ...

    async def send_progress(self, call_id: str, name: str, text: str, respond: bool) -> None:
        """Add an interim output to the conversation (and ask for a response if
        ``respond``); dropped while the session is not open."""


class Approvals:
    """Calls waiting for ``approve`` / ``reject``, and the sticky decisions."""

    def __init__(self, on_pending: Callable[[str, str, str], None] | None = None) -> None:
        self._waiting: dict[str, tuple[str, asyncio.Future[tuple[bool, str | None]]]] = {}
        self._sticky: dict[str, bool] = {}
        self._on_pending = on_pending  # (call id, name, arguments): the store records it

    @property
    def pending(self) -> tuple[str, ...]:
        return tuple(self._waiting)

    def answer(self, call_id: str, approved: bool, message: str | None, always: bool) -> None:
        entry = self._waiting.get(call_id)
        if entry is None:
            waiting = ", ".join(self._waiting) or "none"
            raise InvalidState(
                f"no tool call {call_id!r} is waiting for approval (waiting: {waiting}); answer "
                "the call_id of a tool_approval_requested event, once"
            )
        name, future = entry
        if always:
            self._sticky[name] = approved
        if not future.done():
            future.set_result((approved, message))

    async def ask(
        self, tool: FunctionTool, request: ToolCall, emit: Callable[[ev.SessionEvent], None]
    ) -> tuple[bool, str | None]:
        """``(approved, per-call message)``; asks the application only when it must."""
        if not await needs_approval(tool, request):
            return True, None
        sticky = self._sticky.get(request.name)
        if sticky is not None:
            return sticky, None
        future: asyncio.Future[tuple[bool, str | None]] = asyncio.get_running_loop().create_future()
        self._waiting[request.call_id] = (request.name, future)
        if self._on_pending is not None:
            self._on_pending(request.call_id, request.name, request.raw_arguments)
        emit(
            ev.ToolApprovalRequestedEvent(
                call_id=request.call_id,
                name=request.name,
                arguments=request.raw_arguments,
                agent=agent_of(request),
            )
        )
        try:
            return await future
        finally:
            self._waiting.pop(request.call_id, None)


class _Stop(Exception):
    """A step ended the call: ``outcome`` is what the model gets."""

    def __init__(self, outcome: CallOutcome) -> None:
        super().__init__(outcome.output)
        self.outcome = outcome


class CallExecutor:
    """Runs the steps of one call (see the module docstring)."""

    def __init__(
        self,
        host: ExecutionHost,
        approvals: Approvals,
        *,
        rejection_message: str,
        error_formatter: ToolErrorFormatter | None,
        context: Any,
    ) -> None:
        self._host = host
        self._approvals = approvals
        self._rejection_message = rejection_message
        self._formatter = error_formatter
        self._context = context

    async def execute(
        self,
        tool: FunctionTool,
        call_id: str,
        raw_arguments: str,
        agent: RealtimeAgent,
        history: tuple[Any, ...],
    ) -> CallOutcome:
        try:
            arguments = tool.parse_arguments(raw_arguments)
        except ToolArgumentsError as exc:
            self._host.emit(
                ev.ErrorEvent(
                    message=f"tool {tool.name!r} was called with bad arguments: {exc}",
                    source="tool",
                    exception=exc,
                )
            )
            return CallOutcome(
                call_id=call_id,
                name=tool.name,
                arguments=raw_arguments,
                output=f"Invalid arguments for {tool.name}: {exc}. Call it again with arguments "
                "that fit its parameters.",
                is_error=True,
            )
        request = ToolCall(
            call_id=call_id,
            name=tool.name,
            arguments=arguments,
            raw_arguments=raw_arguments,
            agent=agent,
        )
        try:
            await self._check_input(tool, request, before_approval=True)
            await self._approve(tool, request)
            await self._check_input(tool, request, before_approval=False)
        except _Stop as stop:
            return stop.outcome
        context: ToolContext[Any] = ToolContext(
            call=request, context=self._context, history=history
        )
        return await self._run_tool(tool, request, context)

    # --- before the tool runs ---------------------------------------------------------------------

    async def _approve(self, tool: FunctionTool, request: ToolCall) -> None:
        approved, message = await self._approvals.ask(tool, request, self._host.emit)
        if approved:
            return
        info = ToolErrorInfo(kind="rejected", call=request, default_message=self._rejection_message)
        raise _Stop(_outcome_of(request, self._message(message, info)))

    async def _check_input(
        self, tool: FunctionTool, request: ToolCall, *, before_approval: bool
    ) -> None:
        checks = [
            (g.name, functools.partial(g.run, request))
            for g in tool.input_guardrails
            if g.before_approval == before_approval
        ]
        tripped = await self._first_trip(checks)
        if tripped is None:
            return
        guardrail, result = tripped
        self._tripped(request, guardrail, result, None)
        raise _Stop(_outcome_of(request, self._guardrail_text(request, guardrail, result)))

    async def _first_trip(self, checks: Sequence[_Check]) -> tuple[str, GuardrailResult] | None:
        """Run the checks concurrently: the first (in order) that tripped, by name."""

        async def one(name: str, check: Callable[[], _Work]) -> GuardrailResult:
            try:
                return await run_user_code(check(), name=f"voxwire-client-tool-guardrail-{name}")
            except Exception as exc:
                self._host.emit(
                    ev.ErrorEvent(
                        message=f"tool guardrail {name!r} raised {exc!r}; it counts as not tripped",
                        source="guardrail",
                        exception=exc,
                    )
                )
                return GuardrailResult(tripwire_triggered=False)

        results = await asyncio.gather(*(one(name, check) for name, check in checks))
        for (name, _), result in zip(checks, results, strict=True):
            if result.tripwire_triggered:
                return name, result
        return None

    def _tripped(
        self, request: ToolCall, guardrail: str, result: GuardrailResult, output: str | None
    ) -> None:
        """Report a tool guardrail's trip (``output``: what an output guardrail withheld)."""
        self._host.emit(
            ev.ToolGuardrailTrippedEvent(
                call_id=request.call_id,
                name=request.name,
                agent=agent_of(request),
                guardrail=guardrail,
                stage="input" if output is None else "output",
                result=result,
                output=output,
            )
        )

    def _guardrail_text(self, request: ToolCall, guardrail: str, result: GuardrailResult) -> str:
        info = ToolErrorInfo(
            kind="guardrail",
            call=request,
            default_message=f"The guardrail {guardrail} blocked this call of {request.name}; "
            "its result is not available.",
            guardrail=guardrail,
        )
        return self._message(result.message, info)

    def _message(self, per_call: str | None, info: ToolErrorInfo) -> str:
        """The error text; a formatter that fails is reported and the default used."""
        try:
            return error_message(per_call, self._formatter, info)
        except Exception as exc:
            self._host.emit(
                ev.ErrorEvent(
                    message=f"tool_error_formatter raised {exc!r}; the default message was used",
                    source="tool",
                    exception=exc,
                )
            )
            return info.default_message

    # --- the tool ---------------------------------------------------------------------------------

    async def _run_tool(
        self, tool: FunctionTool, request: ToolCall, context: ToolContext[Any]
    ) -> CallOutcome:
        """``tool_start``, the function under its timeout, output guardrails, ``tool_end`` (and
        an ``error`` event when it failed): the outcome the model gets."""
        emit = self._host.emit
        emit(
            ev.ToolStartEvent(
                call_id=request.call_id,
                name=request.name,
                arguments=request.raw_arguments,
                agent=agent_of(request),
            )
        )
        error: BaseException | None = None
        trigger, failed = True, False
        try:
            with self._host.tool_span(request.name, request.call_id):
                value = await self._invoke(tool, request, context)
        except ToolTimeoutError as exc:
            error, failed = exc, tool.on_timeout == "raise"
            output = "" if failed else self._timeout_text(tool, request, exc)
        except Exception as exc:
            error, output = exc, self._failure_text(tool, request, exc)
        else:
            if isinstance(value, BackgroundResult):
                trigger, value = False, value.output
            output = await self._checked_output(tool, request, format_output(value))
        emit(
            ev.ToolEndEvent(
                call_id=request.call_id,
                name=request.name,
                arguments=request.raw_arguments,
                agent=agent_of(request),
                output=output,
                error=error,
            )
        )
        if error is not None:
            self._report(request, error, failed)
        return _outcome_of(
            request,
            output,
            is_error=error is not None,
            trigger=trigger and not failed,
            failed=failed,
        )

    def _report(self, request: ToolCall, error: BaseException, failed: bool) -> None:
        what = "timed out" if isinstance(error, ToolTimeoutError) else f"raised {error!r}"
        if failed:
            what += "; no output was sent (on_timeout='raise'): the call failed"
        self._host.emit(
            ev.ErrorEvent(
                message=f"tool {request.name!r} (call {request.call_id}) {what}",
                source="tool",
                exception=error,
            )
        )

    def _failure_text(self, tool: FunctionTool, request: ToolCall, exc: Exception) -> str:
        per_call = tool.failure_message(request, exc) if tool.failure_message else None
        info = ToolErrorInfo(
            kind="exception",
            call=request,
            error=exc,
            default_message=default_failure(request, exc),
        )
        return self._message(per_call, info)

    def _timeout_text(self, tool: FunctionTool, request: ToolCall, exc: ToolTimeoutError) -> str:
        assert tool.timeout_s is not None
        message_for = tool.timeout_message
        per_call = (
            message_for
            if isinstance(message_for, str) or message_for is None
            else message_for(request, tool.timeout_s)
        )
        info = ToolErrorInfo(
            kind="timeout",
            call=request,
            error=exc,
            default_message=default_timeout(request, tool.timeout_s),
        )
        return self._message(per_call, info)

    async def _checked_output(self, tool: FunctionTool, request: ToolCall, output: str) -> str:
        """The output, or the message of the first output guardrail that withheld it."""
        checks = [
            (g.name, functools.partial(g.run, request, output)) for g in tool.output_guardrails
        ]
        tripped = await self._first_trip(checks)
        if tripped is None:
            return output
        guardrail, result = tripped
        self._tripped(request, guardrail, result, output)
        return self._guardrail_text(request, guardrail, result)

    async def _invoke(
        self, tool: FunctionTool, request: ToolCall, context: ToolContext[Any]
    ) -> Any:
        args, kwargs = tool.call_args(request.arguments, context)
        if tool.is_generator:
            work: Coroutine[Any, Any, Any] = self._drive(tool.function(*args, **kwargs), request)
        elif tool.is_coroutine:
            work = tool.function(*args, **kwargs)
        else:
            work = _in_thread(tool.function, *args, **kwargs)
        try:
            return await run_user_code(
                work, name=f"voxwire-client-tool-{tool.name}-run", timeout_s=tool.timeout_s
            )
        except UserCodeTimeout as exc:
            assert tool.timeout_s is not None
            raise ToolTimeoutError(
                f"tool {tool.name!r} did not finish within {tool.timeout_s:g} s"
            ) from exc

    async def _drive(self, generator: AsyncIterator[Any], request: ToolCall) -> Any:
        """An async generator tool: progress out as it comes, the first other value is the
        result (the generator is closed then)."""
        try:
            async for value in generator:
                if not isinstance(value, ToolProgress):
                    return value
                text = format_output(value.output)
                self._host.emit(
                    ev.ToolProgressEvent(
                        call_id=request.call_id,
                        name=request.name,
                        agent=agent_of(request),
                        output=text,
                    )
                )
                await self._host.send_progress(request.call_id, request.name, text, value.respond)
        finally:
            aclose = getattr(generator, "aclose", None)
            if aclose is not None:
                await aclose()
        raise RuntimeError(
            f"tool {request.name!r} ended without a result: yield the result after its "
            "progress(...) values"
        )


def _outcome_of(
    request: ToolCall,
    output: str,
    *,
    is_error: bool = False,
    trigger: bool = True,
    failed: bool = False,
) -> CallOutcome:
    return CallOutcome(
        call_id=request.call_id,
        name=request.name,
        arguments=request.raw_arguments,
        output=output,
        is_error=is_error,
        trigger_response=trigger,
        failed=failed,
    )


async def _in_thread(function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    result = await asyncio.to_thread(function, *args, **kwargs)
    if isinstance(result, Awaitable):  # a plain function that returned a coroutine
        return await result
    return result
