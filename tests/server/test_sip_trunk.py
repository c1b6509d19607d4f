"""The SIP emulation's REST endpoints, driven by the official ``openai`` client (its
``realtime.calls`` resource) and by raw HTTP: success is an empty 200, errors carry the
service's JSON error body and map to the official client's exception classes; the websocket
attaches only to an accepted call. A plain stub answers the webhook here (the full application
is in tests/telephony/test_sip_flow.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import openai
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.telephony.conftest import SECRET, serving_asgi
from voxwire.server import RealtimeServer
from voxwire.server.sip import PhoneCall, SipTrunk

from .helpers import FAST


async def _ok(scope: dict[str, object], receive: object, send: object) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})  # type: ignore[operator]
    await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]


@asynccontextmanager
async def ringing(
    token: str | None = None,
) -> AsyncIterator[tuple[SipTrunk, PhoneCall, RealtimeServer]]:
    async with (
        RealtimeServer(pacing=FAST, tts=None, transcriber=None, token=token) as server,
        serving_asgi(_ok) as base,
        SipTrunk(server, webhook_url=f"{base}/hook", secret=SECRET) as trunk,
    ):
        phone = await trunk.call()
        assert phone.webhook_status == 200
        yield trunk, phone, server


def official(trunk: SipTrunk, key: str = "unused") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key=key, base_url=trunk.api_base_url, max_retries=0)


def test_the_official_client_accepts_refers_and_hangs_up() -> None:
    async def body() -> None:
        async with ringing() as (trunk, phone, _server):
            client = official(trunk)
            await client.realtime.calls.accept(
                phone.call_id, type="realtime", instructions="Be brief.", model="gpt-realtime"
            )
            assert await phone.answered() == "accepted"
            with pytest.raises(openai.BadRequestError, match="only a ringing call"):
                await client.realtime.calls.accept(phone.call_id, type="realtime")
            with pytest.raises(openai.BadRequestError, match="target_uri"):
                await client.realtime.calls.refer(phone.call_id, target_uri="mailto:x@y")
            await client.realtime.calls.refer(phone.call_id, target_uri="sip:agent@example.com")
            assert await phone.ended() == "referred"
            with pytest.raises(openai.BadRequestError, match="only an accepted call"):
                await client.realtime.calls.hangup(phone.call_id)
            await client.close()
        assert [r.status for r in trunk.requests] == [200, 400, 400, 200, 400]

    asyncio.run(body())


def test_errors_of_the_official_client() -> None:
    async def body() -> None:
        async with ringing() as (trunk, phone, _server):
            client = official(trunk)
            with pytest.raises(openai.NotFoundError, match="No call found"):
                await client.realtime.calls.reject("rtc_nope")
            with pytest.raises(openai.BadRequestError, match="status_code"):
                await client.realtime.calls.reject(phone.call_id, status_code=200)
            with pytest.raises(openai.BadRequestError, match="only 'realtime' sessions"):
                await client.realtime.calls.accept(phone.call_id, type="transcription")  # type: ignore[arg-type]
            with pytest.raises(openai.BadRequestError, match="voice"):
                await client.realtime.calls.accept(
                    phone.call_id, type="realtime", audio={"output": {"voice": "nobody"}}
                )
            with pytest.raises(openai.BadRequestError, match="only an accepted call"):
                await client.realtime.calls.hangup(phone.call_id)
            await client.realtime.calls.reject(phone.call_id)
            assert await phone.ended() == "rejected"
            assert phone.call.status_code == 603  # the documented default
            await client.close()

    asyncio.run(body())


def test_raw_http_routes_bodies_and_the_token() -> None:
    async def body() -> None:
        async with ringing(token="sk-local") as (trunk, phone, _server):
            base = trunk.api_base_url
            async with httpx.AsyncClient() as http:
                denied = await http.post(f"{base}/realtime/calls/{phone.call_id}/hangup")
                assert denied.status_code == 401
                assert "sk-local" not in denied.text
                auth = {"Authorization": "Bearer sk-local"}
                url = f"{base}/realtime/calls/{phone.call_id}"
                cases = [
                    ("GET", f"{url}/accept", None, 405),
                    ("POST", f"{url}/dance", None, 404),
                    ("POST", f"{base}/elsewhere", None, 404),
                    ("POST", f"{url}/accept", b"", 400),
                    ("POST", f"{url}/accept", b"{not json", 400),
                    ("POST", f"{url}/accept", b"[]", 400),
                    ("POST", f"{url}/accept", b'{"type": "realtime", "model": 5}', 400),
                    ("POST", f"{url}/reject", b'{"status_code": 486, "why": 1}', 400),
                    ("POST", f"{url}/refer", b"{}", 400),
                ]
                for method, where, content, status in cases:
                    answer = await http.request(method, where, content=content, headers=auth)
                    assert answer.status_code == status, (method, where, content, answer.text)
                    error = answer.json()["error"]
                    assert set(error) == {"message", "type", "code", "param"}
                ok = await http.post(f"{url}/reject", json={"status_code": 486}, headers=auth)
                assert (ok.status_code, ok.content) == (200, b"")
            assert phone.call.status_code == 486

    asyncio.run(body())


def test_the_websocket_attaches_only_to_an_accepted_call() -> None:
    async def body() -> None:
        async with ringing() as (trunk, phone, server):
            url = f"{server.base_url}/realtime?call_id={phone.call_id}"
            with pytest.raises(InvalidStatus) as caught:
                async with connect(url):
                    pass
            assert caught.value.response.status_code == 404
            client = official(trunk)
            await client.realtime.calls.accept(phone.call_id, type="realtime")
            async with connect(url) as ws:
                created = await asyncio.wait_for(ws.recv(), 5)
                assert '"session.created"' in str(created)
                await client.realtime.calls.hangup(phone.call_id)
                assert await phone.ended() == "ended"
                await asyncio.wait_for(ws.wait_closed(), 5)
            assert ws.close_code == 1000
            await client.close()

    asyncio.run(body())
