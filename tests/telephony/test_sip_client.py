"""SipCalls against the local server's trunk: errors become CallControlError with the service's
status and code; bad arguments are caught before any request; the phone tools find their call
from the session's context."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.server.helpers import FAST
from voxwire.agents import RealtimeAgent
from voxwire.agents.tool import ToolCall, ToolContext
from voxwire.exceptions import CallControlError, ConfigurationError
from voxwire.server import RealtimeServer
from voxwire.server.sip import SipTrunk
from voxwire.telephony.sip import SipCalls
from voxwire.telephony.tools import SipCall, hangup_tool, transfer_tool

from .conftest import SECRET, serving_asgi


async def _ok(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def test_errors_carry_the_status_and_code() -> None:
    async def body() -> None:
        async with (
            RealtimeServer(pacing=FAST, tts=None, transcriber=None, token="tok") as server,
            serving_asgi(_ok) as base,
            SipTrunk(server, webhook_url=base, secret=SECRET) as trunk,
        ):
            phone = await trunk.call()
            assert phone.webhook_status == 204
            async with SipCalls(base_url=trunk.api_base_url, api_key="wrong") as calls:
                with pytest.raises(CallControlError, match="HTTP 401 invalid_api_key") as caught:
                    await calls.hangup(phone.call_id)
                assert caught.value.status == 401
                assert "wrong" not in str(caught.value)
                assert "wrong" not in repr(calls)
            async with SipCalls(base_url=trunk.api_base_url, api_key="tok") as calls:
                with pytest.raises(CallControlError, match="404 call_not_found") as caught:
                    await calls.accept("rtc_unknown")
                assert caught.value.code == "call_not_found"
                with pytest.raises(CallControlError, match="call_not_active"):
                    await calls.refer(phone.call_id, "tel:+15550100")
                body_sent = await calls.accept(
                    phone.call_id, config={"audio": {"input": {"turn_detection": None}}}
                )
                assert body_sent == {
                    "type": "realtime",
                    "audio": {"input": {"turn_detection": None}},
                }
                await calls.hangup(phone.call_id)
                assert await phone.ended() == "ended"
            port = int(trunk.api_base_url.rsplit(":", 1)[1].split("/")[0])
        async with SipCalls(base_url=f"http://127.0.0.1:{port}/v1", timeout_s=2) as calls:
            with pytest.raises(CallControlError, match="hangup of call rtc_x failed") as caught:
                await calls.hangup("rtc_x")  # the trunk is gone: nothing answers
            assert caught.value.status is None

    asyncio.run(body())


def test_bad_arguments_fail_before_any_request() -> None:
    async def body() -> None:
        async with SipCalls(base_url="http://127.0.0.1:9/v1") as calls:
            with pytest.raises(ConfigurationError, match="call_id"):
                await calls.hangup("")
            with pytest.raises(ConfigurationError, match="call_id"):
                await calls.hangup("a/b")
            with pytest.raises(ConfigurationError, match="status_code"):
                await calls.reject("rtc_1", 200)
            with pytest.raises(ConfigurationError, match="target_uri"):
                await calls.refer("rtc_1", "nowhere")
        with pytest.raises(ConfigurationError, match="base_url"):
            SipCalls(base_url="ws://x")

    asyncio.run(body())


class _Holder:
    def __init__(self, call: SipCall) -> None:
        self.sip_call = call


def test_the_tools_find_their_call_or_say_how_to_give_it() -> None:
    async def body() -> None:
        done: list[tuple[str, str]] = []

        class Recording(SipCalls):
            async def refer(self, call_id: str, target_uri: str) -> None:
                done.append((call_id, target_uri))

            async def hangup(self, call_id: str) -> None:
                done.append((call_id, "hangup"))

        calls = Recording(base_url="http://127.0.0.1:9/v1")
        agent = RealtimeAgent(name="a")
        call = ToolCall(call_id="c", name="t", arguments={}, raw_arguments="{}", agent=agent)
        transfer = transfer_tool("tel:+15550100")
        hang_up = hangup_tool(call=SipCall(calls, "rtc_given"), delay_s=0.01)
        await transfer.function(ToolContext(call=call, context=SipCall(calls, "rtc_ctx")))
        await transfer.function(ToolContext(call=call, context=_Holder(SipCall(calls, "rtc_attr"))))
        await hang_up.function(ToolContext(call=call, context=None))
        with pytest.raises(ConfigurationError, match="does not know its call"):
            await transfer.function(ToolContext(call=call, context=object()))
        await calls.aclose()
        assert done == [
            ("rtc_ctx", "tel:+15550100"),
            ("rtc_attr", "tel:+15550100"),
            ("rtc_given", "hangup"),
        ]
        assert transfer.name == "transfer_to_human"
        assert hang_up.name == "hang_up"
        with pytest.raises(ConfigurationError):
            transfer_tool("mailto:x")

    asyncio.run(body())
