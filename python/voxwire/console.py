"""A live, readable transcript of a session on a terminal: what ``voxwire demo`` and
``voxwire talk`` print.

:class:`Console` turns session events into one line each — the user's speech and transcripts,
the agent's words, tool calls and their results, handoffs, interruptions with their truncation
point, errors, and a metrics line per response — stamped with the time from a clock the caller
gives (the demo's virtual speaker clock, or the wall clock). With ``json=True`` every event is
one JSON object per line instead (``{"t": seconds, "type": ..., ...fields}``), for scripts.

The caller may attach what it knows that the session does not: :meth:`Console.note` prints a
line of its own (the demo's scripted user lines, its truncation check), in both styles.
"""

from __future__ import annotations

import dataclasses
import json as json_module
import sys
from collections.abc import Callable, Mapping
from typing import Any, TextIO

import msgspec

from voxwire.agents import RealtimeAgent
from voxwire.asyncio import events as ev
from voxwire.asyncio.events.speech import SpeechHandle
from voxwire.asyncio.observability.metrics import InterruptionMetrics, Metrics, TranscriptionMetrics

__all__ = ["Console", "plain", "split_heard"]

# Events a readable transcript leaves out (they repeat what other lines say, or are internal).
_QUIET: frozenset[str] = frozenset(
    {
        "audio",
        "audio_end",
        "assistant_transcript_delta",
        "history_added",
        "history_updated",
        "conversation_item_added",
        "raw_server_event",
        "speech_created",
        "function_tools_executed",
        "agent_start",
        "agent_end",
        "response_started",
    }
)


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclasses and msgspec structs as objects, agents by name,
    speech handles by id, exceptions as their message, bytes by length."""
    if isinstance(value, RealtimeAgent):
        return value.name
    if isinstance(value, SpeechHandle):
        return value.id
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    if isinstance(value, bytes | bytearray | memoryview):
        return {"bytes": len(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, msgspec.Struct):
        return plain(msgspec.to_builtins(value))
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    return value


def split_heard(text: str, heard_ms: int, received_ms: int) -> tuple[str, str]:
    """``text`` split where the listener stopped hearing it: at the word boundary nearest the
    heard share of the audio received (``heard_ms / received_ms`` of its characters).

    An approximation: it takes the transcript received to span the audio received at an even
    speaking rate. The cut itself (``audio_end_ms``) is exact; which word it fell in is not.
    """
    if received_ms <= 0 or heard_ms <= 0:
        return "", text.strip()
    if heard_ms >= received_ms:
        return text.strip(), ""
    target = round(len(text) * heard_ms / received_ms)
    spaces = [i for i, ch in enumerate(text) if ch.isspace()]
    at = min(spaces, key=lambda i: abs(i - target), default=len(text))
    return text[:at].strip(), text[at:].strip()


def _remember(table: dict[str, Any], key: str, value: Any) -> None:
    """``table[key] = value``, keeping the latest 16 keys (a long session forgets old items)."""
    table[key] = value
    while len(table) > 16:
        del table[next(iter(table))]


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f} ms"


class Console:
    """Prints a session's events as they come (see the module docstring).

    ``clock`` gives the time stamped on each line, in seconds; ``states``: also print the
    agent's state changes (listening / thinking / speaking), as ``voxwire talk`` does.

    ``started(item_id)``: when the listener began hearing an agent item (seconds on ``clock``,
    ``None`` if not yet). Given, the agent's line is stamped with when its speech started, not
    when its transcript was complete, and the lines that came meanwhile (the user talking over
    it, the cut) are held and printed after it, in time order.
    """

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        json: bool = False,
        states: bool = False,
        out: TextIO | None = None,
        started: Callable[[str], float | None] | None = None,
    ) -> None:
        self.clock = clock
        self.json = json
        self.states = states
        self.out = out if out is not None else sys.stdout
        self.started = started
        self._speaking: set[str] = set()  # agent items heard or on their way, transcript to come
        self._held: list[tuple[float, str]] = []  # (stamp, line) while an agent item speaks
        self.agent_name = ""
        """The agent speaking now (follows handoffs), for the agent's lines."""
        self._cuts: dict[str, tuple[int, int]] = {}  # item -> (heard ms, received ms)
        self._said: dict[str, str] = {}  # item -> its transcript (the latest few)

    # -- output ------------------------------------------------------------------------------

    def note(self, kind: str, line: str, /, **fields: Any) -> None:
        """A line of the caller's own: ``line`` for people, ``fields`` for JSON."""
        if self.json:
            self._json({"type": kind, **fields})
        else:
            self._line(kind, line)

    def event(
        self, event: ev.SessionEvent, extra: str = "", fields: Mapping[str, Any] | None = None
    ) -> None:
        """Print ``event`` (nothing for the events a transcript leaves out); ``extra`` is added
        to its line, ``fields`` to its JSON object under ``check`` (the demo's truncation check
        after an interruption)."""
        if isinstance(event, ev.HandoffEvent):
            self.agent_name = event.to_agent.name
        elif isinstance(event, ev.AgentStartEvent) and not self.agent_name:
            self.agent_name = event.agent.name
        elif (
            isinstance(event, ev.AssistantTranscriptDeltaEvent)
            and self.started is not None
            and not self.json
        ):
            self._speaking.add(event.item_id)
        heard = self._follow_cuts(event)
        if self.json:
            if event.type != "history_updated":  # the whole history each time: use history_added
                record = plain(event) | ({"check": plain(fields)} if fields else {})
                if heard is not None:
                    record |= {"heard": heard[0], "not_heard": heard[1]}
                self._json(record)
            return
        text = self._describe(event, heard)
        at = None
        if isinstance(event, ev.AssistantTranscriptDoneEvent) and self.started is not None:
            at = self.started(event.item_id)
            self._speaking.discard(event.item_id)
        if text is not None:
            kind, line = text
            self._line(kind, line + (f"  {extra}" if extra else ""), at)
        if isinstance(event, ev.ResponseDoneEvent | ev.CloseEvent):
            self._speaking.clear()  # whatever did not get its transcript will not now
        if not self._speaking:
            self._release()

    def _line(self, kind: str, text: str, at: float | None = None) -> None:
        stamp = self.clock() if at is None else at
        self._held.append((stamp, f"{stamp:8.2f}s  {kind:<9} {text}"))
        if not self._speaking:
            self._release()

    def _release(self) -> None:
        """Print the lines held while an agent item spoke, in time order (stable)."""
        held, self._held = sorted(self._held, key=lambda line: line[0]), []
        for _, line in held:
            print(line, file=self.out, flush=True)

    def _json(self, record: dict[str, Any]) -> None:
        record = {"t": round(self.clock(), 4), **record}
        print(json_module.dumps(record, ensure_ascii=False), file=self.out, flush=True)

    # -- one line per event ---------------------------------------------------------------------

    def _describe(
        self, event: ev.SessionEvent, heard: tuple[str, str] | None = None
    ) -> tuple[str, str] | None:
        if event.type in _QUIET:
            return None
        if isinstance(event, ev.AgentStateChangedEvent):
            return ("state", f"agent {event.new_state}") if self.states else None
        if isinstance(event, ev.UserStateChangedEvent):
            said = "started speaking" if event.new_state == "speaking" else "stopped speaking"
            return "user", f"[{said}: server VAD]"
        if isinstance(event, ev.UserInputTranscribedEvent):
            return ("user", f'"{event.transcript}"') if event.is_final else None
        if isinstance(event, ev.AssistantTranscriptDoneEvent):
            who = f"agent:{self.agent_name}" if self.agent_name else "agent"
            if heard is None:
                return who, f'"{event.transcript}"'
            return who, f'"{heard[0]}"' + (f'  [not heard: "{heard[1]}"]' if heard[1] else "")
        if isinstance(event, ev.ToolStartEvent):
            return "tool", f"{event.name}({event.arguments}) called by {event.agent.name}"
        if isinstance(event, ev.ToolEndEvent):
            result = f"failed: {event.error}" if event.error is not None else event.output
            return "tool", f"{event.name} -> {result}"
        if isinstance(event, ev.ToolApprovalRequestedEvent):
            return "tool", f"{event.name}({event.arguments}) waits for approval"
        if isinstance(event, ev.HandoffEvent):
            return "handoff", f"{event.from_agent.name} -> {event.to_agent.name}"
        if isinstance(event, ev.AudioInterruptedEvent):
            return "cut", self._cut(event)
        if isinstance(event, ev.GuardrailTrippedEvent):
            return "guardrail", f"{', '.join(event.guardrails)} tripped on {event.item_id}"
        if isinstance(event, ev.ResponseDoneEvent):
            return self._response_done(event)
        if isinstance(event, ev.MetricsCollectedEvent):
            return "metrics", self._metrics(event.metrics) + self._heard_of(event.metrics)
        if isinstance(event, ev.ErrorEvent):
            return "error", f"({event.source}) {event.message}"
        if isinstance(event, ev.CloseEvent):
            return "closed", f"{event.reason} {event.detail}".rstrip()
        if isinstance(event, ev.ReconnectingEvent):
            return "reconnect", f"attempt {event.attempt} in {event.delay_s:.1f} s"
        if isinstance(event, ev.ReconnectedEvent):
            return "reconnect", f"reconnected, {event.items_restored} item(s) restored"
        return None

    def _follow_cuts(self, event: ev.SessionEvent) -> tuple[str, str] | None:
        """Note cuts (heard and received ms per item) and the agent's transcripts; for the
        transcript of a cut item, ``(heard, not heard)``."""
        if isinstance(event, ev.MetricsCollectedEvent) and isinstance(
            event.metrics, InterruptionMetrics
        ):
            cut = event.metrics
            _remember(self._cuts, cut.item_id, (cut.played_ms or 0, cut.received_ms))
        elif isinstance(event, ev.AssistantTranscriptDoneEvent):
            _remember(self._said, event.item_id, event.transcript)
            cut_at = self._cuts.get(event.item_id)
            if cut_at is not None:
                return split_heard(event.transcript, *cut_at)
        return None

    def _heard_of(self, metrics: Metrics) -> str:
        """After a cut's metrics: what was heard of a transcript already printed in full."""
        if not isinstance(metrics, InterruptionMetrics):
            return ""
        said = self._said.get(metrics.item_id)
        if said is None:
            return ""
        heard = split_heard(said, metrics.played_ms or 0, metrics.received_ms)[0]
        return f'; heard about: "{heard}"'

    @staticmethod
    def _cut(event: ev.AudioInterruptedEvent) -> str:
        if event.played_ms is None:
            return f"interrupted: {event.item_id} deleted (none of it was heard)"
        return (
            f"interrupted: {event.item_id} truncated at audio_end_ms={event.played_ms} "
            "(what the speaker played)"
        )

    @staticmethod
    def _response_done(event: ev.ResponseDoneEvent) -> tuple[str, str] | None:
        if event.status == "completed":
            return None
        because = f" ({event.failure})" if event.failure else ""
        return "response", f"{event.response_id} {event.status}{because}"

    @staticmethod
    def _metrics(metrics: Metrics) -> str:
        if isinstance(metrics, TranscriptionMetrics):
            state = "failed" if metrics.failed else "done"
            return f"transcription of {metrics.item_id} {state} {_seconds(metrics.delay_s)} after"
        if isinstance(metrics, InterruptionMetrics):
            heard = "deleted" if metrics.played_ms is None else f"{metrics.played_ms} ms heard"
            return (
                f"cut {metrics.item_id}: {heard} of {metrics.received_ms} ms received, "
                f"{metrics.dropped_ms} ms dropped unplayed"
            )
        parts = [f"{metrics.response_id} {metrics.status}"]
        if metrics.speech_end_to_first_audio_s is not None:
            first = _seconds(metrics.speech_end_to_first_audio_s)
            parts.append(f"speech end -> first audio {first}")
        if metrics.speech_end_to_first_played_s is not None:
            parts.append(f"-> first played {_seconds(metrics.speech_end_to_first_played_s)}")
        if metrics.time_to_first_audio_s is not None:
            parts.append(f"created -> first audio {_seconds(metrics.time_to_first_audio_s)}")
        if metrics.first_audio_to_first_played_s is not None:
            played = _seconds(metrics.first_audio_to_first_played_s)
            parts.append(f"first delta -> first played {played}")
        if metrics.underruns:
            parts.append(f"{metrics.underruns} underrun(s)")
        parts.append(f"took {_seconds(metrics.duration_s)}")
        usage = metrics.usage
        parts.append(f"tokens {usage.input_tokens} in / {usage.output_tokens} out")
        if metrics.interrupted:
            parts.append("interrupted")
        return ", ".join(parts)
