"""False-interruption recovery in the session (``RealtimeSession(local_barge_in=True,
false_interruption=FalseInterruptionFilter())``): a local barge-in *pauses* the agent instead of
cutting it; the server's VAD and the user's transcript then decide.

* The microphone's detector hears an onset while the agent is audible: the output pauses (a
  fade, nothing dropped) and the filter (:class:`voxwire.audio.FalseInterruptionFilter`) starts
  its window.
* Server VAD (``speech_started`` / ``speech_stopped``) and the user's final transcript go to the
  filter; a task polls it while an onset is pending (every ``POLL_S``).
* ``resume`` — a cough, a door, "mm-hmm": playback continues at exactly the paused sample,
  nothing is truncated, and an :class:`~voxwire.asyncio.events.InterruptionRecoveredEvent` says
  why. ``cut`` — a real turn: the session interrupts as today; the output reports what was heard
  up to the pause point, which is what ``conversation.item.truncate`` says (exact).

The session decides the cut and the answer, so with recovery on the server neither cancels the
response when its VAD hears speech (the session sends ``interrupt_response: false``, options.py)
nor answers a turn by itself (``create_response: false`` on the wire while the application
wants it on: :class:`~voxwire.agents.input_guardrail.ResponseHold`). The session answers each
turn the server commits (``input_audio_buffer.committed``) unless it was a recovered false
interruption: at once for a turn with no onset (cancelling a response still in progress, as
``interrupt_response`` would have), at the cut for a turn that interrupted the agent.
With input guardrails, their runner answers instead and asks :meth:`InterruptionRecovery.
recovered` first. A turn the server commits while the agent is audible and the local detector
heard nothing (its echo gate has a level, the server's VAD does not) is taken for the agent's
echo: not answered (``interruption_recovered`` with reason ``"echo"``).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Final, Protocol

import msgspec

import voxwire.asyncio.events as ev
from voxwire.agents.input_guardrail import turn_detection_of, with_turn_detection
from voxwire.asyncio.audio.interruption import Interrupter
from voxwire.asyncio.audio.playback import attached_output
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.audio import AudioOutput, Decision, FalseInterruptionFilter
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import server_events as se
from voxwire.protocol.config import SemanticVad, ServerVad, SessionConfig

__all__ = [
    "POLL_S",
    "InterruptionRecovery",
    "RecoveryHost",
    "recovery_part",
    "without_server_interruption",
]

#: How often a pending onset's filter is asked for a due decision (its window and timeouts).
POLL_S: Final = 0.05

#: How many recovered turns' item ids are remembered for a late answer (input guardrails).
_REMEMBERED: Final = 32


def without_server_interruption(config: SessionConfig) -> SessionConfig:
    """``config`` with turn detection that does not cancel responses by itself
    (``interrupt_response: false``; server VAD with the server's defaults when none was
    configured). Turn detection off is refused: recovery needs the server's VAD to confirm."""
    detection = turn_detection_of(config)
    if detection is None:
        raise ConfigurationError(
            "false_interruption needs the server's turn detection (server_vad or semantic_vad) "
            "to confirm the user's speech, but the configuration turns it off "
            "(turn_detection: null)"
        )
    if not isinstance(detection, ServerVad | SemanticVad):
        detection = ServerVad()
    return with_turn_detection(config, msgspec.structs.replace(detection, interrupt_response=False))


class RecoveryHost(Protocol):
    """What the recovery needs of the session besides the output and the interrupter."""

    def answers_turns(self) -> bool:
        """The recovery answers committed turns: turn detection is on, the application wants
        the server's ``create_response``, and no input guardrails answer instead."""

    def answer(self) -> None:
        """Queue the gated ``response.create`` that answers the user."""

    def flush(self) -> Awaitable[None]:
        """Send what was queued (a cut or an answer decided off the receive path)."""


