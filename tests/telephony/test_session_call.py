"""The session's own face for a phone call: keys arrive as typed ``dtmf`` session events (no raw
server events needed), and ``session.refer()`` / ``session.hangup()`` control the call through
the ``call_control`` the application gives (``SipCalls``) — offline, against the local
server's SIP trunk."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.server.helpers import FAST
from voxwire.agents import RealtimeAgent
from voxwire.asyncio import DtmfEvent, RealtimeSession
from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.server import RealtimeServer, Scenario
from voxwire.server.phone import Caller, Pause, Press
from voxwire.server.sip import SipTrunk
from voxwire.telephony import DigitCollector, RealtimeCallIncoming, WebhookApp
from voxwire.telephony.sip import SipCalls

from .conftest import SECRET, serving_asgi

HUMAN = "tel:+15550100"
AGENT = RealtimeAgent(name="Phone", instructions="Answer the phone.", voice="marin")


async def _call(action: str, caller: Caller) -> tuple[Any, list[DtmfEvent], str]:
    keys: list[DtmfEvent] = []
    digits: list[str] = []
    async with RealtimeServer(
        scenario=Scenario.from_mapping({"fallback": "Hello."}), pacing=FAST, transcriber=None
    ) as server:
        calls_box: list[SipCalls] = []

        async def on_call(event: RealtimeCallIncoming) -> None:
            calls = calls_box[0]
            await calls.accept(event.call_id, AGENT)
            collector = DigitCollector(max_digits=4, terminator="#", timeout_s=30)
            async with RealtimeSession(
                AGENT,
                url=server.base_url + "/realtime",
                call_id=event.call_id,
                call_control=calls,
            ) as session:
                async for item in session:
                    if isinstance(item, DtmfEvent):
                        keys.append(item)
                        if collector.feed(item):
                            digits.append(collector.digits)
                            if action == "refer":
                                await session.refer(HUMAN)
                            else:
                                await session.hangup()
                    if item.type == "close":
                        break

        webhook = WebhookApp(SECRET, on_call)
        async with serving_asgi(webhook) as base:
            trunk = SipTrunk(server, webhook_url=f"{base}/webhook", secret=SECRET)
            async with trunk, SipCalls(base_url=trunk.api_base_url) as calls:
                calls_box.append(calls)
                phone = await trunk.call(caller)
                await phone.ended(timeout_s=60)
                await asyncio.wait_for(webhook.wait_calls(), 30)
    return phone, keys, "".join(digits)


@pytest.mark.parametrize(("action", "state"), [("refer", "referred"), ("hangup", "ended")])
def test_keys_are_session_events_and_the_session_controls_the_call(action: str, state: str) -> None:
    caller = Caller((Pause(300), Press("42#", interval_ms=100)), pace=0)
    phone, keys, digits = asyncio.run(_call(action, caller))
    assert [k.key for k in keys] == ["4", "2", "#"]
    assert all(k.type == "dtmf" and k.received_at > 0 for k in keys)
    assert digits == "42"
    assert phone.state == state
    if action == "refer":
        assert phone.call.refer_to == HUMAN


def test_call_control_is_checked_at_construction_and_needed_to_act() -> None:
    class NotAControl:
        pass

    with pytest.raises(ConfigurationError, match="call_control needs call_id"):
        RealtimeSession(AGENT, call_control=SipCalls())
    with pytest.raises(ConfigurationError, match=r"refer.*hangup"):
        RealtimeSession(AGENT, call_id="rtc_1", call_control=NotAControl())  # type: ignore[arg-type]

    async def body() -> None:
        session = RealtimeSession(AGENT, call_id="rtc_1")
        with pytest.raises(InvalidState, match="call_control"):
            await session.refer(HUMAN)
        with pytest.raises(InvalidState, match="call_control"):
            await session.hangup()

    asyncio.run(body())
