"""When the calls of one response are answered: the bookkeeping behind the follow-up.

The model may call several tools in one response. Their outputs go back as they finish, but
the model should speak once, about all of them: one ``response.create`` after the response is
done *and* every one of its calls has an output the server acknowledged (an output the server
rejected is sent again first, so the follow-up never runs without it). :class:`ToolBatches`
decides when that is; the session does the sending.

A response that ended ``cancelled`` (the user interrupted it) gets its outputs but no
follow-up: the conversation moved on, and whatever answers next sees the outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CallOutcome", "ReadyBatch", "ToolBatches"]


@dataclass(frozen=True, kw_only=True, slots=True)
class CallOutcome:
    """What one call produced: the output the model sees and how it came about."""

    call_id: str
    name: str
    arguments: str
    output: str
    is_error: bool = False
    trigger_response: bool = True
    """``False`` for a background result (or an output that could not be delivered)."""
    failed: bool = False
    """No output was sent: the tool timed out with ``on_timeout="raise"`` (``output`` is
    empty)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ReadyBatch:
    """Every call of ``response_id`` is answered; ``trigger_response``: ask for the
    follow-up."""

    response_id: str
    outcomes: tuple[CallOutcome, ...]
    trigger_response: bool


@dataclass
class _Batch:
    call_ids: list[str] = field(default_factory=list)
    outcomes: dict[str, CallOutcome] = field(default_factory=dict)
    delivered: set[str] = field(default_factory=set)
    done: bool = False
    cancelled: bool = False

    def ready(self) -> bool:
        return self.done and all(c in self.outcomes and c in self.delivered for c in self.call_ids)


class ToolBatches:
    """Calls grouped by the response that made them (pure bookkeeping)."""

    def __init__(self) -> None:
        self._batches: dict[str, _Batch] = {}
        self._response_of: dict[str, str] = {}

    @property
    def open_calls(self) -> int:
        """Calls not yet answered and acknowledged."""
        return sum(
            1
            for batch in self._batches.values()
            for call_id in batch.call_ids
            if call_id not in batch.delivered
        )

    def call_started(self, response_id: str, call_id: str) -> None:
        batch = self._batches.setdefault(response_id, _Batch())
        if call_id not in batch.call_ids:
            batch.call_ids.append(call_id)
            self._response_of[call_id] = response_id

    def call_finished(self, outcome: CallOutcome) -> None:
        batch = self._batch_of(outcome.call_id)
        if batch is not None:
            batch.outcomes[outcome.call_id] = outcome

    def delivered(self, call_id: str) -> None:
        """The server acknowledged the call's output (or delivery was given up)."""
        batch = self._batch_of(call_id)
        if batch is not None:
            batch.delivered.add(call_id)

    def response_done(self, response_id: str, status: str | None) -> None:
        batch = self._batches.get(response_id)
        if batch is not None:
            batch.done = True
            batch.cancelled = status == "cancelled"

    def pop_ready(self) -> list[ReadyBatch]:
        ready: list[ReadyBatch] = []
        for response_id, batch in list(self._batches.items()):
            if not batch.ready():
                continue
            del self._batches[response_id]
            for call_id in batch.call_ids:
                self._response_of.pop(call_id, None)
            outcomes = tuple(batch.outcomes[c] for c in batch.call_ids)
            ready.append(
                ReadyBatch(
                    response_id=response_id,
                    outcomes=outcomes,
                    trigger_response=not batch.cancelled
                    and any(o.trigger_response for o in outcomes),
                )
            )
        return ready

    def _batch_of(self, call_id: str) -> _Batch | None:
        response_id = self._response_of.get(call_id)
        return self._batches.get(response_id) if response_id is not None else None
