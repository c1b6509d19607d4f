"""voxwire's own face for a phone call over GPT-Live, end to end and offline: the local server's
emulated caller rings (``live.transport.incoming``), the application (``WebhookApp`` under
uvicorn) accepts it as a Live session (``LiveCalls.accept`` with the agent), a ``LiveSession``
attaches as its sideband (``LiveSession.attach``), the caller asks a question that the model
delegates — the agent's function tool runs for the Responses backend — presses a key (a
``dtmf`` event, collected by ``DigitCollector``), the session sends a key back
(``send_dtmf``/``dtmf_sent``) and the call is referred or hung up."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.server.helpers import FAST
from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import DtmfEvent, ToolEndEvent
from voxwire.asyncio.live import DtmfSentEvent, LiveSession, LiveTranscriptEvent
from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.protocol.sip import LiveCallIncoming
from voxwire.server import RealtimeServer
from voxwire.server.phone import Caller, Pause, Press
from voxwire.server.sip import PhoneCall, SipTrunk
from voxwire.telephony import DigitCollector, WebhookApp
from voxwire.telephony.live import LiveCalls, live_accept_session

from .conftest import SECRET, serving_asgi
from .test_live_call import SCENARIO, check_bodies, needs_whisper, question

HUMAN = "tel:+15550100"


@function_tool
async def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temperature": 21}


AGENT = RealtimeAgent(name="Phone", instructions="Answer the phone.", tools=[get_weather])


async def _run_call(action: str) -> tuple[PhoneCall, list[Any], str, LiveSession]:
    seen: list[Any] = []
    digits: list[str] = []
    sessions: list[LiveSession] = []
    async with RealtimeServer(scenario=SCENARIO, tts="hibari", pacing=FAST) as server:
        box: list[LiveCalls] = []

        async def on_live_call(event: LiveCallIncoming) -> None:
            calls = box[0]
            accepted = await calls.accept(event.session_id, AGENT)
            collector = DigitCollector(max_digits=1, timeout_s=60)
            session = LiveSession.attach(
                event.session_id, AGENT, session=accepted, url=f"{server.base_url}/live/sessions"
            )
            sessions.append(session)
            async with session:
                async for item in session:
                    seen.append(item)
                    if isinstance(item, DtmfEvent) and collector.feed(item):
                        digits.append(collector.digits)
                        await session.send_dtmf("9")
                    heard = "21 degrees" in "".join(
                        e.delta for e in seen if isinstance(e, LiveTranscriptEvent)
                    )
                    sent = any(isinstance(e, DtmfSentEvent) for e in seen)
                    if heard and len(digits) == 1 and sent:
                        if action == "refer":
                            await calls.refer(event.session_id, HUMAN)
                        else:
                            await calls.hangup(event.session_id)
                        digits.append("done")
                    if item.type == "close":
                        break

        webhook = WebhookApp(SECRET, on_live_call=on_live_call)
        async with serving_asgi(webhook) as base:
            trunk = SipTrunk(server, webhook_url=f"{base}/webhook", secret=SECRET)
            async with trunk, LiveCalls(base_url=trunk.api_base_url) as calls:
                box.append(calls)
                caller = Caller((Pause(400), question(), Pause(1500), Press("5")), pace=0)
                phone = await trunk.call(caller, api="live")
                await phone.ended(timeout_s=90)
                await asyncio.wait_for(webhook.wait_calls(), 30)
                check_bodies(trunk)
    return phone, seen, digits[0], sessions[0]


@needs_whisper
@pytest.mark.parametrize(("action", "state"), [("refer", "referred"), ("hangup", "ended")])
def test_a_live_session_answers_a_phone_call(action: str, state: str) -> None:
    phone, seen, digits, session = asyncio.run(_run_call(action))
    assert phone.state == state
    assert digits == "5"
    tool = next(e for e in seen if isinstance(e, ToolEndEvent))
    assert (tool.name, tool.output) == ("get_weather", '{"city":"Paris","temperature":21}')
    assert [e.key for e in seen if isinstance(e, DtmfEvent)] == ["5"]
    assert [e.key for e in seen if isinstance(e, DtmfSentEvent)] == ["9"]
    assert phone.line.keys_heard == ["9"]
    assert len(phone.line.heard()) > 8000
    assert seen[-1].type == "close"
    assert seen[-1].reason == "server_closed"
    assert [item.role for item in session.history] == ["user", "assistant"]
    assert session.history[1].text.endswith("It is 21 degrees in Paris.")
    assert session.metrics.tool_calls == 1
    assert session.attached_to == phone.call_id
    if action == "refer":
        assert phone.call.refer_to == HUMAN


def test_attach_options_and_sideband_rules() -> None:
    async def body() -> None:
        with pytest.raises(ConfigurationError, match="reconnect"):
            LiveSession.attach("sess_1", AGENT, reconnect=object())
        with pytest.raises(ConfigurationError, match="audio_input"):
            LiveSession.attach("sess_1", AGENT, audio_input=object())
        with pytest.raises(InvalidState, match=r"LiveSession\.attach"):
            await LiveSession(AGENT).send_dtmf("1")
        with pytest.raises(ConfigurationError, match="comes from the agent"):
            await live_accept_session(AGENT, extra={"audio": {}})
        session = await live_accept_session(AGENT, extra={"store": True})
        assert session["type"] == "live"
        assert session["store"] is True
        async with RealtimeServer(tts=None, transcriber=None) as server:
            calls_seen: list[LiveCallIncoming] = []
            webhook = WebhookApp(SECRET, on_live_call=calls_seen.append)
            async with serving_asgi(webhook) as base:
                trunk = SipTrunk(server, webhook_url=f"{base}/webhook", secret=SECRET)
                async with trunk, LiveCalls(base_url=trunk.api_base_url) as calls:
                    phone = await trunk.call(Caller(), api="live")
                    await calls.accept(phone.call_id, AGENT)
                    url = f"{server.base_url}/live/sessions"
                    async with LiveSession.attach(phone.call_id, AGENT, url=url) as live:
                        with pytest.raises(InvalidState, match="primary transport"):
                            await live.send_audio(b"\0\0")
                        await live.send_dtmf("#")
                        async for item in live:
                            if isinstance(item, DtmfSentEvent):
                                assert item.key == "#"
                                break
                    assert await phone.ended() == "ended"  # session.close ends the call
                    other = await trunk.call(Caller(), api="live")
                    await calls.reject(other.call_id)
                    assert other.call.status_code == 603

    asyncio.run(body())
