"""``GuardrailRunner``: runs the active agent's output guardrails over what the assistant says.

The session hands it every wire event (synchronous, from the receive loop). Assistant
transcript deltas (audio transcripts and text) grow a transcript per item;
:class:`~voxwire.agents.TranscriptWatch` says when it is time to check (every
``debounce_chars`` new characters, and once when the transcript is complete). Each check is a
task owned by the session's :class:`~voxwire.asyncio.supervisor.OwnedTasks` running all the
agent's guardrails concurrently over one snapshot of the text.

A guardrail that raises is reported (``error`` event, ``source="guardrail"``) and counts as not
tripped. When guardrails trip, :class:`~voxwire.agents.TripLatch` lets the first check for the
response act and ignores the rest — checks overlap, and a response must be cut, reported and
retried once. Acting is the session's part (:meth:`GuardrailHost.trip`): it is synchronous, so
the response is marked interrupted before anything awaits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Protocol

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent, ResolvedAgent
from voxwire.agents.guardrail import (
    DEFAULT_DEBOUNCE_CHARS,
    GuardrailResult,
    OutputGuardrail,
    TranscriptWatch,
    TripLatch,
)
from voxwire.agents.input_guardrail import InputGuardrail
from voxwire.asyncio.errors import SessionClosed
from voxwire.asyncio.supervisor import OwnedTasks, run_user_code
from voxwire.protocol import server_events as se

__all__ = ["GuardrailHost", "GuardrailRunner", "run_guardrails"]


class GuardrailHost(Protocol):
    """What the runner needs of the session."""

    def emit(self, event: ev.SessionEvent) -> None: ...

    def is_out_of_band(self, response_id: str) -> bool: ...

    def trip(self, event: ev.GuardrailTrippedEvent) -> None:
        """Cut the response, report ``event``, queue the feedback and the gated retry
        (synchronous: nothing awaits before the response is marked interrupted)."""

    async def flush(self) -> None: ...


class GuardrailRunner:
    """Checks for one session (see the module docstring)."""

    def __init__(
        self,
        host: GuardrailHost,
        tasks: OwnedTasks,
        agent: Callable[[], ResolvedAgent | None],
        *,
        debounce_chars: int | None = DEFAULT_DEBOUNCE_CHARS,
    ) -> None:
        self._host = host
        self._tasks = tasks
        self._agent = agent
        self._watch = TranscriptWatch(debounce_chars)
        self._latch = TripLatch()

    def tripped(self, response_id: str) -> bool:
        return self._latch.tripped(response_id)

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        if isinstance(event, se.ResponseOutputAudioTranscriptDelta | se.ResponseOutputTextDelta):
            if self._skip(event.response_id):
                return
            text = self._watch.delta(event.item_id, event.delta)
        elif isinstance(event, se.ResponseOutputAudioTranscriptDone):
            if self._skip(event.response_id):
                self._watch.forget(event.item_id)
                return
            text = self._watch.done(event.item_id, event.transcript)
        elif isinstance(event, se.ResponseOutputTextDone):
            if self._skip(event.response_id):
                self._watch.forget(event.item_id)
                return
            text = self._watch.done(event.item_id, event.text)
        else:
            return
        snapshot = self._agent()
        if text is None or snapshot is None:
            return
        guardrails = snapshot.agent.output_guardrails
        self._tasks.spawn(
            self._check(event.response_id, event.item_id, text, snapshot.agent, guardrails),
            name=f"voxwire-client-guardrail-{event.item_id}",
            kind="guardrail",
        )

    def _skip(self, response_id: str) -> bool:
        snapshot = self._agent()
        return (
            snapshot is None
            or not snapshot.agent.output_guardrails
            or self._latch.tripped(response_id)
            or self._host.is_out_of_band(response_id)
        )

    async def _check(
        self,
        response_id: str,
        item_id: str,
        text: str,
        agent: RealtimeAgent,
        guardrails: Sequence[OutputGuardrail],
    ) -> None:
        tripped = await run_guardrails(guardrails, agent, text, self._host.emit, "output")
        # The latch is checked and set with no await in between: one check acts per response.
        if not tripped or not self._latch.trip(response_id):
            return
        self._host.trip(
            ev.GuardrailTrippedEvent(
                response_id=response_id,
                item_id=item_id,
                transcript=text,
                guardrails=tuple(name for name, _ in tripped),
                results=tuple(result for _, result in tripped),
            )
        )
        try:
            await self._host.flush()
        except SessionClosed:
            return


async def run_guardrails(
    guardrails: Sequence[OutputGuardrail | InputGuardrail],
    agent: RealtimeAgent,
    text: str,
    emit: Callable[[ev.SessionEvent], None],
    kind: str,
) -> list[tuple[str, GuardrailResult]]:
    """Run ``guardrails`` concurrently over ``text``: the ones that tripped, in order, with
    their results. One that raises is reported (``error``, ``source="guardrail"``) and counts
    as not tripped. ``kind`` ("input", "output") names them in that report."""

    async def one(guardrail: OutputGuardrail | InputGuardrail) -> GuardrailResult | None:
        try:
            return await run_user_code(
                guardrail.run(agent, text), name=f"voxwire-client-guardrail-{guardrail.name}"
            )
        except Exception as exc:
            emit(
                ev.ErrorEvent(
                    message=f"{kind} guardrail {guardrail.name!r} raised {exc!r}; it counts as "
                    "not tripped",
                    source="guardrail",
                    exception=exc,
                )
            )
            return None

    results = await asyncio.gather(*(one(g) for g in guardrails))
    return [
        (guardrail.name, result)
        for guardrail, result in zip(guardrails, results, strict=True)
        if result is not None and result.tripwire_triggered
    ]
