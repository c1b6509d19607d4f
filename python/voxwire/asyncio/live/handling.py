"""What a :class:`~voxwire.asyncio.live.LiveSession` does with each server event: transcripts
(the user's at once, the assistant's as heard), history, delegations, usage, errors, output
guardrails.

A mixin of ``LiveSession`` (as ``reading.py`` is of ``RealtimeSession``): the attributes are
the session's; this module keeps ``session.py`` to its parts, its application side and its
audio path. Events are dispatched by type to a method name (:data:`_HANDLERS`), so the audio
handler can stay beside the audio path in ``session.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal

import msgspec

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent
from voxwire.asyncio.live.agents.delegation import ClientWork, ResponsesWork
from voxwire.asyncio.live.agents.guarding import LiveInputGuard
from voxwire.asyncio.live.audio.playback import LivePlayback
from voxwire.asyncio.live.events import (
    DelegationStartedEvent,
    LiveGuardrailTrippedEvent,
    LiveHistoryItem,
    LiveTranscriptEvent,
    LiveUsageEvent,
)
from voxwire.asyncio.live.recording import LiveRecording
from voxwire.asyncio.live.replies import Replies
from voxwire.asyncio.live.spans import LiveSpans
from voxwire.asyncio.observability.pricing import LivePricing
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.live import LiveProtocol
from voxwire.live import server_events as se
from voxwire.protocol.server_events import ProtocolErrorEvent

__all__ = ["LiveHandling"]

_SENTENCE_END: Final = re.compile(r"[.!?…]\s*$")
_INPUT_NOTE: Final = (
    "The user's last request broke a rule ({names}). Do not act on it and do not answer it."
)
_GUARDRAIL_NOTE: Final = (
    "Your last words broke a rule ({names}) and were not played. Do not repeat them; "
    "say briefly that you cannot help with that."
)


class LiveHandling:
    """The event-handling half of :class:`~voxwire.asyncio.live.LiveSession`."""

    # Set up by LiveSession.
    agent: RealtimeAgent
    protocol: LiveProtocol
    _tasks: OwnedTasks
    _responses: ResponsesWork | None
    _client: ClientWork | None
    _playback: LivePlayback
    replies: Replies
    _history: list[LiveHistoryItem]
    _usage: tuple[float, float | None]  # seconds, context usage ratio
    _pricing: LivePricing
    _delegations_started: int
    _recording: LiveRecording
    _restored: int  # history items of a resumed conversation (never merged into)
    _guard: LiveInputGuard
    _spans: LiveSpans
    _refusal_id: str | None  # the refusal commentary's event id, until the server has it
    _spoken: str
    _checked: int
    _silenced: bool

    emit: Callable[[Any], None]
    flush: Callable[[], Awaitable[None]]

    def _on_event(self, event: se.LiveReceivedEvent) -> None:
        name = _HANDLERS.get(type(event))
        if name is not None:
            getattr(self, name)(event)

    def _on_assistant_words(self, event: se.OutputTranscriptDelta) -> None:
        self._guard.turn_over()
        if self._silenced:
            return
        self._spoken += event.delta
        self._check_guardrails()
        self._playback.assistant_words(event)

    def _on_user_words(self, event: se.InputTranscriptDelta) -> None:
        new_turn = not self._history or self._history[-1].role != "user"
        self._guard.user_words(event.delta, new_turn)
        self._spans.user_words(event.delta, new_turn)
        if not self._guard.tripped:  # a tripped turn stays silenced while the user goes on
            self._silenced = False
        self._spoken, self._checked = "", 0
        self._playback.user_speech(event)
        self._remember("user", event.delta, event.start_ms, event.end_ms)
        self.emit(
            LiveTranscriptEvent(
                role="user", delta=event.delta, start_ms=event.start_ms, end_ms=event.end_ms
            )
        )

    def _on_delegation(self, event: se.DelegationCreated) -> None:
        info = event.delegation
        self._guard.turn_over()
        self._spans.delegation_created(info.id, info.target)
        self._delegations_started += 1
        self._recording.delegation(msgspec.to_builtins(info))
        self.emit(
            DelegationStartedEvent(
                delegation_id=info.id, target=info.target, offset_ms=event.offset_ms
            )
        )
        delegation = self.protocol.delegations.get(info.id)
        if info.target == "client" and self._client is not None and delegation is not None:
            said = " ".join(item.text for item in self._history if item.role == "user")
            self._client.start(delegation, said)

    def _on_backend(self, event: se.ResponseEvent) -> None:
        item = event.event.get("item")
        if (
            event.event.get("type") == "response.output_item.done"
            and isinstance(item, dict)
            and item.get("type") == "function_call"
        ):
            owner = self.protocol.delegations.get(event.delegation_id or "")
            self._recording.backend_item(item, owner.response_id if owner else None)
        delegation = self.protocol.delegations.get(event.delegation_id or "")
        if delegation is not None:
            self._spans.delegation_ended(delegation)
        if self._responses is not None:
            for delegation in self.protocol.delegations.open():
                self._responses.check(delegation)

    def _on_usage(self, event: se.SessionUsageUpdated) -> None:
        ratio = event.context_window.usage_ratio if event.context_window else None
        self._usage = (event.usage.seconds, ratio)
        usage = event.usage
        self._recording.billed(usage.seconds)
        self.emit(
            LiveUsageEvent(
                seconds=usage.seconds,
                context_usage_ratio=ratio,
                active_seconds=usage.active_seconds,
                standby_seconds=usage.paused_seconds,
                estimated_cost_usd=self._pricing.cost(usage),
            )
        )

    def _on_error(self, event: se.LiveErrorEvent) -> None:
        self.replies.on_error(event)
        self.emit(
            ev.ErrorEvent(
                message=event.error.message,
                source="server",
                code=event.error.code,
                param=event.error.param,
                event_id=event.error.client_event_id,
            )
        )

    def _on_protocol_error(self, event: ProtocolErrorEvent) -> None:
        self.emit(ev.ErrorEvent(message=event.message, source="protocol"))

    def _on_closed(self, event: se.SessionClosed) -> None:
        self._usage = (event.usage.seconds, self._usage[1])
        self._pricing.cost(event.usage)
        self._recording.billed(event.usage.seconds)

    # --- heard transcripts, history, guardrails ------------------------------------------------

    def _heard(self, delta: str, start_ms: int, end_ms: int) -> None:
        self._spans.heard(delta)
        self._remember("assistant", delta, start_ms, end_ms)
        self.emit(
            LiveTranscriptEvent(role="assistant", delta=delta, start_ms=start_ms, end_ms=end_ms)
        )

    def _remember(
        self, role: Literal["user", "assistant"], delta: str, start_ms: int, end_ms: int
    ) -> None:
        last = self._history[-1] if len(self._history) > self._restored else None
        if last is not None and last.role == role and last.truncated_at_ms is None:
            self._history[-1] = LiveHistoryItem(role, last.text + delta, last.start_ms, end_ms)
        else:
            self._history.append(LiveHistoryItem(role, delta, start_ms, end_ms))
        self._recording.said(len(self._history) - 1, self._history[-1])

    def _truncated(self, at_ms: int) -> None:
        """The assistant's audio was cut at ``at_ms``: its history item (if any of it was
        heard) ends there, and what the model says next starts a new one."""
        index = len(self._history) - 1
        last = self._history[-1] if index >= self._restored else None
        if last is not None and last.role == "assistant" and last.truncated_at_ms is None:
            self._history[-1] = dataclasses.replace(last, truncated_at_ms=at_ms)
            self._recording.said(index, self._history[-1])

    def _check_guardrails(self) -> None:
        guardrails = self.agent.output_guardrails
        if (
            not guardrails
            or not _SENTENCE_END.search(self._spoken)
            or len(self._spoken) == self._checked
        ):
            return
        self._checked = len(self._spoken)
        self._tasks.spawn(
            self._run_guardrails(self._spoken), name="live guardrails", kind="guardrail"
        )

    async def _run_guardrails(self, text: str) -> None:
        checks = self.agent.output_guardrails
        results = await asyncio.gather(*(g.run(self.agent, text) for g in checks))
        tripped = [
            (g.name, r) for g, r in zip(checks, results, strict=True) if r.tripwire_triggered
        ]
        if not tripped or self._silenced or self.protocol.state != "active":
            return
        self._silence()
        names = tuple(name for name, _ in tripped)
        self.emit(
            LiveGuardrailTrippedEvent(
                transcript=text, guardrails=names, results=tuple(r for _, r in tripped)
            )
        )
        self.protocol.send_instructions(_GUARDRAIL_NOTE.format(names=", ".join(names)))
        await self.flush()

    async def input_tripped(self, names: tuple[str, ...], refusal: str | None) -> None:
        """The user's turn tripped the input guardrails (``guarding.py``): silence the answer,
        tell the model, ask it to say the refusal (heard again once the server has it)."""
        self._spans.input_tripped()
        if self.protocol.state != "active":
            return
        self._silence()
        self.protocol.send_instructions(_INPUT_NOTE.format(names=", ".join(names)))
        if refusal:
            self._refusal_id = self.protocol.send_commentary(refusal)
        await self.flush()

    def _on_commentary(self, event: se.CommentaryAppended) -> None:
        if self._refusal_id is not None and event.client_event_id == self._refusal_id:
            self._refusal_id, self._silenced = None, False  # the model says the refusal now

    def _silence(self) -> None:
        """Drop what the model says until the user speaks again (a guardrail tripped)."""
        self._silenced = True
        self._playback.cut()


#: Server event class -> the session's method for it (by name: ``_on_audio`` is
#: ``session.py``'s); the others change nothing here.
_HANDLERS: Final[dict[type, str]] = {
    se.OutputAudioDelta: "_on_audio",
    se.OutputTranscriptDelta: "_on_assistant_words",
    se.InputTranscriptDelta: "_on_user_words",
    se.DelegationCreated: "_on_delegation",
    se.ResponseEvent: "_on_backend",
    se.SessionUsageUpdated: "_on_usage",
    se.LiveErrorEvent: "_on_error",
    ProtocolErrorEvent: "_on_protocol_error",
    se.SessionClosed: "_on_closed",
    se.CommentaryAppended: "_on_commentary",
    se.SessionUpdated: "_on_session_updated",
    se.DecisionEvent: "_on_decision",
    se.DecisionItemCreated: "_on_decision",
    se.DecisionItemDeleted: "_on_decision",
}
