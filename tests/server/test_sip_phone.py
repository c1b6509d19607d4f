"""The emulated phone: a caller WAV at real-time pace into a G.711 µ-law session input, keys as
typed events, the agent's audio kept off the websocket; and the REST core never raises,
whatever a client sends (fuzzed)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import numpy as np
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect

from tests.telephony.conftest import SECRET, serving_asgi
from voxwire.audio import write_wav
from voxwire.exceptions import ConfigurationError
from voxwire.server import RealtimeServer
from voxwire.server.core.calls import CallBook
from voxwire.server.live.core.config import start_problem
from voxwire.server.phone import Caller, Pause, Press
from voxwire.server.sip import SipTrunk

from .helpers import FAST, check_official


async def _ok(scope: dict[str, object], receive: object, send: object) -> None:
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": []})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]


def test_a_caller_wav_plays_at_real_time_pace_into_a_pcmu_input(tmp_path: Path) -> None:
    tone = (3000 * np.sin(np.arange(4800) * 2 * np.pi * 440 / 16000)).astype(np.int16)
    write_wav(tmp_path / "caller.wav", tone, 16_000)  # 0.3 s at 16 kHz
    caller = Caller.from_wav(tmp_path / "caller.wav", pace=1.0)
    caller = Caller((*caller.steps, Pause(200), Press("5#", interval_ms=50)), pace=1.0)

    async def body() -> None:
        async with (
            RealtimeServer(pacing=FAST, tts=None, transcriber=None) as server,
            serving_asgi(_ok) as base,
            SipTrunk(server, webhook_url=base, secret=SECRET) as trunk,
        ):
            phone = await trunk.call(caller)
            client = openai.AsyncOpenAI(api_key="x", base_url=trunk.api_base_url, max_retries=0)
            pcmu = {"type": "audio/pcmu"}
            await client.realtime.calls.accept(
                phone.call_id,
                type="realtime",
                audio={
                    "input": {"format": pcmu, "turn_detection": None},
                    "output": {"format": pcmu},
                },
            )
            await client.close()
            url = f"{server.base_url}/realtime?call_id={phone.call_id}"
            async with connect(url) as ws:
                start = time.monotonic()
                await phone.caller_finished()
                elapsed_s = time.monotonic() - start
                await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
                received = []
                while not any(e["type"] == "input_audio_buffer.committed" for e in received):
                    received.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
            # 0.3 s of speech, 0.2 s of pause, two keys 50 ms apart: at least 0.6 s of line time.
            assert elapsed_s >= 0.55
            for event in received:
                check_official(event)
            created = received[0]
            assert created["type"] == "session.created"
            assert created["session"]["audio"]["input"]["format"]["type"] == "audio/pcmu"
            keys = [e["event"] for e in received if e["type"].endswith("dtmf_event_received")]
            assert keys == ["5", "#"]
            assert [d.event for d in phone.line.dtmf_sent] == ["5", "#"]

    asyncio.run(body())


def test_press_takes_only_dtmf_keys_and_the_caller_checks_its_pace() -> None:
    with pytest.raises(ConfigurationError, match="DTMF"):
        Press("12x")
    with pytest.raises(ConfigurationError, match="pace"):
        Caller(pace=-1)
    with pytest.raises(ConfigurationError, match="frame_ms"):
        Caller(frame_ms=5)


@settings(max_examples=300, deadline=None)
@given(
    method=st.sampled_from(["POST", "GET", "PUT", "DELETE", "P\x00ST"]),
    action=st.sampled_from(["accept", "reject", "refer", "hangup", "x", ""]),
    known=st.booleans(),
    body=st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda children: (
                st.lists(children, max_size=4)
                | st.dictionaries(
                    st.sampled_from(["type", "status_code", "target_uri", "model", "audio", "x"]),
                    children,
                    max_size=4,
                )
            ),
            max_leaves=12,
        ).map(lambda value: json.dumps(value).encode()),
    ),
)
def test_fuzz_the_rest_core_never_raises(
    method: str, action: str, known: bool, body: bytes
) -> None:
    book = CallBook(start_problem)
    book.ring("rtc_1", [])
    call_id = "rtc_1" if known else "rtc_2"
    answer = book.handle(method, f"/v1/realtime/calls/{call_id}/{action}", body)
    assert answer.status in (200, 400, 404, 405, 413)
    if answer.status == 200:
        assert answer.body is None
        assert book.calls["rtc_1"].state != "ringing"
    else:
        assert answer.body is not None
        assert set(answer.body["error"]) == {"message", "type", "code", "param"}
        json.dumps(answer.body)


def test_an_unreachable_webhook_says_so() -> None:
    async def body() -> None:
        async with RealtimeServer(pacing=FAST, tts=None, transcriber=None) as server:
            trunk = SipTrunk(server, webhook_url="http://127.0.0.1:9/hook", secret=SECRET)
            async with trunk:
                with pytest.raises(ConnectionError, match="cannot be reached"):
                    await trunk.call()
            with pytest.raises(ValueError, match="http://"):
                SipTrunk(server, webhook_url="https://example.com/", secret=SECRET)
            with pytest.raises(ConfigurationError, match="whsec_"):
                SipTrunk(server, webhook_url="http://127.0.0.1:9/", secret="plain")

    asyncio.run(body())
