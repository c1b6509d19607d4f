"""Running responses: one task per response, paced, cancellable, owned by :class:`ResponseManager`.

A response's events come from :class:`~voxwire.server.core.response.ResponseBuilder`; this module
decides *when* they go out. Text deltas go at ``Pacing.text_tokens_per_s``; audio goes in
``Pacing.audio_chunk_ms`` chunks at ``Pacing.audio_pace`` times real time (the real service also
streams faster than real time), each chunk preceded by the transcript deltas of the words that
start in it. A pace of 0 sends as fast as the socket takes it. Audio follows a schedule: the chunk
after ``sent_ms`` of audio is due at ``start + sent_ms / pace`` on the pacing clock, so the time a
send takes is not added to every chunk (sleeping a fixed interval after each send made
``--pace 1`` 1.15 % slow, and a client's prebuffer counted the lag as underruns).

One response at a time may write to the conversation (``conversation_already_has_active_response``
otherwise); out-of-band responses (``conversation: "none"``) run beside it. ``response.cancel``
wakes the response's pause at once; the response closes its open item as ``incomplete`` and
ends with ``response.done`` (``status: cancelled``) before the next client event is handled, so
a ``response.create`` right after a cancel is accepted, as on the real service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from websockets.exceptions import ConnectionClosed

from voxwire.protocol import (
    ServerEvent,
    StatusError,
)
from voxwire.server.core.errors import ServerError
from voxwire.server.core.mcp import McpServers, allowed, needs_approval
from voxwire.server.core.planning import plan_response
from voxwire.server.core.response import EndStatus, ResponseBuilder
from voxwire.server.core.session import CancelResponse, ServerSession, StartResponse
from voxwire.server.engines.responder import CallMcp, CallTool, Output, Responder, Say, Turn
from voxwire.server.engines.tts import Voice

__all__ = ["LoopClock", "PaceClock", "Pacing", "ResponseManager"]

log = logging.getLogger("voxwire.server")

_TOKEN: Final = re.compile(r"\s*\S+")

Send = Callable[[Sequence[ServerEvent]], Awaitable[None]]
#: Called before the responder decides: the turn as it should be decided (the response's
#: ``wake`` event is set when it is cancelled, so the wait can end early).
BeforeRespond = Callable[[Turn, asyncio.Event], Awaitable[Turn]]


class PaceClock(Protocol):
    """The time responses are paced by: ``now()`` in seconds, and a wait that ends early when
    ``wake`` is set (a cancel). :class:`LoopClock` is the event loop's; a test may give its
    own (a virtual clock) to check the schedule without timing the wall clock."""

    def now(self) -> float: ...

    async def wait(self, wake: asyncio.Event, seconds: float) -> None: ...


class LoopClock:
    """The event loop's clock (the default)."""

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def wait(self, wake: asyncio.Event, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(wake.wait(), seconds)


@dataclass(frozen=True)
class Pacing:
    """How fast responses stream. ``audio_pace``: multiple of real time (0: no waiting);
    ``text_tokens_per_s``: text and argument deltas per second (0: no waiting); ``clock``: what
    the pace is kept by (default: the event loop's, :class:`LoopClock`)."""

    audio_pace: float = 4.0
    text_tokens_per_s: float = 100.0
    audio_chunk_ms: int = 100
    clock: PaceClock = field(default_factory=LoopClock, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.audio_pace < 0 or self.text_tokens_per_s < 0 or self.audio_chunk_ms <= 0:
            raise ValueError(f"invalid pacing {self}: paces must be >= 0 and audio_chunk_ms > 0")

    @property
    def token_interval_s(self) -> float:
        return 1.0 / self.text_tokens_per_s if self.text_tokens_per_s else 0.0

    def audio_interval_s(self, chunk_ms: float) -> float:
        return chunk_ms / 1000.0 / self.audio_pace if self.audio_pace else 0.0


@dataclass
class _Run:
    builder: ResponseBuilder
    turn: Turn
    voice: str
    speed: float
    clock: PaceClock
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    cancel_reason: str | None = None
    task: asyncio.Task[None] | None = None

    @property
    def response_id(self) -> str:
        return self.builder.response_id

    @property
    def cancelled(self) -> bool:
        return self.cancel_reason is not None

    async def pause(self, seconds: float) -> bool:
        """Wait ``seconds`` or until cancelled; True if cancelled."""
        if not self.cancelled:
            await self.clock.wait(self.wake, seconds)
        return self.cancelled


class ResponseManager:
    """Starts, paces, cancels and finally awaits every response of one connection."""

    def __init__(
        self,
        session: ServerSession,
        send: Send,
        responder: Responder,
        voice: Voice | None,
        pacing: Pacing,
        before_respond: BeforeRespond | None = None,
        mcp_servers: McpServers | None = None,
    ) -> None:
        self._session = session
        self._mcp_servers = mcp_servers or McpServers()
        self._send = send
        self._responder = responder
        self._voice = voice
        self._pacing = pacing
        # Waits for what the responder needs that is still coming (the transcripts of the
        # turn's audio: voxwire.server.engines.transcribe.Transcriptions.settle).
        self._before_respond = before_respond
        self._runs: dict[str, _Run] = {}
        self._in_conversation: _Run | None = None
        self._closing = False

    @property
    def responding(self) -> bool:
        """A response is writing to the conversation."""
        return self._in_conversation is not None

    # --- commands ---------------------------------------------------------------------------------

    async def start(self, command: StartResponse) -> None:
        session = self._session
        try:
            if command.from_vad and self._in_conversation is not None:
                return  # the VAD does not queue turns behind a response still running
            plan = plan_response(
                session,
                command.params,
                active_response_id=(
                    None if self._in_conversation is None else self._in_conversation.response_id
                ),
                has_voice=self._voice is not None,
            )
        except ServerError as exc:
            await self._send([exc.event(session.ids, command.client_event_id)])
            return
        run = _Run(plan.builder, plan.turn, plan.voice, plan.speed, self._pacing.clock)
        await self._send(run.builder.created())
        self._runs[run.builder.response_id] = run
        if run.builder.spec.conversation_id is not None:
            self._in_conversation = run
        run.task = asyncio.create_task(self._run(run), name=f"voxwire-{run.builder.response_id}")

    async def cancel(self, command: CancelResponse) -> None:
        run: _Run | None
        if command.response_id is not None:
            run = self._runs.get(command.response_id)
        else:
            run = self._in_conversation
        if run is None or run.cancelled:
            if not command.quiet:
                error = ServerError(
                    "response_cancel_not_active", "Cancellation failed: no active response found"
                )
                await self._send([error.event(self._session.ids, command.client_event_id)])
            return
        run.cancel_reason = command.reason
        run.wake.set()
        if run.task is not None:
            await run.task

    async def close(self) -> None:
        """End every response without sending more (the connection is closing); idempotent.
        The tasks are cancelled, not waited for: one may be waiting for a voice or a chat
        endpoint, which must not hold up the connection's end."""
        self._closing = True
        runs = list(self._runs.values())
        for run in runs:
            run.cancel_reason = run.cancel_reason or "client_cancelled"
            run.wake.set()
            if run.task is not None:
                run.task.cancel()
        await asyncio.gather(
            *(run.task for run in runs if run.task is not None), return_exceptions=True
        )

    # --- running ----------------------------------------------------------------------------------

    async def _run(self, run: _Run) -> None:
        builder = run.builder
        status: EndStatus = "completed"
        reason: str | None = None
        error: StatusError | None = None
        try:
            try:
                turn = run.turn
                if self._before_respond is not None:
                    turn = await self._before_respond(turn, run.wake)
                # An approved MCP request is carried out as asked: the model decided already.
                approved = turn.approved_mcp_call
                outputs: list[Output] = [approved] if approved is not None else []
                if not outputs and not run.cancelled:
                    outputs = await self._decide(run, turn)
                for output in outputs:
                    if run.cancelled:
                        break
                    if isinstance(output, Say):
                        if not await self._say(run, output.text):
                            status, reason = "incomplete", "max_output_tokens"
                            break
                    elif isinstance(output, CallTool):
                        await self._call(run, output)
                    elif not await self._call_mcp(run, output, turn):
                        break  # it waits for the client's approval: the response ends
            except ConnectionClosed:
                return
            except Exception as exc:  # a failing responder or voice ends its response only
                log.exception("response %s failed", builder.response_id)
                status, reason = "failed", None
                error = StatusError(type="server_error", code="responder_error", message=str(exc))
            if run.cancelled:
                status, reason = "cancelled", run.cancel_reason
            if not self._closing:
                with contextlib.suppress(ConnectionClosed):
                    await self._send(builder.done(status, reason, error))
        finally:
            # Only now may the next response start: its response.created must come after
            # this response.done.
            self._runs.pop(builder.response_id, None)
            if self._in_conversation is run:
                self._in_conversation = None

    async def _decide(self, run: _Run, turn: Turn) -> list[Output]:
        """What the responder says, or nothing if the response is cancelled first: a slow
        responder (a chat endpoint thinking) must not hold up a cancel or a barge-in."""
        deciding = asyncio.ensure_future(self._responder.respond(turn))
        woken = asyncio.ensure_future(run.wake.wait())
        try:
            await asyncio.wait([deciding, woken], return_when=asyncio.FIRST_COMPLETED)
        finally:
            woken.cancel()
            if not deciding.done():
                deciding.cancel()
            await asyncio.gather(woken, deciding, return_exceptions=True)
        if deciding.cancelled():
            return []
        return deciding.result()  # a responder's exception fails this response only

    async def _say(self, run: _Run, text: str) -> bool:
        """Stream one assistant message; False if it hit ``max_output_tokens``."""
        builder = run.builder
        await self._send(builder.begin_message())
        tokens = _TOKEN.findall(text)
        if builder.spec.audio:
            return await self._speak(run, text, tokens)
        for token in tokens:
            if self._over_limit(builder):
                await self._send(builder.end_message(complete=False))
                return False
            await self._send([builder.text_delta(token)])
            if await run.pause(self._pacing.token_interval_s):
                return True
        await self._send(builder.end_message())
        return True

    async def _speak(self, run: _Run, text: str, tokens: list[str]) -> bool:
        assert self._voice is not None
        builder = run.builder
        fmt = builder.spec.output_format
        spoken = await self._voice.speak(text, run.voice, run.speed, fmt.type)
        if run.cancelled:  # cancelled while the voice spoke: not one chunk of it goes out
            return True
        # Each token's first byte of audio: the mark of the last word starting at or before it.
        starts: list[int] = []
        position = 0
        for token in tokens:
            char = position + len(token) - len(token.lstrip())
            position += len(token)
            offset = 0
            for mark_char, mark_byte in spoken.word_marks:
                if mark_char > char:
                    break
                offset = mark_byte
            starts.append(max(offset, starts[-1] if starts else 0))
        bytes_per_sample = fmt.sample_format.bytes_per_sample
        chunk = max(
            bytes_per_sample,
            int(spoken.bytes_per_ms * self._pacing.audio_chunk_ms)
            // bytes_per_sample
            * bytes_per_sample,
        )
        audio, next_token = spoken.audio, 0
        clock, pace = run.clock, self._pacing.audio_pace
        began = clock.now()
        for start in range(0, len(audio), chunk):
            end = min(len(audio), start + chunk)
            events: list[ServerEvent] = []
            while next_token < len(tokens) and starts[next_token] < end:
                events.append(builder.text_delta(tokens[next_token]))
                next_token += 1
            events.append(builder.audio_delta(audio[start:end]))
            self._session.assistant_audio_sent = True
            await self._send(events)
            if self._over_limit(builder):
                await self._send(builder.end_message(complete=False))
                return False
            # The next chunk is due once the audio sent so far has played at the pace.
            due = began + end / spoken.bytes_per_ms / 1000.0 / pace if pace else clock.now()
            if await run.pause(due - clock.now()):
                return True
        await self._send([builder.text_delta(token) for token in tokens[next_token:]])
        await self._send(builder.end_message())
        return True

    async def _call(self, run: _Run, call: CallTool) -> None:
        events = run.builder.function_call(call.name, call.arguments)
        for event in events:
            await self._send([event])
            if event.type == "response.function_call_arguments.delta":
                await run.pause(self._pacing.token_interval_s)

    async def _call_mcp(self, run: _Run, call: CallMcp, turn: Turn) -> bool:
        """Make an MCP call, or ask for its approval (``False``: the response ends there)."""
        config = turn.mcp_tools.get(call.server_label, {})
        server = self._mcp_servers.get(call.server_label)
        spec = server.tool(call.name) if server is not None else None
        if spec is not None and call.approval_request_id is None and needs_approval(config, spec):
            events = run.builder.mcp_approval_request(call.server_label, call.name, call.arguments)
            await self._send(events)
            return False
        output: str | None = None
        error: str | None = f"Tool '{call.name}' not found on MCP server {call.server_label}"
        if spec is not None and allowed(config, spec):
            output, error = spec.output, spec.error
        events = run.builder.mcp_call(
            call.server_label,
            call.name,
            call.arguments,
            output=output,
            error=error,
            approval_request_id=call.approval_request_id,
        )
        for event in events:
            await self._send([event])
            if event.type == "response.mcp_call.in_progress":
                await run.pause(self._pacing.token_interval_s)
        return True

    @staticmethod
    def _over_limit(builder: ResponseBuilder) -> bool:
        limit = builder.spec.max_output_tokens
        return limit != "inf" and builder.output_tokens >= limit
