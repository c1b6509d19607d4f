"""The SIP flow end to end, offline: the local server's trunk announces a call to a webhook app
(uvicorn on loopback), the app verifies it, accepts it with an agent's configuration, attaches
a RealtimeSession by call_id, the caller speaks and presses keys, the agent calls a tool, the
digits are collected, and the call is transferred (refer) or hung up — every REST body checked
against the official ``openai`` params types and every event on the call's websocket against
the official server event types."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from openai.types.realtime import InputAudioBufferDtmfEventReceivedEvent

from tests.server.helpers import FAST, check_official
from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import RawServerEvent, RealtimeSession
from voxwire.audio import read_wav
from voxwire.protocol.codec import raw_fields
from voxwire.server import RealtimeServer, Scenario
from voxwire.server.phone import Caller, Pause, Press
from voxwire.server.sip import PhoneCall, SipTrunk
from voxwire.telephony import DigitCollector, RealtimeCallIncoming, WebhookApp
from voxwire.telephony.sip import SipCalls
from voxwire.telephony.tools import SipCall, hangup_tool, transfer_tool

from .conftest import SECRET, caller_speech, check_official_body, serving_asgi

HUMAN = "tel:+15550100"
SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {
                "match": "account number is",
                "call": {"name": "lookup_account", "arguments": {"number": "1234"}},
            },
            {
                "after_tool": "lookup_account",
                "say": "Thank you {output.name}. I am transferring you now.",
                "call": {"name": "transfer_to_human", "arguments": {}},
            },
            {"match": "goodbye", "say": "Goodbye!", "call": {"name": "hang_up", "arguments": {}}},
        ],
        "fallback": "Welcome. Please enter your account number, then press pound.",
    }
)


class App:
    """The application under test: what a user of voxwire.telephony writes."""

    def __init__(self, server: RealtimeServer) -> None:
        self.server = server
        self.calls: SipCalls | None = None
        self.lookups: list[str] = []
        self.digits: dict[str, str] = {}
        self.events: dict[str, list[dict[str, Any]]] = {}
        self.accepted: dict[str, dict[str, Any]] = {}
        self.reject_next: int | None = None
        self.say_goodbye = False

        @function_tool
        def lookup_account(number: str) -> dict[str, str]:
            """Find the caller's account by its number."""
            self.lookups.append(number)
            return {"name": "Ada"}

        self.agent = RealtimeAgent(
            name="Phone",
            instructions="You answer the phone for the bank.",
            voice="marin",
            tools=[lookup_account, transfer_tool(HUMAN), hangup_tool()],
        )

    async def on_call(self, event: RealtimeCallIncoming) -> None:
        assert self.calls is not None
        call_id = event.call_id
        if self.reject_next is not None:
            await self.calls.reject(call_id, self.reject_next)
            return
        self.accepted[call_id] = await self.calls.accept(
            call_id,
            self.agent,
            config={"audio": {"input": {"turn_detection": {"type": "server_vad"}}}},
        )
        events = self.events.setdefault(call_id, [])
        collector = DigitCollector(max_digits=8, terminator="#", timeout_s=30)
        async with RealtimeSession(
            self.agent,
            url=self.server.base_url + "/realtime",
            call_id=call_id,
            raw_server_events=True,
            context=SipCall(self.calls, call_id),
        ) as session:
            if self.say_goodbye:
                await session.send_message("goodbye")
            async for item in session:
                if isinstance(item, RawServerEvent):
                    raw = raw_fields(item.event)
                    assert raw is not None
                    events.append(raw)
                    if not collector.done and collector.feed(item):
                        self.digits[call_id] = collector.digits
                        await session.send_message(f"My account number is {collector.digits}")
                if item.type == "close":
                    break


