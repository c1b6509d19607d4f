"""``InputGuardrailRunner``: checks what the user said before the agent answers it.

While the active agent has input guardrails (:mod:`voxwire.agents.input_guardrail`), the
session asks for every answer itself:

* a text message sent with ``send_message`` (``trigger_response=True``) is checked at once —
  the check runs while the item travels to the server — and the ``response.create`` goes only
  when no guardrail tripped (:meth:`InputGuardrailRunner.hold_message`);
* a spoken turn, with turn detection on, ends without a response (the session keeps
  ``create_response: false`` on the wire: :class:`~voxwire.agents.input_guardrail.
  ResponseHold`); its final transcript (``input_audio_transcription.completed``) is checked,
  then the response is asked for. Input guardrails over speech need input transcription: a
  turn committed without it, or whose transcription failed, is not answered and an ``error``
  event says why (fail closed — an unchecked turn is never answered).

On a trip: ``input_guardrail_tripped``, and the refusal — a response whose instructions ask to
say the session's ``input_guardrail_refusal`` word for word (``speech_created`` source
``guardrail``), or nothing when it is ``None``. A guardrail that raises is reported (``error``,
``source="guardrail"``) and counts as not tripped, as output guardrails do. Checks are tasks of
the session's :class:`~voxwire.asyncio.supervisor.OwnedTasks`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeAlias

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent, ResolvedAgent
from voxwire.agents.input_guardrail import (
    InputGuardrail,
    transcription_on,
    turn_detection_on,
)
from voxwire.asyncio.agents.guardrails import run_guardrails
from voxwire.asyncio.errors import SessionClosed
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.protocol import server_events as se
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.items import InputText, Item, MessageItem

__all__ = ["InputGuardHost", "InputGuardrailRunner", "Refusal"]

#: The refusal: text to say, ``None`` (silent), or a function of the tripped guardrails' names.
Refusal: TypeAlias = "str | Callable[[Sequence[str]], str | None] | None"


class InputGuardHost(Protocol):
    """What the runner needs of the session."""

    def emit(self, event: ev.SessionEvent) -> None: ...

    def answer(self, item_id: str | None) -> None:
        """Queue the gated ``response.create`` that answers the user's ``item_id`` (source
        ``response``), unless the session took that turn for a false interruption."""

    def refuse(self, text: str) -> None:
        """Queue a gated response that says ``text`` (source ``guardrail``)."""

    async def flush(self) -> None: ...

    def server_config(self) -> SessionConfig | None:
        """The session configuration the server confirmed last."""


class InputGuardrailRunner:
    """Input checks for one session (see the module docstring)."""

    def __init__(
        self,
        host: InputGuardHost,
        tasks: OwnedTasks,
        agent: Callable[[], ResolvedAgent | None],
        *,
        refusal: Refusal,
    ) -> None:
        self._host = host
        self._tasks = tasks
        self._agent = agent
        self._refusal = refusal

    def _guardrails(self) -> tuple[RealtimeAgent, Sequence[InputGuardrail]] | None:
        snapshot = self._agent()
        if snapshot is None or not snapshot.agent.input_guardrails:
            return None
        return snapshot.agent, snapshot.agent.input_guardrails

    def hold_message(self, item: Item) -> bool:
        """``send_message`` is about to ask for a response to ``item``: ``True`` if the runner
        took that over (the active agent has input guardrails and the item is a user message
        with text). Items without text (an image alone) are answered unchecked."""
        if not isinstance(item, MessageItem) or item.role != "user":
            return False
        text = " ".join(part.text for part in item.content if isinstance(part, InputText))
        return bool(text) and self._spawn(item.id, text)

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        if not isinstance(
            event,
            se.InputAudioTranscriptionCompleted
            | se.InputAudioTranscriptionFailed
            | se.InputAudioBufferCommitted,
        ):
            return
        guarded = self._guardrails()
        config = self._host.server_config()
        if guarded is None or not turn_detection_on(config):
            return  # nobody holds this turn's response: the server or the application answers
        if isinstance(event, se.InputAudioTranscriptionCompleted):
            self._spawn(event.item_id, event.transcript)
        elif isinstance(event, se.InputAudioTranscriptionFailed):
            self._unchecked(event.item_id, f"its transcription failed ({event.error.message})")
        elif not transcription_on(config):
            self._unchecked(
                event.item_id,
                "input transcription is off: set audio.input.transcription in the session "
                "config (e.g. {'model': 'gpt-4o-mini-transcribe'})",
            )

    def _unchecked(self, item_id: str, why: str) -> None:
        self._host.emit(
            ev.ErrorEvent(
                message=f"the input guardrails cannot check user turn {item_id}: {why}; the "
                "turn is not answered",
                source="guardrail",
            )
        )

    def _spawn(self, item_id: str | None, text: str) -> bool:
        """Check ``text`` with the active agent's input guardrails (``False``: it has none)."""
        guarded = self._guardrails()
        if guarded is None:
            return False
        self._tasks.spawn(
            self._check(item_id, text, *guarded),
            name=f"voxwire-client-input-guardrail-{item_id}",
            kind="guardrail",
        )
        return True

    async def _check(
        self,
        item_id: str | None,
        text: str,
        agent: RealtimeAgent,
        guardrails: Sequence[InputGuardrail],
    ) -> None:
        tripped = await run_guardrails(guardrails, agent, text, self._host.emit, "input")
        if not tripped:
            self._host.answer(item_id)
        else:
            names = tuple(name for name, _ in tripped)
            refusal = self._refusal(names) if callable(self._refusal) else self._refusal
            self._host.emit(
                ev.InputGuardrailTrippedEvent(
                    item_id=item_id,
                    text=text,
                    guardrails=names,
                    results=tuple(result for _, result in tripped),
                    refusal=refusal,
                )
            )
            if refusal is not None:
                self._host.refuse(refusal)
        try:
            await self._host.flush()
        except SessionClosed:
            return
