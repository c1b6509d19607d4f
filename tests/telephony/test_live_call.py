"""A phone line over GPT-Live on the local server, driven by the official ``openai`` client as
shipped (``client.live.sessions.accept/refer/hangup``, ``client.live.sideband.connect``): the
emulated caller rings (``live.transport.incoming``, signed), the call is accepted as a Live
session, the sideband attaches by session id, the caller speaks (hibari, webrtcvad,
faster-whisper) and presses a key, the Responses backend's function call is answered, a key is
sent back, the call is referred. Every sideband frame validates as
``openai.types.live.ConnectServerEvent``; every REST body as the official params types."""

from __future__ import annotations

import asyncio
import base64
import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache
from typing import Any

import numpy as np
import openai
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI
from openai.types.live import (
    ConnectServerEvent,
    SessionAcceptParams,
    SessionReferParams,
    SessionRejectParams,
)
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.live.mutations import mutate
from tests.live.samples import CLIENT
from tests.server.helpers import FAST
from tests.server.live.test_server import SCENARIO, WEATHER_TOOL
from voxwire.exceptions import WebhookError
from voxwire.live.client_events import SIDEBAND_CLIENT_EVENT_TYPES
from voxwire.protocol.sip import LiveCallIncoming, sign_webhook
from voxwire.server import RealtimeServer
from voxwire.server.core.calls import CallBook
from voxwire.server.engines.transcribe import WhisperTranscriber
from voxwire.server.engines.tts import Voice
from voxwire.server.live.core.config import start_problem
from voxwire.server.phone import Caller, Pause, Press, Speak
from voxwire.server.sip import PhoneCall, SipTrunk
from voxwire.telephony import WebhookApp, verify

from .conftest import SECRET, serving_asgi

OFFICIAL: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(ConnectServerEvent)
PARAMS: dict[str, Any] = {
    "accept": SessionAcceptParams,
    "reject": SessionRejectParams,
    "refer": SessionReferParams,
}
SESSION = {
    "type": "live",
    "model": "gpt-live-1",
    "instructions": "Answer the phone briefly.",
    "delegation": {"type": "responses", "responses": {"model": "gpt-5.5", "tools": [WEATHER_TOOL]}},
}
needs_whisper = pytest.mark.skipif(
    not WhisperTranscriber.installed(), reason="needs the transcribe extra (faster-whisper)"
)


@cache
def question() -> Speak:
    voice = Voice.load("hibari")
    try:
        spoken = voice.speak_blocking("What is the weather in Paris?", "alloy", 1.0, "audio/pcm")
    finally:
        voice.close()
    return Speak(np.frombuffer(spoken.audio, dtype="<i2").astype(np.int16), 24_000)


def caller() -> Caller:
    return Caller((Pause(400), question(), Pause(1500), Press("5")), pace=0)


