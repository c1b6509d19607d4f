"""How the local server paces and cancels a spoken response, on a virtual clock.

The response manager runs against a real server session, the rules responder and the real voice;
only time is virtual (:class:`~voxwire.server.responses.PaceClock`, the seam ``Pacing`` takes):
every send costs the socket a few milliseconds of it, and a wait moves it on. Nothing here times
the wall clock.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Sequence

import pytest

from tests.voices import HeldEngine, real_engine
from voxwire.protocol import ServerEvent
from voxwire.server import Pacing, Scenario
from voxwire.server.core.ids import ServerIds
from voxwire.server.core.session import CancelResponse, ServerSession, StartResponse
from voxwire.server.core.wire import encode_server_event
from voxwire.server.engines.responder import RulesResponder
from voxwire.server.engines.tts import Voice
from voxwire.server.engines.vad import TurnDetector
from voxwire.server.responses import ResponseManager

ANSWER = "Your parcel left the depot this morning and will be with you before noon today."
SCENARIO = Scenario.from_mapping({"fallback": ANSWER})
SEND_COST_S = 0.004  # what one send takes on the virtual clock


class VirtualClock:
    """Time that moves only when a wait asks it to, or a send spends it."""

    def __init__(self) -> None:
        self.t = 1_000.0

    def now(self) -> float:
        return self.t

    async def wait(self, wake: asyncio.Event, seconds: float) -> None:
        if not wake.is_set():
            self.t += max(0.0, seconds)
        await asyncio.sleep(0)


class Wire:
    """What the manager sent, each event with the virtual time it went out at."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.sent: list[tuple[float, dict[str, object]]] = []

    async def send(self, events: Sequence[ServerEvent]) -> None:
        for event in events:
            self.sent.append((self.clock.t, json.loads(encode_server_event(event))))
        self.clock.t += SEND_COST_S
        await asyncio.sleep(0)

    def of_type(self, kind: str) -> list[tuple[float, dict[str, object]]]:
        return [(t, e) for t, e in self.sent if e["type"] == kind]

    async def until(self, kind: str) -> None:
        for _ in range(100_000):
            if self.of_type(kind):
                return
            await asyncio.sleep(0.001)
        raise AssertionError(f"no {kind} was sent")


def manager(wire: Wire, voice: Voice, pacing: Pacing) -> tuple[ResponseManager, ServerSession]:
    ids = ServerIds(7)
    holder: list[ResponseManager] = []
    session = ServerSession(
        ids=ids,
        model="gpt-realtime",
        expires_at=2_000_000_000,
        output_modalities=["audio"],
        responding=lambda: holder[0].responding,
        turn_detection=TurnDetector.from_session,
    )
    responses = ResponseManager(session, wire.send, RulesResponder(SCENARIO), voice, pacing)
    holder.append(responses)
    return responses, session


def start_command(session: ServerSession) -> StartResponse:
    steps = session.handle(json.dumps({"type": "response.create", "event_id": "evt_1"}))
    (start,) = [step for step in steps if isinstance(step, StartResponse)]
    return start


def test_audio_follows_its_schedule_whatever_the_sends_cost() -> None:
    """At pace 1, the chunk after ``sent_ms`` of audio goes out at ``start + sent_ms``: the cost
    of sending is absorbed, never added up (a fixed sleep after each send drifted by it)."""

    async def main() -> None:
        clock = VirtualClock()
        wire = Wire(clock)
        voice = Voice(real_engine())
        pacing = Pacing(audio_pace=1.0, text_tokens_per_s=0, audio_chunk_ms=100, clock=clock)
        responses, session = manager(wire, voice, pacing)
        try:
            await responses.start(start_command(session))
            await wire.until("response.done")
        finally:
            await responses.close()
            voice.close()
        deltas = wire.of_type("response.output_audio.delta")
        assert len(deltas) > 20  # several seconds of speech
        first = deltas[0][0]
        sent_ms = 0.0
        for at, event in deltas:
            due = first + sent_ms / 1000.0
            assert at == pytest.approx(due, abs=1e-9)
            sent_ms += len(_audio(event)) / 48.0  # PCM16 at 24 kHz: 48 bytes a millisecond
        done_at = wire.of_type("response.done")[0][0]
        # The last chunk plays out, then the message's end and the response's end are sent (two
        # sends): of the cost of the chunks' sends, nothing is left.
        assert done_at - first == pytest.approx(sent_ms / 1000.0 + 2 * SEND_COST_S, abs=1e-6)

    asyncio.run(asyncio.wait_for(main(), 60))


def _audio(event: dict[str, object]) -> bytes:
    delta = event["delta"]
    assert isinstance(delta, str)
    return base64.b64decode(delta)


def test_a_response_cancelled_while_its_voice_speaks_sends_no_audio() -> None:
    """The cancel arrives while the voice synthesises the answer: not one chunk of it goes out,
    and the response ends cancelled (issue 30: the first chunk went out regardless)."""

    async def main() -> None:
        clock = VirtualClock()
        wire = Wire(clock)
        engine = HeldEngine(real_engine())
        voice = Voice(engine)
        pacing = Pacing(audio_pace=1.0, text_tokens_per_s=0, clock=clock)
        responses, session = manager(wire, voice, pacing)
        try:
            await responses.start(start_command(session))
            await wire.until("response.output_item.added")
            cancelling = asyncio.create_task(
                responses.cancel(CancelResponse(None, "turn_detected", None, quiet=True))
            )
            await asyncio.sleep(0)  # the cancel is noted; it now waits for the response's end
            engine.release.set()
            await asyncio.wait_for(cancelling, 20)
        finally:
            engine.release.set()
            await responses.close()
            voice.close()
        kinds = [e["type"] for _, e in wire.sent]
        assert "response.output_audio.delta" not in kinds
        assert "response.output_audio_transcript.delta" not in kinds
        (done,) = [e for _, e in wire.of_type("response.done")]
        response = done["response"]
        assert isinstance(response, dict)
        assert response["status"] == "cancelled"

    asyncio.run(asyncio.wait_for(main(), 60))
