"""OpenTelemetry spans of a GPT-Live session, on the Realtime session's
:class:`~voxwire.asyncio.observability.tracing.SessionTracer` (``kind="live"``; nothing is
recorded without ``opentelemetry-api`` or with ``tracing_disabled``):

* ``voxwire.live.session`` — connect to close: the agent, the model, the delegation mode, the
  Live session id (the last fork's after a reconnection), the close reason (an error status
  when the connection was lost for good);
* ``voxwire.live.turn`` — from the user's first words of a turn until the next turn starts:
  ``voxwire.turn.user_text`` (what was recognised) and ``voxwire.turn.assistant_heard`` (what
  the listener heard of the answer); ended early, with an error status, when the turn trips
  the input guardrails;
* ``voxwire.live.delegation`` — a child of the turn it came from: id and target, ended when the
  Responses backend finished (``voxwire.delegation.status``: completed, failed …), when the
  application's backend answered, or as ``abandoned`` when the connection was lost;
* ``voxwire.live.tool`` — each function call run for a delegation, a child of it (the same span
  ``RealtimeSession`` makes around a call: current while the tool runs, an exception recorded);
* ``voxwire.live.reconnect`` — each reconnection: the lost session, the attempts, the fork.
"""

from __future__ import annotations

from typing import Any

from voxwire.asyncio.observability.tracing import SessionTracer
from voxwire.live import Delegation

__all__ = ["LiveSpans"]


class LiveSpans:
    """The spans of one Live session (see the module docstring)."""

    def __init__(self, tracer: SessionTracer) -> None:
        self.tracer = tracer
        self._turns = 0
        self._user = ""
        self._heard = ""
        self._reconnects = 0

    def started(self, **attributes: Any) -> None:
        self.tracer.session_started(**attributes)

    def ended(self, reason: str, error: BaseException | None) -> None:
        self._end_turn()
        self.tracer.session_ended(reason, error)

    def user_words(self, delta: str, new_turn: bool) -> None:
        if not self.tracer.enabled:
            return
        if new_turn or not self._turns:
            self._end_turn()
            self._turns += 1
            self._user, self._heard = "", ""
            self.tracer.begin("turn", self._turn_key, None, {"voxwire.turn.index": self._turns})
        self._user += delta

    def heard(self, delta: str) -> None:
        self._heard += delta

    def input_tripped(self) -> None:
        if self._turns:
            self.tracer.end(self._turn_key, "input guardrail tripped", self._turn_attributes())

    def delegation_created(self, delegation_id: str, target: str) -> None:
        self.tracer.begin(
            "delegation",
            delegation_id,
            self._turn_key if self._turns else None,
            {"voxwire.delegation.id": delegation_id, "voxwire.delegation.target": target},
        )

    def delegation_ended(self, delegation: Delegation) -> None:
        """End the delegation's span once it is no longer open (its backend finished, it was
        answered, or abandoned)."""
        if delegation.status == "open":
            return
        error = None if delegation.status in ("completed", "answered") else delegation.status
        self.tracer.end(delegation.id, error, {"voxwire.delegation.status": delegation.status})

    def delegation_answered(self, delegation_id: str, spoken: bool) -> None:
        status = "answered" if spoken else "answered_silently"
        self.tracer.end(delegation_id, None, {"voxwire.delegation.status": status})

    def reconnect_started(self, lost_session: str) -> str:
        self._reconnects += 1
        key = f"reconnect-{self._reconnects}"
        self.tracer.begin(
            "reconnect", key, None, {"voxwire.reconnect.lost_session_id": lost_session}
        )
        return key

    @property
    def _turn_key(self) -> str:
        return f"turn-{self._turns}"

    def _turn_attributes(self) -> dict[str, Any]:
        return {"voxwire.turn.user_text": self._user, "voxwire.turn.assistant_heard": self._heard}

    def _end_turn(self) -> None:
        if self._turns:
            self.tracer.end(self._turn_key, None, self._turn_attributes())