class Sideband:
    """Reads the sideband's frames, each checked against the official types; ``until`` returns
    the next event of a kind not returned before (events read meanwhile are kept)."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.events: list[Any] = []
        self._taken: set[int] = set()

    async def until(self, kind: str, timeout_s: float = 60.0) -> Any:
        async def wait() -> Any:
            index = 0
            while True:
                while index < len(self.events):
                    event = self.events[index]
                    if event.type == kind and index not in self._taken:
                        self._taken.add(index)
                        return event
                    index += 1
                self.events.append(OFFICIAL.validate_json(await self.connection.recv_bytes()))

        return await asyncio.wait_for(wait(), timeout_s)

    def text(self, kind: str) -> str:
        return "".join(e.delta for e in self.events if e.type == kind)


@asynccontextmanager
async def line(**server_options: Any) -> AsyncIterator[tuple[Any, SipTrunk, list[Any]]]:
    """A local server with a SIP trunk, a webhook app recording Live calls, and the official
    client pointed at both (a dummy key)."""
    server_options.setdefault("pacing", FAST)
    async with RealtimeServer(**server_options) as server:
        calls: list[LiveCallIncoming] = []
        webhook = WebhookApp(SECRET, on_live_call=calls.append)
        async with serving_asgi(webhook) as base:
            trunk = SipTrunk(server, webhook_url=f"{base}/webhook", secret=SECRET)
            async with trunk:
                client = AsyncOpenAI(
                    api_key="sk-dummy",
                    base_url=trunk.api_base_url,
                    websocket_base_url=server.base_url,
                )
                yield client, trunk, calls


async def ring(trunk: SipTrunk, calls: list[LiveCallIncoming], who: Caller) -> PhoneCall:
    phone = await trunk.call(who, api="live")
    assert phone.webhook_status == 200
    for _ in range(200):
        if calls:
            break
        await asyncio.sleep(0.01)
    assert calls[-1].type == "live.transport.incoming"
    assert calls[-1].data.type == "sip"
    assert calls[-1].session_id == phone.call_id
    return phone


def check_bodies(trunk: SipTrunk) -> None:
    for request in trunk.requests:
        action = request.path.rsplit("/", 1)[1]
        if action == "hangup" or request.status != 200:
            continue
        raw = pydantic.TypeAdapter(dict[str, Any]).validate_json(request.body or b"{}")
        assert not set(raw) - set(PARAMS[action].__annotations__), raw
        pydantic.TypeAdapter(PARAMS[action]).validate_python(raw, strict=False)


async def answer_the_backend(live: Sideband, connection: Any) -> None:
    created = await live.until("session.delegation.created")
    assert created.delegation.target == "responses"
    call = await live.until("response.event")
    while call.event.get("type") != "response.output_item.done":
        call = await live.until("response.event")
    item = call.event["item"]
    assert (item["type"], item["name"]) == ("function_call", "get_weather")
    await connection.response.item.create(
        item={
            "type": "function_call_output",
            "call_id": item["call_id"],
            "output": '{"temperature": 21}',
        }
    )
    await connection.response.create()
    while "21 degrees" not in live.text("session.output_transcript.delta"):
        await live.until("session.usage.updated")


@needs_whisper
def test_official_client_answers_a_live_call_over_its_sideband() -> None:
    async def body() -> None:
        async with line(scenario=SCENARIO, tts="hibari") as (client, trunk, calls):
            phone = await ring(trunk, calls, caller())
            session_id = calls[0].session_id
            await client.live.sessions.accept(session_id, session=SESSION)
            assert await phone.answered() == "accepted"
            async with client.live.sideband.connect(session_id=session_id) as connection:
                live = Sideband(connection)
                started = await live.until("session.started")
                assert started.session.id == session_id
                assert started.session.delegation.type == "responses"
                await answer_the_backend(live, connection)
                assert "weather" in live.text("session.input_transcript.delta").lower()
                key = await live.until("transport.dtmf.received")
                assert key.event == "5"
                await connection.transport.dtmf.send(event="7", event_id="dtmf_1")
                sent = await live.until("transport.dtmf.sent")
                assert (sent.event, sent.client_event_id) == ("7", "dtmf_1")
                await connection.transport.dtmf.send(event="X", event_id="dtmf_2")
                error = await live.until("error")
                assert error.error.client_event_id == "dtmf_2"
                assert error.error.param == "event"
                await client.live.sessions.refer(session_id, target_uri="tel:+15550100")
                closed = await live.until("session.closed")
                assert closed.session.id == session_id
            assert await phone.ended() == "referred"
            assert phone.call.refer_to == "tel:+15550100"
            assert phone.line.keys_heard == ["7"]
            assert len(phone.line.heard()) > 8000  # the answer reached the handset
            reflected = [e for e in live.events if e.type == "session.input_audio.append"]
            assert sum(len(base64.b64decode(e.audio)) for e in reflected) > 24_000 * 2
            check_bodies(trunk)

    asyncio.run(body())


def test_rest_rules_of_a_live_call() -> None:
    async def body() -> None:
        async with line(tts=None, transcriber=None) as (client, trunk, calls):
            phone = await ring(trunk, calls, Caller())
            sid = phone.call_id
            bad: list[tuple[dict[str, Any], str]] = [
                (
                    {**SESSION, "audio": {"format": {"type": "audio/pcm", "rate": 24000}}},
                    "session.audio.format",
                ),
                ({k: v for k, v in SESSION.items() if k != "type"}, "session.type"),
                ({**SESSION, "type": "realtime"}, "session.type"),
                ({**SESSION, "model": "gpt-realtime"}, "session.model"),
                ({**SESSION, "voice": "marin"}, "session.voice"),
                ({k: v for k, v in SESSION.items() if k != "model"}, "session.model"),
            ]
            for session, param in bad:
                with pytest.raises(openai.BadRequestError) as refused:
                    await client.live.sessions.accept(sid, session=session)  # type: ignore[arg-type]
                assert refused.value.body["param"] == param, refused.value.body
            with pytest.raises(openai.NotFoundError):
                await client.realtime.calls.accept(sid, type="realtime")  # the other API
            with pytest.raises(openai.NotFoundError):
                await client.live.sessions.accept("sess_nope", session=SESSION)  # type: ignore[arg-type]
            with pytest.raises(InvalidStatus) as early:  # no sideband before the accept
                async with connect(f"{trunk_ws(client)}/live/sessions/{sid}/attach"):
                    pass
            assert early.value.response.status_code == 404
            with pytest.raises(openai.BadRequestError):
                await client.post(f"/live/sessions/{sid}/reject", body={}, cast_to=object)
            await client.live.sessions.reject(sid, status_code=486)
            assert phone.call.status_code == 486
            other = await ring(trunk, calls, Caller())
            await client.live.sessions.accept(other.call_id, session=SESSION)
            async with client.live.sideband.connect(session_id=other.call_id) as connection:
                await Sideband(connection).until("session.started")
                with pytest.raises(InvalidStatus) as second:  # one sideband per call
                    async with connect(f"{trunk_ws(client)}/live/sessions/{other.call_id}/attach"):
                        pass
                assert second.value.response.status_code == 404
                with pytest.raises(openai.BadRequestError) as unknown:
                    await client.post(
                        f"/live/sessions/{other.call_id}/refer",
                        body={"target_uri": "tel:+1555", "x": 1},
                        cast_to=object,
                    )
                assert unknown.value.body["code"] == "unknown_parameter"
                await client.live.sessions.hangup(other.call_id)
            assert await other.ended() == "ended"
            with pytest.raises(openai.BadRequestError) as late:
                await client.live.sessions.accept(sid, session=SESSION)  # type: ignore[arg-type]
            assert late.value.body["param"] == "session_id"
            check_bodies(trunk)

    asyncio.run(body())


@pytest.mark.parametrize(
    "data",
    [{}, {"session_id": 5, "sip_headers": []}, {"session_id": "s", "sip_headers": "x"}],
)
def test_a_malformed_live_webhook_is_refused(data: dict[str, Any]) -> None:
    body = json.dumps({"id": "e", "type": "live.transport.incoming", "created_at": 1, "data": data})
    headers = sign_webhook(body.encode(), secret=SECRET, webhook_id="w", timestamp_s=1000)
    with pytest.raises(WebhookError) as refused:
        verify(headers, body, SECRET, now_s=1000)
    assert refused.value.reason == "malformed"
    old = {"session_id": "s", "sip_headers": [{"name": "From", "value": "a"}]}
    body = json.dumps({"id": "e", "type": "live.call.incoming", "created_at": 1, "data": old})
    headers = sign_webhook(body.encode(), secret=SECRET, webhook_id="w", timestamp_s=1000)
    event = verify(headers, body, SECRET, now_s=1000)
    assert isinstance(event, LiveCallIncoming)
    assert (event.session_id, event.data.type, event.sip_header("FROM")) == ("s", None, "a")


def test_the_live_webhook_unwraps_with_the_official_client() -> None:
    async def body() -> None:
        async with line(tts=None, transcriber=None) as (client, trunk, calls):
            phone = await ring(trunk, calls, Caller())
            headers, raw = trunk.webhooks_sent[-1]
            event = client.webhooks.unwrap(raw, headers, secret=SECRET)
            assert event.type == "live.transport.incoming"
            assert event.data.session_id == phone.call_id
            assert calls[0].sip_header("to") == event.data.sip_headers[1].value

    asyncio.run(body())


@pytest.mark.parametrize("seed", range(3))
def test_mutated_sideband_frames_never_close_the_call(seed: int) -> None:
    rng = random.Random(9000 + seed)
    kinds = sorted(k for k in SIDEBAND_CLIENT_EVENT_TYPES if k in CLIENT and k != "session.close")
    samples = [CLIENT[k] for k in kinds]
    samples.append({"type": "transport.dtmf.send", "event": "1", "event_id": "d"})

    async def body() -> None:
        async with line(tts=None, transcriber=None) as (client, trunk, calls):
            phone = await ring(trunk, calls, Caller())
            await client.live.sessions.accept(phone.call_id, session=SESSION)
            async with client.live.sideband.connect(session_id=phone.call_id) as connection:
                live = Sideband(connection)
                await live.until("session.started")
                for _ in range(150):
                    await connection.send_raw(mutate(rng, rng.choice(samples)))
                await connection.session.input_audio.mute(event_id="still_here")
                while (await live.until("session.input_audio.muted")).client_event_id != (
                    "still_here"
                ):
                    pass
                assert any(e.type == "error" for e in live.events)
            assert await phone.ended() == "ended"  # the sideband closed: the call ended with it

    asyncio.run(body())


def trunk_ws(client: Any) -> str:
    return str(client.websocket_base_url).rstrip("/")


_KEYS = st.sampled_from(
    ["session", "type", "model", "audio", "format", "delegation", "status_code", "target_uri", "x"]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20) | st.just("live"),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=5),
    max_leaves=16,
)


@settings(max_examples=400, deadline=None)
@given(
    action=st.sampled_from(["accept", "reject", "refer", "hangup", "attach", ""]),
    api=st.sampled_from(["live/sessions", "realtime/calls"]),
    accepted=st.booleans(),
    body=st.one_of(
        st.binary(max_size=200),
        _JSON.map(lambda value: json.dumps(value).encode()),
        _JSON.map(lambda value: json.dumps({"session": {**SESSION, "x": value}}).encode()),
        _JSON.map(lambda value: json.dumps({"session": {**SESSION, "audio": value}}).encode()),
    ),
)
def test_fuzz_the_live_rest_routes_never_raise(
    action: str, api: str, accepted: bool, body: bytes
) -> None:
    book = CallBook(start_problem)
    book.ring("sess_1", [], "live")
    if accepted:
        assert (
            book.handle(
                "POST", "/v1/live/sessions/sess_1/accept", json.dumps({"session": SESSION}).encode()
            ).status
            == 200
        )
    answer = book.handle("POST", f"/v1/{api}/sess_1/{action}", body)
    assert answer.status in (200, 400, 404, 413)
    if answer.status == 200:
        assert answer.body is None
        assert api == "live/sessions"
        # null in an optional field is "not given" (the local server's rule, docs/server.md):
        # what is accepted is not always what the official TypedDicts would let a client send
        assert book.calls["sess_1"].state != "ringing"
    else:
        assert answer.body is not None
        assert set(answer.body["error"]) == {"message", "type", "code", "param"}
        json.dumps(answer.body)
