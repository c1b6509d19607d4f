"""``TabBridge``: one browser tab talking to one :class:`~voxwire.asyncio.RealtimeSession`.

The page first says its rate (its ``AudioContext``'s, the device's: ``{"type": "hello",
"rate_hz": 48000}``); then it sends the microphone as binary websocket messages (PCM16 at that
rate, 20 ms frames; resampled here to the session's 24 kHz by :class:`~voxwire.audio.AudioInput`)
and JSON commands; the bridge sends the assistant's audio at the page's rate as binary messages
(the :class:`~voxwire.audio.RemoteOutput` resamples it) and the timeline's records, ``clear`` and
a few notes as JSON. Every position is in samples at the page's rate.

The assistant's audio goes through a :class:`~voxwire.audio.RemoteOutput`: each chunk it
:meth:`~voxwire.audio.RemoteOutput.take`\\ s is sent with its ring position (a little-endian
float64, then the samples), the page's playback worklet reports the ring position it has
*heard* (rendered minus Web Audio's base + output latency), and the bridge
:meth:`~voxwire.audio.RemoteOutput.acknowledge`\\ s exactly that. Only acknowledgements move the
session's playback clock, so a barge-in truncates each item at what the page reported heard.

Page -> bridge (JSON): ``{"type": "played", "position": n}``, ``{"type": "mute", "muted": b}``,
``{"type": "interrupt"}``, ``{"type": "text", "text": s}``.
Bridge -> page (JSON): ``hello`` (agent, endpoint), ``record`` (a timeline record), ``clear``
(an interruption dropped the audio: drop what is queued; ``acked``: the last position the page
reported before it, the one the truncation was computed from), ``item_start`` (the ring position
where an item's sound starts, once it is heard: its first ring sample plus the resampler's
warm-up, so that ``audio_end_ms`` is ``floor((acked - position) * 1000 / rate_hz)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from voxwire.agents import RealtimeAgent
from voxwire.asyncio import RealtimeSession
from voxwire.audio import AudioInput, RemoteOutput
from voxwire.export import process
from voxwire.timeline.observer import Record, Timeline

__all__ = ["CHUNK_MS", "RATE_HZ", "SessionRecipe", "TabBridge"]

log = logging.getLogger("voxwire.web")

RATE_HZ: Final = 24_000  # a page that does not say its rate
CHUNK_MS: Final = 40  # audio per message to the page
LEAD_MS: Final = 2_000  # sent ahead of what was heard at most (the page's queue)
RENDER_QUANTUM: Final = 128  # frames a Web Audio worklet renders per call (its report's step)


@dataclass(frozen=True)
class SessionRecipe:
    """How each tab's session is made: the agent (a new one per tab), the endpoint, the API key
    and the session configuration."""

    agent: Callable[[], RealtimeAgent]
    url: str
    api_key: str | None = None
    config: Mapping[str, Any] | None = None
    label: str = ""

    def session(self, output: RemoteOutput) -> RealtimeSession:
        return RealtimeSession(
            self.agent(),
            url=self.url,
            api_key=self.api_key,
            config=self.config,
            audio_output=output,
            raw_server_events=True,  # server VAD's positions and truncation acknowledgements
        )


@dataclass
class _Outbox:
    """Messages to the page, in order (audio chunks, clears and records interleave)."""

    queue: asyncio.Queue[str | bytes] = field(default_factory=asyncio.Queue)

    def json(self, message: Mapping[str, Any]) -> None:
        self.queue.put_nowait(json.dumps(message, separators=(",", ":")))


class TabBridge:
    """Runs one tab: the session, its output and timeline, and the page's websocket."""

    def __init__(
        self,
        ws: ServerConnection,
        recipe: SessionRecipe,
        rate_hz: int = RATE_HZ,
        first: str | bytes | None = None,
    ) -> None:
        self._ws = ws
        self._recipe = recipe
        self._out = _Outbox()
        self._wake = asyncio.Event()
        self.rate_hz = rate_hz
        """The page's rate (its AudioContext's): the microphone comes at it, audio goes at it."""
        self._first = first
        self.microphone = AudioInput(rate_hz)  # resampled to the session's 24 kHz frames
        self.output = RemoteOutput(
            rate_hz,
            on_audio=self._wake.set,
            on_interrupt=self._clear,
            ack_every_samples=RENDER_QUANTUM,  # the worklet reports after every quantum
        )
        self.timeline = Timeline(on_record=self._record, playback=self.output.clock)
        self.session = recipe.session(self.output)
        self._starts: set[tuple[str, int]] = set()
        self._acked = 0

    def _record(self, record: Record) -> None:
        self._out.json({"type": "record", "record": record})

    def _clear(self) -> None:
        # ``acked``: the page's last report before the cut, the position the truncation used.
        self._out.json({"type": "clear", "sent": self.output.sent_samples, "acked": self._acked})
        self._wake.set()

    async def run(self) -> None:
        """Until the page goes or the session ends."""
        async with self.session:
            self._out.json(
                {"type": "hello", "agent": self._agent_name(), "endpoint": self._where()}
            )
            tasks = [
                asyncio.create_task(self._from_page()),
                asyncio.create_task(self._events()),
                asyncio.create_task(self._audio()),
                asyncio.create_task(self._to_page()),
            ]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    task.cancel()
                for task in tasks:
                    with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                        await task

    def _agent_name(self) -> str:
        agent = self.session.agent
        return agent.name if agent is not None else "session"

    def _where(self) -> str:
        return self._recipe.label or self._recipe.url.split("?")[0]

    # -- the page's messages ----------------------------------------------------------------------

    @classmethod
    async def open(cls, ws: ServerConnection, recipe: SessionRecipe) -> TabBridge:
        """The bridge for a page, once it said its rate: its first message is
        ``{"type": "hello", "rate_hz": n}`` (without one, 24 kHz, and the message counts)."""
        first = await ws.recv()
        hello = _parse(first) if isinstance(first, str) else None
        if hello is None or hello.get("type") != "hello":
            return cls(ws, recipe, RATE_HZ, first)
        rate = hello.get("rate_hz")
        if isinstance(rate, bool) or not isinstance(rate, int) or not 8_000 <= rate <= 192_000:
            raise ValueError(f"the page's rate_hz {str(rate)[:20]} is not 8000 ..= 192000")
        return cls(ws, recipe, rate)

    async def _from_page(self) -> None:
        if self._first is not None:
            await self._message(self._first)
        async for message in self._ws:
            await self._message(message)

    async def _message(self, message: str | bytes) -> None:
        if isinstance(message, str):
            await self._command(message)
        elif len(message) % 2 or len(message) > self.rate_hz * 2:  # one second at most
            self._note_bad(f"an audio frame of {len(message)} bytes")
        else:
            for frame in self.microphone.process(message):
                await self.session.send_audio(frame)

    def _note_bad(self, what: str) -> None:
        self.timeline.note("error", source="page", message=f"ignored {what}", code=None)

    async def _command(self, text: str) -> None:
        message = _parse(text)
        if message is None:
            self._note_bad("a message that is not a JSON object")
            return
        kind = message.get("type")
        position = message.get("position")
        if kind == "played" and isinstance(position, int | float) and math.isfinite(position):
            self._played(int(position))
        elif kind == "mute":
            self.session.mute(bool(message.get("muted", True)))
        elif kind == "interrupt":
            await self.session.interrupt()
        elif kind == "text" and isinstance(message.get("text"), str) and message["text"].strip():
            text = message["text"][:4000]
            self.timeline.note("user_text", text=text)
            await self.session.send_message(text)
        else:
            self._note_bad(f"a message of type {str(kind)[:40]!r}")

    def _played(self, position: int) -> None:
        self._acked = max(self._acked, position)
        self.output.acknowledge(position)
        self._wake.set()  # there is room to send more
        items = self.output.clock.items()
        for playback in items:
            key = (playback.item_id, playback.content_index)
            if key not in self._starts and 0 < playback.played_samples < playback.queued_samples:
                self._starts.add(key)
                # Where the item's sound starts, at the page's rate (the 24 kHz count of what
                # was heard is not a page position): after its resampler's warm-up.
                timing = self.output.timing(*key)
                start = timing.sound_start if timing is not None else None
                if start is not None:
                    self._out.json({"type": "item_start", "item_id": key[0], "position": start})
        self.timeline.observe_playback(items)

    # -- the session's side -----------------------------------------------------------------------

    async def _events(self) -> None:
        async for event in self.session:
            self.timeline.observe(event)
            process.observe(self.session, event)  # --metrics-port (docs/operations.md)

    async def _audio(self) -> None:
        header = struct.Struct("<d")
        chunk_samples = self.rate_hz * CHUNK_MS // 1000
        lead_samples = self.rate_hz * LEAD_MS // 1000
        while True:
            await self._wake.wait()
            self._wake.clear()
            # New audio shows on the timeline as it arrives (the clock knows every item).
            self.timeline.observe_playback(self.output.clock.items(), heard=False)
            while self.output.sent_samples - self.output.heard_samples < lead_samples:
                start = self.output.sent_samples
                chunk = self.output.take(chunk_samples)
                if not len(chunk):
                    break
                self._out.queue.put_nowait(header.pack(start) + chunk.astype("<i2").tobytes())

    async def _to_page(self) -> None:
        while True:
            await self._ws.send(await self._out.queue.get())


def _parse(text: str) -> dict[str, Any] | None:
    """A JSON object from the page, or ``None``."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return None
    return parsed if isinstance(parsed, dict) else None