async def _run_call(
    tmp_path: Path, caller: Caller, configure: Any = None
) -> tuple[App, SipTrunk, PhoneCall]:
    async with RealtimeServer(scenario=SCENARIO, pacing=FAST, transcriber=None) as server:
        app = App(server)
        if configure is not None:
            configure(app)
        webhook = WebhookApp(SECRET, app.on_call)
        async with serving_asgi(webhook) as base:
            trunk = SipTrunk(server, webhook_url=f"{base}/webhook", secret=SECRET)
            async with trunk, SipCalls(base_url=trunk.api_base_url) as calls:
                app.calls = calls
                phone = await trunk.call(caller)
                await phone.ended(timeout_s=60)
                await asyncio.wait_for(webhook.wait_calls(), 30)
    assert webhook.refused == []
    return app, trunk, phone


def _check_rest(trunk: SipTrunk, expected: list[tuple[str, int]]) -> None:
    seen = [(r.path.rsplit("/", 1)[-1], r.status) for r in trunk.requests]
    assert seen == expected, [(r.path, r.status, r.answer) for r in trunk.requests]
    for request in trunk.requests:
        check_official_body(request.path.rsplit("/", 1)[-1], request.body)


def test_accept_attach_tool_dtmf_and_transfer(tmp_path: Path) -> None:
    caller = Caller((caller_speech(), Pause(900), Press("1234#", interval_ms=100)), pace=0)
    app, trunk, phone = asyncio.run(_run_call(tmp_path, caller))
    assert phone.webhook_status == 200
    assert phone.state == "referred"
    assert phone.call.refer_to == HUMAN
    _check_rest(trunk, [("accept", 200), ("refer", 200)])
    # The accept body is the agent's configuration, normalised as session.update is.
    accepted = app.accepted[phone.call_id]
    assert accepted["instructions"] == "You answer the phone for the bank."
    assert accepted["audio"]["output"]["voice"] == "marin"
    assert accepted["audio"]["input"]["turn_detection"] == {"type": "server_vad"}
    names = [tool["name"] for tool in accepted["tools"]]
    assert names == ["lookup_account", "transfer_to_human", "hang_up"]
    assert json.loads(trunk.requests[0].body) == accepted
    # The caller's keys were collected (terminator excluded) and the tool ran with them.
    assert app.digits == {phone.call_id: "1234"}
    assert app.lookups == ["1234"]
    # Every event on the call's websocket is an official one; the keys arrived typed.
    events = app.events[phone.call_id]
    for raw in events:
        check_official(raw)
    keys = [e for e in events if e["type"] == "input_audio_buffer.dtmf_event_received"]
    assert [k["event"] for k in keys] == list("1234#")
    for key in keys:
        InputAudioBufferDtmfEventReceivedEvent.model_validate(key)
    assert "input_audio_buffer.speech_started" in [e["type"] for e in events]
    # Audio went to the phone, not the websocket; the phone heard the agent at 8 kHz.
    assert not [e for e in events if e["type"] == "response.output_audio.delta"]
    heard = phone.line.heard()
    assert len(heard) > 8000
    assert abs(heard.astype(int)).max() > 1000
    phone.line.write_heard(tmp_path / "heard.wav")
    wav = read_wav(tmp_path / "heard.wav")
    assert wav.rate_hz == 8000
    assert len(wav.pcm) == len(heard)


def test_the_agent_hangs_up_with_the_ready_made_tool(tmp_path: Path) -> None:
    def configure(app: App) -> None:
        app.say_goodbye = True

    app, trunk, phone = asyncio.run(_run_call(tmp_path, Caller(), configure))
    assert phone.state == "ended"
    _check_rest(trunk, [("accept", 200), ("hangup", 200)])
    types = [e["type"] for e in app.events[phone.call_id]]
    assert "response.function_call_arguments.done" in types


@pytest.mark.parametrize("status", [486, 603])
def test_a_rejected_call_never_attaches(tmp_path: Path, status: int) -> None:
    def configure(app: App) -> None:
        app.reject_next = status

    app, trunk, phone = asyncio.run(_run_call(tmp_path, Caller(), configure))
    assert phone.state == "rejected"
    assert phone.call.status_code == status
    _check_rest(trunk, [("reject", 200)])
    assert app.events == {}