class InterruptionRecovery:
    """Pauses on an onset and resumes or cuts; answers real turns (see the module docstring)."""

    server_event_types: Final = frozenset(
        {
            se.InputAudioBufferSpeechStarted,
            se.InputAudioBufferSpeechStopped,
            se.InputAudioBufferCommitted,
            se.InputAudioTranscriptionCompleted,
        }
    )

    def __init__(
        self,
        decider: FalseInterruptionFilter,
        output: AudioOutput,
        interrupter: Interrupter,
        host: RecoveryHost,
        tasks: OwnedTasks,
        emit: Callable[[ev.SessionEvent], None],
        clock: Callable[[], float],
    ) -> None:
        self.decider = decider
        self._output = output
        self._interrupter = interrupter
        self._host = host
        self._tasks = tasks
        self._emit = emit
        self._clock = clock
        self._paused_at_ms = 0.0
        self._poller: asyncio.Task[None] | None = None
        # When server VAD's current speech began (None: it hears none now): the server may
        # hear the user before the local detector does; and that speech's item.
        self._server_speech_ms: float | None = None
        self._speech_item: str | None = None
        # The item of the speech the pending onset is about (once the server heard it), the
        # turns it recovered, and a committed turn waiting for the decision.
        self._onset_item: str | None = None
        self._recovered: deque[str] = deque(maxlen=_REMEMBERED)
        self._waiting: str | None = None
        self._cut: str | None = None

    @property
    def pending(self) -> bool:
        return self.decider.pending

    def recovered(self, item_id: str | None) -> bool:
        """The user's turn ``item_id`` was a false interruption the agent resumed over."""
        return item_id is not None and item_id in self._recovered

    def onset(self) -> None:
        """The user started while the agent was audible (the local detector heard it, or the
        server's VAD did first): pause."""
        if self.decider.pending:
            return
        self._paused_at_ms = self._now_ms()
        self._output.pause()
        self.decider.onset(self._paused_at_ms)
        self._onset_item = self._speech_item if self._server_speech_ms is not None else None
        self._waiting = None
        if self._server_speech_ms is not None:  # the server already hears the user
            decision = self.decider.speech_started(self._server_speech_ms)
            if decision is not None:
                self._act(decision)
                return
        if self._poller is None or self._poller.done():
            self._poller = self._tasks.spawn(
                self._poll(), name="voxwire-client-recovery", kind="interruption recovery"
            )

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        now = self._now_ms()
        if isinstance(event, se.InputAudioBufferCommitted):
            self._committed(event.item_id)
            return
        if isinstance(event, se.InputAudioBufferSpeechStarted):
            self._server_speech_ms = now
            self._speech_item = event.item_id
        elif isinstance(event, se.InputAudioBufferSpeechStopped):
            self._server_speech_ms = None
        if not self._still_paused():
            return
        if isinstance(event, se.InputAudioBufferSpeechStarted):
            if self._onset_item is None:
                self._onset_item = event.item_id
            decision = self.decider.speech_started(now)
        elif isinstance(event, se.InputAudioBufferSpeechStopped):
            decision = self.decider.speech_stopped(now)
        elif isinstance(event, se.InputAudioTranscriptionCompleted):
            decision = self.decider.transcript(event.transcript, now)
        else:  # pragma: no cover - server_event_types routes only the four above
            decision = None
        if decision is not None:
            self._act(decision)

    def _committed(self, item_id: str) -> None:
        """The server committed a user turn: answer it now, at the decision, or not at all."""
        if item_id in self._recovered:
            return
        if self._still_paused() and item_id == self._onset_item:
            self._waiting = item_id  # the decision answers it (a cut) or not (a resume)
            return
        if item_id == self._cut:  # the turn that was cut for: already interrupted
            self._cut = None
        elif self._interrupter.playing:
            # Speech the server's VAD heard over the audible agent while the local detector
            # (whose echo gate has a level) heard none: the agent's echo, not the user.
            self._recovered.append(item_id)
            self._emit(ev.InterruptionRecoveredEvent(reason="echo", transcript=None, paused_ms=0.0))
            return
        if not self._host.answers_turns():
            return
        if self._interrupter.responses_in_progress():
            # A turn the agent was not audible for: what interrupt_response would have done.
            self._interrupter.interrupt(None, cancel_response=True)
        self._host.answer()

    async def _poll(self) -> None:
        while self.decider.pending:
            await asyncio.sleep(POLL_S)
            if not self._still_paused():
                return
            decision = self.decider.poll(self._now_ms())
            if decision is not None:
                self._act(decision)
                await self._host.flush()

    def _still_paused(self) -> bool:
        """An onset is pending and the output still paused for it (an ``interrupt()`` or a lost
        connection meanwhile cut the output: the onset is void)."""
        if self.decider.pending and not self._output.paused:
            self.decider.cancel()
        return self.decider.pending

    def _act(self, decision: Decision) -> None:
        item, self._onset_item = self._onset_item, None
        waiting, self._waiting = self._waiting, None
        if decision.action == "resume":
            if item is not None:
                self._recovered.append(item)
            self._output.resume()
            self._emit(
                ev.InterruptionRecoveredEvent(
                    reason=decision.reason,
                    transcript=decision.transcript,
                    paused_ms=decision.at_ms - self._paused_at_ms,
                )
            )
            return
        # A cut at the pause point: the paused output reports what was heard up to it.
        self._interrupter.interrupt(None, cancel_response=True)
        if waiting is None:
            self._cut = item  # answered when the server commits it
        elif self._host.answers_turns():
            self._host.answer()  # the turn was committed before the decision

    def _now_ms(self) -> float:
        return self._clock() * 1000.0


class RecoveryOptions(Protocol):
    """What the recovery reads of the session's options."""

    @property
    def false_interruption(self) -> FalseInterruptionFilter | None: ...

    @property
    def audio_output(self) -> object: ...

    @property
    def clock(self) -> Callable[[], float] | None: ...


def recovery_part(
    options: RecoveryOptions,
    interrupter: Interrupter,
    host: RecoveryHost,
    tasks: OwnedTasks,
    emit: Callable[[ev.SessionEvent], None],
) -> InterruptionRecovery | None:
    """The session's recovery part, if ``false_interruption`` was given (checked by the options:
    then the output holds an :class:`~voxwire.audio.AudioOutput`)."""
    decider = options.false_interruption
    if decider is None:
        return None
    output = attached_output(options.audio_output)
    assert isinstance(output, AudioOutput)
    return InterruptionRecovery(
        decider, output, interrupter, host, tasks, emit, options.clock or time.monotonic
    )
