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

The session decides the cut, so with recovery on the server must not cancel the response by
itself when its VAD hears speech: the session sends ``interrupt_response: false`` (options.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final, Protocol

import msgspec

import voxwire.asyncio.events as ev
from voxwire.asyncio.audio.interruption import Interrupter
from voxwire.asyncio.audio.playback import attached_output
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.audio import AudioOutput, Decision, FalseInterruptionFilter
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import server_events as se
from voxwire.protocol.config import (
    AudioConfig,
    AudioInputConfig,
    SemanticVad,
    ServerVad,
    SessionConfig,
)

__all__ = ["POLL_S", "InterruptionRecovery", "recovery_part", "without_server_interruption"]

#: How often a pending onset's filter is asked for a due decision (its window and timeouts).
POLL_S: Final = 0.05


def without_server_interruption(config: SessionConfig) -> SessionConfig:
    """``config`` with turn detection that does not cancel responses by itself
    (``interrupt_response: false``; server VAD with the server's defaults when none was
    configured). Turn detection off is refused: recovery needs the server's VAD to confirm."""
    audio = config.audio if isinstance(config.audio, AudioConfig) else AudioConfig()
    inputs = audio.input if isinstance(audio.input, AudioInputConfig) else AudioInputConfig()
    detection = inputs.turn_detection
    if detection is None:
        raise ConfigurationError(
            "false_interruption needs the server's turn detection (server_vad or semantic_vad) "
            "to confirm the user's speech, but the configuration turns it off "
            "(turn_detection: null)"
        )
    if not isinstance(detection, ServerVad | SemanticVad):
        detection = ServerVad()
    detection = msgspec.structs.replace(detection, interrupt_response=False)
    inputs = msgspec.structs.replace(inputs, turn_detection=detection)
    return msgspec.structs.replace(config, audio=msgspec.structs.replace(audio, input=inputs))


class InterruptionRecovery:
    """Pauses on a local onset and resumes or cuts (see the module docstring)."""

    server_event_types: Final = frozenset(
        {
            se.InputAudioBufferSpeechStarted,
            se.InputAudioBufferSpeechStopped,
            se.InputAudioTranscriptionCompleted,
        }
    )

    def __init__(
        self,
        decider: FalseInterruptionFilter,
        output: AudioOutput,
        interrupter: Interrupter,
        tasks: OwnedTasks,
        emit: Callable[[ev.SessionEvent], None],
        clock: Callable[[], float],
    ) -> None:
        self.decider = decider
        self._output = output
        self._interrupter = interrupter
        self._tasks = tasks
        self._emit = emit
        self._clock = clock
        self._paused_at_ms = 0.0
        self._poller: asyncio.Task[None] | None = None
        # When server VAD's current speech began (None: it hears none now): the server may
        # hear the user before the local detector does.
        self._server_speech_ms: float | None = None

    @property
    def pending(self) -> bool:
        return self.decider.pending

    def onset(self) -> None:
        """The local detector heard the user start while the agent was audible: pause."""
        if self.decider.pending:
            return
        self._paused_at_ms = self._now_ms()
        self._output.pause()
        self.decider.onset(self._paused_at_ms)
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
        if isinstance(event, se.InputAudioBufferSpeechStarted):
            self._server_speech_ms = now
        elif isinstance(event, se.InputAudioBufferSpeechStopped):
            self._server_speech_ms = None
        if not self._still_paused():
            return
        if isinstance(event, se.InputAudioBufferSpeechStarted):
            decision = self.decider.speech_started(now)
        elif isinstance(event, se.InputAudioBufferSpeechStopped):
            decision = self.decider.speech_stopped(now)
        elif isinstance(event, se.InputAudioTranscriptionCompleted):
            decision = self.decider.transcript(event.transcript, now)
        else:  # pragma: no cover - server_event_types routes only the three above
            decision = None
        if decision is not None:
            self._act(decision)

    async def _poll(self) -> None:
        while self.decider.pending:
            await asyncio.sleep(POLL_S)
            if not self._still_paused():
                return
            decision = self.decider.poll(self._now_ms())
            if decision is not None:
                self._act(decision)

    def _still_paused(self) -> bool:
        """An onset is pending and the output still paused for it (an ``interrupt()`` or a lost
        connection meanwhile cut the output: the onset is void)."""
        if self.decider.pending and not self._output.paused:
            self.decider.cancel()
        return self.decider.pending

    def _act(self, decision: Decision) -> None:
        if decision.action == "resume":
            self._output.resume()
            self._emit(
                ev.InterruptionRecoveredEvent(
                    reason=decision.reason,
                    transcript=decision.transcript,
                    paused_ms=decision.at_ms - self._paused_at_ms,
                )
            )
        else:  # cut at the pause point: the paused output reports what was heard up to it
            self._interrupter.interrupt(None, cancel_response=True)

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
        decider, output, interrupter, tasks, emit, options.clock or time.monotonic
    )
