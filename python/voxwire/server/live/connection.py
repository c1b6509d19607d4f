"""``LiveConnection``: one GPT-Live websocket (``/v1/live/sessions``) of the local server.

The pump around :class:`~voxwire.server.live.core.session.LiveServerSession`: frames in,
events out in order, and the work that takes time — turn detection on the input audio (the server's
webrtcvad :class:`~voxwire.server.engines.vad.TurnDetector`), transcription of each user turn
(the server's transcriber), the decision (the server's responder: a
:class:`~voxwire.server.engines.responder.Scenario`'s rules), speech (the server's voice).

A user turn that the responder answers with ``say`` is spoken. A turn it answers with ``call``
is delegated to the session's owner: with Responses delegation the scripted backend calls the
function tools (``response.event``: ``response.created``, ``response.output_item.done`` with
the ``function_call``), waits for the outputs (``response.item.create`` + ``response.create``),
asks the responder again (its ``after_tool`` rules) and the Live model speaks the result; with
client delegation the application answers with ``session.commentary.append``, which is spoken.
The rule's ``say`` beside a ``call`` is spoken first, as the model's acknowledgement.

Speech goes out paced by the server's :class:`~voxwire.server.responses.Pacing`
(``audio_pace``: multiple of real time; 0 sends at once). Full duplex: the user's speech
starting while the model speaks stops it — the model hears the interruption — and the words it
did not get to are never sent. With Decisions delegation a turn that a scenario ``decisions``
rule matches is delegated to the scripted Decisions model (``decision.event``); decision items,
``decision.create`` and transcript triggers are answered too
(:mod:`voxwire.server.live.core.decisions`).

A session started with ``store: true`` is kept (configuration and conversation) and, once its
connection has ended, can be forked on ``/v1/live/sessions/{id}/fork`` — the hosted service's
way of going on after a lost connection (:mod:`voxwire.server.live.core.forks`). A SIP call
accepted as Live is served to its sideband by :mod:`voxwire.server.live.sip`. Not emulated:
WebRTC and a sideband of a WebSocket session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from voxwire.live import server_events as se
from voxwire.live.client_events import InputAudioAppend
from voxwire.live.codec import decode_client_event, decode_fork_client_event, encode_event
from voxwire.protocol import FunctionCallItem, FunctionCallOutputItem, InputText, MessageItem
from voxwire.protocol.items import Item
from voxwire.server.connection import ConnectionSettings
from voxwire.server.core.ids import ServerIds
from voxwire.server.core.turn import CallTool, Say, Turn
from voxwire.server.core.turn_detection import SpeechStarted, SpeechStopped
from voxwire.server.engines.vad import TurnDetector
from voxwire.server.live.core.decisions import (
    DecisionRule,
    rule_for_turn,
    session_decisions,
    trigger_config,
)
from voxwire.server.live.core.forks import LiveSessionStore
from voxwire.server.live.core.session import (
    BYTES_PER_MS,
    BackendDelegation,
    Close,
    ContinueBackend,
    Decide,
    LiveServerSession,
    Out,
    Speak,
)

__all__ = ["LIVE_PATH", "LiveConnection", "attach_source", "fork_source"]

log = logging.getLogger("voxwire.server.live")

LIVE_PATH = "/v1/live/sessions"
_FORK_SUFFIX = "/fork"
_ATTACH_SUFFIX = "/attach"


def fork_source(path: str) -> str | None:
    """The stored session id of a fork path (``/v1/live/sessions/{id}/fork``), else ``None``."""
    return _session_of(path, _FORK_SUFFIX)


def attach_source(path: str) -> str | None:
    """The session id of a sideband path (``/v1/live/sessions/{id}/attach``), else ``None``."""
    return _session_of(path, _ATTACH_SUFFIX)


def _session_of(path: str, suffix: str) -> str | None:
    prefix = LIVE_PATH + "/"
    if not (path.startswith(prefix) and path.endswith(suffix)):
        return None
    session_id = path[len(prefix) : -len(suffix)]
    return session_id if session_id and "/" not in session_id else None


_CHUNK_MS = 100
_VAD = {"audio": {"input": {"turn_detection": {"type": "server_vad", "silence_duration_ms": 500}}}}


class LiveConnection:
    """Serves one Live websocket until it closes."""

    def __init__(
        self,
        ws: ServerConnection,
        settings: ConnectionSettings,
        stored: LiveSessionStore | None = None,
        fork_of: str | None = None,
    ) -> None:
        self._ws = ws
        self._settings = settings
        ids = ServerIds(settings.ids_seed)
        self._core = LiveServerSession(ids, stored, fork_of)
        self._decode: Callable[[str | bytes], Any] = (
            decode_client_event if fork_of is None else decode_fork_client_event
        )
        self._detector = TurnDetector.from_session(_VAD, ids)
        self._input = bytearray()  # the whole input timeline (bounded by the session's length)
        self._speech_start_ms: int | None = None
        self._output_ms = 0
        self._send_lock = asyncio.Lock()
        self._voice_lock = asyncio.Lock()  # one utterance at a time
        self._barge_ins = 0  # user speech starts so far: a change stops the model's speech
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    @property
    def _input_ms(self) -> int:
        return len(self._input) // BYTES_PER_MS

    def _now_s(self) -> float:
        return time.time()  # Unix time: session.started's expires_at is a timestamp

    async def serve(self) -> None:
        try:
            async for frame in self._ws:
                await self._receive(frame)
                if self._closing:
                    break
        except ConnectionClosed:
            pass
        finally:
            for task in list(self._tasks):
                task.cancel()
            for task in list(self._tasks):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            await self._ws.close()
            self._core.ended()

    async def _receive(self, frame: str | bytes) -> None:
        event = self._decode(frame)
        if isinstance(event, InputAudioAppend) and self._core.session is not None:
            if not self._core.closed:
                self._hear(event.audio)
            return
        await self._carry_out(self._core.receive(event, self._now_s(), self._input_ms))

    async def _carry_out(self, outs: Sequence[Out]) -> None:
        for out in outs:
            if isinstance(out, Speak):
                self._spawn(self._speak(out.text))
            elif isinstance(out, ContinueBackend):
                self._spawn(self._continue(self._core.delegations[out.delegation_id]))
            elif isinstance(out, Decide):
                await self._decide(out.delegation_id, None)
            elif isinstance(out, Close):
                self._closing = True
            else:
                await self._send([out])

    def _spawn(self, work: Coroutine[object, object, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("live connection task failed", exc_info=task.exception())

    async def _send(self, events: Sequence[se.LiveServerEvent]) -> None:
        async with self._send_lock:
            for event in events:
                await self._ws.send(encode_event(event))
                for fired in self._triggered(event):
                    await self._ws.send(encode_event(fired))

    # --- Decisions ------------------------------------------------------------------------------

    def _decision_rules(self) -> tuple[DecisionRule, ...]:
        scenario = getattr(self._settings.responder, "scenario", None)
        return tuple(getattr(scenario, "decisions", ()))

    async def _decide(self, delegation_id: str, rule: DecisionRule | None) -> None:
        """The scripted Decisions model answers a delegation: ``rule`` (the model's delegation
        of a turn), else the rule the Decisions input matches (``decision.create``)."""
        desk, config = self._core.decisions, session_decisions(self._core.session)
        if config is None:
            return
        rule = rule or desk.rule_for_input(self._decision_rules())
        await self._send([desk.decision_event(rule, config, delegation_id=delegation_id)])

    def _triggered(self, event: se.LiveServerEvent) -> list[se.LiveServerEvent]:
        """``session.triggers``: a decision for each transcript delta of the trigger's type."""
        session = self._core.session
        if not isinstance(event, se.InputTranscriptDelta | se.OutputTranscriptDelta):
            return []
        if session is None or not session.triggers:
            return []
        desk, decisions = self._core.decisions, session_decisions(session)
        fired: list[se.LiveServerEvent] = []
        for trigger in session.triggers:
            config = trigger_config(trigger, decisions.model if decisions else "gpt-6-luna")
            if trigger.get("event_type") != event.type or config is None:
                continue
            rule = desk.rule_for_input(self._decision_rules())
            fired.append(desk.decision_event(rule, config, trigger=(event.event_id, event.type)))
        return fired

    # --- listening ------------------------------------------------------------------------------

    def _hear(self, audio: bytes) -> None:
        start_ms = self._input_ms
        self._input += audio if not self._core.muted else bytes(len(audio))
        if self._core.muted:
            return
        for signal in self._detector.feed(audio, "audio/pcm", start_ms):
            if isinstance(signal, SpeechStarted):
                self._speech_start_ms = signal.audio_start_ms
                self._barge_ins += 1
            elif isinstance(signal, SpeechStopped) and self._speech_start_ms is not None:
                begin, self._speech_start_ms = self._speech_start_ms, None
                speech = bytes(
                    self._input[begin * BYTES_PER_MS : signal.audio_end_ms * BYTES_PER_MS]
                )
                self._spawn(self._turn(speech, begin, signal.audio_end_ms))

    async def _turn(self, speech: bytes, start_ms: int, end_ms: int) -> None:
        text = await self._transcribe(speech, start_ms, end_ms)
        if not text.strip():
            return
        self._core.said("user", text.strip())
        self._core.decisions.heard("user", text)
        decided = self._core.target == "decisions" and rule_for_turn(self._decision_rules(), text)
        if decided:  # the model hands the request to Decisions, acknowledging it first
            if decided.say:
                await self._speak(decided.say)
            delegation, events = self._core.delegate(text, end_ms, [])
            await self._send(events)
            await self._decide(delegation.id, decided)
            return
        user = MessageItem(role="user", content=[InputText(text=text)])
        outputs = await self._settings.responder.respond(self._turn_of([user]))
        calls = [(o.name, o.arguments) for o in outputs if isinstance(o, CallTool)]
        for output in outputs:
            if isinstance(output, Say):
                await self._speak(output.text)
        if calls:
            _, events = self._core.delegate(text, end_ms, calls)
            await self._send(events)

    async def _transcribe(self, speech: bytes, start_ms: int, end_ms: int) -> str:
        transcriber = self._settings.transcriber
        if transcriber is None:
            await self._send([self._core.error("transcription_unavailable", _NO_TRANSCRIBER)])
            return ""
        transcript = await transcriber.transcribe(speech, "audio/pcm", language=None, prompt=None)
        pieces = [p for p in transcript.pieces if p]
        events: list[se.LiveServerEvent] = []
        step = (end_ms - start_ms) // max(1, len(pieces))
        for index, piece in enumerate(pieces):
            events.append(
                se.InputTranscriptDelta(
                    event_id=self._core.event_id(),
                    delta=piece,
                    start_ms=start_ms + index * step,
                    end_ms=start_ms + (index + 1) * step,
                )
            )
        await self._send(events)
        return transcript.text

    def _turn_of(self, items: list[Item]) -> Turn:
        session = self._core.session
        tools = self._core.tool_names()
        if self._core.target == "client":
            # Client delegation declares no tools: whatever the scenario can call, the model
            # may hand to the application.
            scenario = getattr(self._settings.responder, "scenario", None)
            rules = getattr(scenario, "rules", ())
            tools = tuple(c.name for r in rules for c in r.calls if isinstance(c, CallTool))
        startup = (session.instructions if session is not None else None) or ""
        return Turn(
            items=items,
            instructions="\n".join([startup, *self._core.appended_instructions]).strip(),
            tools=tools,
            tool_choice="auto",
        )

    # --- the Responses backend ------------------------------------------------------------------

    async def _continue(self, delegation: BackendDelegation) -> None:
        items: list[Item] = [
            MessageItem(role="user", content=[InputText(text=delegation.user_text)])
        ]
        for call_id, name, arguments in delegation.calls:
            items.append(FunctionCallItem(call_id=call_id, name=name, arguments=arguments))
            items.append(
                FunctionCallOutputItem(call_id=call_id, output=delegation.outputs[call_id])
            )
        outputs = await self._settings.responder.respond(self._turn_of(items))
        text = " ".join(o.text for o in outputs if isinstance(o, Say))
        message = {
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text}],
        }
        await self._send(
            [
                self._core.backend_event(
                    delegation, "response.output_item.done", {"item": message}
                ),
                self._core.backend_event(delegation, "response.completed", {}),
            ]
        )
        if text:
            await self._speak(text)

    # --- speaking -------------------------------------------------------------------------------

    async def _speak(self, text: str) -> None:
        """Voice ``text`` after what is already being said, paced by the server's ``Pacing``;
        when the user starts speaking the model stops (full duplex: it hears the interruption),
        and the words it did not get to are never sent."""
        self._core.decisions.heard("assistant", text)
        voice = self._settings.voice
        spoken = None
        if voice is not None:
            spoken = await voice.speak(text, self._core.voice, 1.0, "audio/pcm")
        async with self._voice_lock:
            start_ms = max(self._output_ms, self._input_ms)
            if spoken is None:
                end_ms = start_ms + 60 * len(text.split())
                timed: list[se.LiveServerEvent] = [self._transcript(text, start_ms, end_ms)]
            else:
                timed = _audio_and_words(self, text, spoken.audio, spoken.word_marks, start_ms)
            self._output_ms = await self._say_paced(timed, start_ms)
            await self._send(
                [
                    se.SessionUsageUpdated(
                        event_id=self._core.event_id(),
                        usage=self._core.usage(self._now_s()),
                    )
                ]
            )

    async def _say_paced(self, timed: list[se.LiveServerEvent], start_ms: int) -> int:
        """Send an utterance's events; returns where on the timeline it ended. What was said
        (the words sent) joins the conversation of a stored session."""
        heard_from = self._barge_ins
        end_ms = start_ms
        words: list[str] = []
        try:
            for event in timed:
                if self._barge_ins != heard_from:
                    break  # the user spoke: the rest is not said
                await self._send([event])
                if isinstance(event, se.OutputAudioDelta):
                    end_ms = event.end_ms or end_ms
                    await asyncio.sleep(self._settings.pacing.audio_interval_s(_CHUNK_MS))
                else:
                    if isinstance(event, se.OutputTranscriptDelta):
                        words.append(event.delta)
                    end_ms = max(end_ms, getattr(event, "end_ms", end_ms))
        finally:
            self._core.said("assistant", "".join(words).strip())
        return end_ms

    def _transcript(self, text: str, start_ms: int, end_ms: int) -> se.OutputTranscriptDelta:
        return se.OutputTranscriptDelta(
            event_id=self._core.event_id(),
            delta=text,
            start_ms=start_ms,
            end_ms=end_ms,
        )


