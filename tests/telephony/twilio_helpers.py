"""A simulated Twilio call through the bridge to the local server (real loopback websockets on
both sides): the scenario, the caller's lines, and what the call shows."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import numpy as np
import numpy.typing as npt
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio import events as ev
from voxwire.asyncio.observability.metrics import InterruptionMetrics
from voxwire.audio import g711
from voxwire.protocol import server_events as se
from voxwire.server import Pacing, RealtimeServer, Scenario
from voxwire.telephony.twilio import CallInfo, PhoneServer, TwilioBridge
from voxwire.testing import TwilioCallSimulator

T = TypeVar("T")

LONG_ANSWER: Final = (
    "Your order forty two left our warehouse on Monday morning. It travelled by road to the "
    "regional depot, where it was sorted overnight, and it is now on a van in your area. The "
    "driver has eleven more stops before yours, so it should arrive by the end of the morning."
)
SHORT_ANSWER: Final = "It will be there before noon."

_CALLS: list[int] = []


@function_tool
async def lookup_order(order_id: str) -> dict[str, str]:
    """Look up where a customer's order is.

    Args:
        order_id: the order number the caller gave.
    """
    _CALLS.append(1)
    return {"order_id": order_id, "text": LONG_ANSWER if len(_CALLS) % 2 else SHORT_ANSWER}


AGENT: Final = RealtimeAgent(
    name="Phone",
    instructions="You answer the phone for an online shop. Look orders up with lookup_order.",
    tools=[lookup_order],
)

# Every caller turn calls the tool; its output decides what is said (long, then short).
SCENARIO: Final = Scenario.from_mapping(
    {
        "rules": [
            {
                "instructions": "phone",
                "call": {"name": "lookup_order", "arguments": {"order_id": "42"}},
            },
            {"after_tool": "lookup_order", "say": "{output.text}"},
        ],
        "fallback": "Sorry?",
    }
)

CONFIG: Final = {
    "audio": {
        "input": {
            "turn_detection": {
                "type": "server_vad",
                "silence_duration_ms": 500,
                "create_response": True,
                "interrupt_response": True,
            }
        }
    }
}


def spoken(text: str, voice_name: str = "echo") -> npt.NDArray[np.int16]:
    """``text`` spoken by the local server's voice (espeak-ng) as µ-law 8 kHz, decoded: with
    ``alloy`` (the server's default voice) exactly what the agent says."""
    from voxwire.server.engines.tts import Voice

    voice = Voice.load("espeak")
    try:
        spoken = voice.speak_blocking(text, voice_name, 1.0, "audio/pcmu")
    finally:
        voice.close()
    return g711.ulaw_decode(spoken.audio)


@dataclass
class Observed:
    """Session events of the call, as the bridge's ``on_event`` saw them."""

    cuts: list[ev.AudioInterruptedEvent] = field(default_factory=list)
    truncated: list[se.ConversationItemTruncated] = field(default_factory=list)
    errors: list[ev.ErrorEvent] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    items: list[str] = field(default_factory=list)  # items with audio, in order
    interruptions: list[InterruptionMetrics] = field(default_factory=list)

    async def on_event(
        self, call: CallInfo, session: RealtimeSession, event: ev.SessionEvent
    ) -> None:
        if isinstance(event, ev.AudioInterruptedEvent):
            self.cuts.append(event)
        elif isinstance(event, ev.ErrorEvent):
            self.errors.append(event)
        elif isinstance(event, ev.ToolStartEvent):
            self.tools.append(event.name)
        elif isinstance(event, ev.MetricsCollectedEvent) and isinstance(
            event.metrics, InterruptionMetrics
        ):
            self.interruptions.append(event.metrics)
        elif isinstance(event, ev.RawServerEvent):
            raw = event.event
            if isinstance(raw, se.ConversationItemTruncated):
                self.truncated.append(raw)
            elif isinstance(raw, se.ResponseOutputAudioDone) and raw.item_id not in self.items:
                self.items.append(raw.item_id)


class AudioTap:
    """A transparent websocket proxy between the bridge's session and the local server that
    keeps the assistant audio the server sent, per item: the oracle for what each item sounds
    like (independent of the bridge under test)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.split("?")[0].rsplit("/", 1)[0]
        self.audio: dict[str, bytearray] = {}
        self._server: Any = None

    async def __aenter__(self) -> AudioTap:
        self._server = await serve(self._relay, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        await self._server.wait_closed()

    def url(self, upstream_url: str) -> str:
        port = self._server.sockets[0].getsockname()[1]
        return upstream_url.replace(
            self.upstream.split("//", 1)[1].split("/")[0], f"127.0.0.1:{port}"
        )

    async def _relay(self, client: ServerConnection) -> None:
        assert client.request is not None
        target = (
            self.upstream.split("//", 1)[0] + "//" + self.upstream.split("//", 1)[1].split("/")[0]
        )
        async with connect(target + client.request.path, max_size=None) as server:

            async def up() -> None:
                async for message in client:
                    await server.send(message)
                await server.close()

            async def down() -> None:
                async for message in server:
                    event = json.loads(message)
                    if event.get("type") == "response.output_audio.delta":
                        chunk = base64.b64decode(event["delta"])
                        self.audio.setdefault(event["item_id"], bytearray()).extend(chunk)
                    await client.send(message)
                await client.close()

            await asyncio.gather(up(), down(), return_exceptions=True)

    def pcm(self, item_id: str) -> npt.NDArray[np.int16]:
        """The item's audio as the server sent it (µ-law decoded)."""
        return g711.ulaw_decode(bytes(self.audio[item_id]))


@dataclass
class CallResult:
    observed: Observed
    call: TwilioCallSimulator
    reports: list[Any]
    tap: AudioTap


async def simulated_call(
    carrier_buffer_ms: int,
    chunk_ms: int = 40,
    *,
    realtime: bool = False,
    input_batch_ms: int = 20,
    barge_in_after_samples: int = 12_000,
) -> CallResult:
    """Caller: a question (the agent calls the tool and answers at length), then, 1.5 s into
    the answer as heard, a second question over it (barge-in); the short second answer is heard
    to its end."""
    _CALLS.clear()
    first, second = spoken("Hello, where is my order?"), spoken("Sorry, when exactly?")
    observed = Observed()
    fast = Pacing(audio_pace=0, text_tokens_per_s=0)
    async with (
        RealtimeServer(scenario=SCENARIO, pacing=fast, tts="espeak", transcriber=None) as server,
        AudioTap(server.url()) as tap,
    ):
        bridge = TwilioBridge(
            AGENT,
            url=tap.url(server.url()),
            config=CONFIG,
            chunk_ms=chunk_ms,
            input_batch_ms=input_batch_ms,
            on_event=observed.on_event,
            session_options={"raw_server_events": True},
        )
        async with PhoneServer(bridge) as phone:
            call = TwilioCallSimulator(
                phone.url("/media", scheme="ws"),
                carrier_buffer_ms=carrier_buffer_ms,
                realtime=realtime,
            )
            async with call:
                await call.listen(200)
                await call.say(first, 8000)
                if barge_in_after_samples:  # that much of the answer heard (12_000: 1.5 s)
                    await call.until(lambda: call.agent_samples_heard >= barge_in_after_samples)
                else:  # as soon as the answer reaches the line, before the caller hears it
                    await call.until(lambda: not call.line_idle)
                await call.say(second, 8000)
                await call.until(lambda: len(observed.items) >= 2 and call.line_idle)
                await call.listen(300)
            await asyncio.sleep(0.2)  # the bridge notes the stop
            return CallResult(observed, call, list(phone.reports), tap)


def run(coro: Coroutine[Any, Any, T], timeout_s: float = 90.0) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout_s)

    return asyncio.run(bounded())


def locate(heard: npt.NDArray[np.int16], item: npt.NDArray[np.int16]) -> int:
    """Where ``item`` starts in ``heard`` (found by its first 40 ms of sound)."""
    first = int(np.flatnonzero(np.abs(item.astype(np.int32)) > 200)[0])
    window = item[first : first + 320]
    at = heard.tobytes().find(window.tobytes())
    while at >= 0 and at % 2:  # samples are 2 bytes: only an aligned match counts
        at = heard.tobytes().find(window.tobytes(), at + 1)
    assert at >= 0, "the item's audio never reached the caller"
    return at // 2 - first


def heard_of(heard: npt.NDArray[np.int16], item: npt.NDArray[np.int16]) -> tuple[int, int]:
    """``(sure, most)``: samples of ``item`` the caller heard — up to the last sample with sound
    that matches, and up to the first sample that differs (trailing silence can match by
    chance)."""
    start = locate(heard, item)
    n = min(len(item), len(heard) - start)
    differs = np.flatnonzero(heard[start : start + n] != item[:n])
    most = int(differs[0]) if len(differs) else n
    sound = np.flatnonzero(item[:most] != 0)
    sure = int(sound[-1]) + 1 if len(sound) else 0
    return sure, most