_NO_TRANSCRIBER = (
    "the local server has no transcriber: install voxwire[transcribe] (faster-whisper) to "
    "speak to it"
)


def _audio_and_words(
    connection: LiveConnection,
    text: str,
    audio: bytes,
    marks: list[tuple[int, int]],
    start_ms: int,
) -> list[se.LiveServerEvent]:
    """The audio in chunks and each word's transcript at the moment its audio starts, in
    timeline order (``start_ms``/``end_ms`` tie a word to the audio that carries it)."""
    chunk = _CHUNK_MS * BYTES_PER_MS
    end_ms = start_ms + len(audio) // BYTES_PER_MS
    timed: list[tuple[int, se.LiveServerEvent]] = []
    for offset in range(0, len(audio), chunk):
        piece = audio[offset : offset + chunk]
        begin = start_ms + offset // BYTES_PER_MS
        timed.append(
            (
                begin,
                se.OutputAudioDelta(
                    delta=piece, start_ms=begin, end_ms=begin + len(piece) // BYTES_PER_MS
                ),
            )
        )
    starts = [(0 if i == 0 else char, byte) for i, (char, byte) in enumerate(marks)] or [(0, 0)]
    for index, (char, byte) in enumerate(starts):
        following = starts[index + 1] if index + 1 < len(starts) else (len(text), len(audio))
        begin = start_ms + byte // BYTES_PER_MS
        end = min(end_ms, start_ms + following[1] // BYTES_PER_MS)
        timed.append(
            (begin, connection._transcript(text[char : following[0]], begin, max(begin, end)))
        )
    timed.sort(key=lambda pair: pair[0])  # stable: a chunk before the words it carries
    return [event for _, event in timed]
