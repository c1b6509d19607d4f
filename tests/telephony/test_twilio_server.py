"""The phone server: the voice webhook (TwiML), Twilio signatures, stream tokens, DTMF, and
`voxwire phone` run for real with a simulated call through it to the local server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect

from voxwire.asyncio import RealtimeSession
from voxwire.asyncio import events as ev
from voxwire.audio import Resampler, read_wav, write_wav
from voxwire.exceptions import InvalidState
from voxwire.server import Pacing, RealtimeServer, Scenario
from voxwire.telephony.twilio import (
    CallInfo,
    PhoneServer,
    TwilioBridge,
    TwilioCallSimulator,
    twilio_signature,
)

from .twilio_helpers import AGENT, CONFIG, SCENARIO, run, spoken

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "twilio-auth-token-for-tests"
FAST = Pacing(audio_pace=0, text_tokens_per_s=0)
FALLBACK = "Good morning, this is the shop. How can I help?"


async def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    return await fetch(url, None, headers)


async def post(
    url: str, form: dict[str, str], headers: dict[str, str] | None = None
) -> tuple[int, str]:
    return await fetch(url, urllib.parse.urlencode(form).encode(), headers)


async def fetch(url: str, data: bytes | None, headers: dict[str, str] | None) -> tuple[int, str]:
    """An HTTP request (POST with ``data``), off the event loop: ``(status, body)``."""

    def blocking() -> tuple[int, str]:
        request = urllib.request.Request(url, data=data, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    return await asyncio.to_thread(blocking)


def stream_of(twiml: str) -> tuple[str, dict[str, str]]:
    root = ElementTree.fromstring(twiml)
    stream = root.find("./Connect/Stream")
    assert stream is not None
    parameters = {p.get("name", ""): p.get("value", "") for p in stream.findall("Parameter")}
    return stream.get("url", ""), parameters


def test_the_webhook_answers_twiml_that_connects_a_bidirectional_stream() -> None:
    async def body() -> None:
        async with PhoneServer(TwilioBridge(AGENT), public_url="https://phone.example.com/") as ph:
            status, twiml = await get(ph.url("/twiml?CallSid=CA1"))
            assert status == 200
            url, parameters = stream_of(twiml)
            assert url == "wss://phone.example.com/media"
            assert set(parameters) == {"voxwire_token"}
            assert (await get(ph.url("/elsewhere")))[0] == 404

    run(body())


def test_a_webhook_without_a_valid_signature_is_refused() -> None:
    async def body() -> None:
        public = "https://phone.example.com"
        bridge = TwilioBridge(AGENT)
        async with PhoneServer(bridge, public_url=public, auth_token=TOKEN) as ph:
            path = "/twiml?CallSid=CA1&From=%2B15550100"
            status, text = await get(ph.url(path))
            assert status == 403
            assert "X-Twilio-Signature" in text
            forged = {"X-Twilio-Signature": twilio_signature("another token", public + path)}
            assert (await get(ph.url(path), forged))[0] == 403
            signed = {"X-Twilio-Signature": twilio_signature(TOKEN, public + path)}
            status, twiml = await get(ph.url(path), signed)
            assert status == 200
            assert stream_of(twiml)[0] == "wss://phone.example.com/media"

    run(body())


def test_a_stream_runs_the_agent_only_with_the_token_of_its_signed_webhook() -> None:
    async def body() -> list[Any]:
        public = "https://phone.example.com"
        form = {"CallSid": "CA77"}
        signed = {"X-Twilio-Signature": twilio_signature(TOKEN, public + "/twiml", form)}
        async with RealtimeServer(scenario=SCENARIO, pacing=FAST, tts=None) as server:
            bridge = TwilioBridge(AGENT, url=server.url())
            async with PhoneServer(bridge, public_url=public, auth_token=TOKEN) as ph:
                parameters = stream_of((await post(ph.url("/twiml"), form, signed))[1])[1]
                media = ph.url("/media", scheme="ws")
                for call_sid, given in (("CA77", {}), ("CA78", parameters), ("CA77", parameters)):
                    call = TwilioCallSimulator(media, call_sid=call_sid, custom_parameters=given)
                    async with call:
                        await call.listen(100)
                        await asyncio.sleep(0.1)
                    refused = "this stream was not started by a signed webhook"
                    owner = call_sid == "CA77" and given is parameters
                    assert call.closed_by_bridge == (None if owner else refused)
                await asyncio.sleep(0.2)
                return list(ph.reports)

    reports = run(body())
    assert [(r.call.call_sid, r.ended_by) for r in reports] == [
        ("CA77", "refused"),
        ("CA78", "refused"),
        ("CA77", "stop"),
    ]


def test_the_signature_matches_twilios_published_example() -> None:
    # From Twilio's "Webhooks security" page: this URL and POST parameters, signed with the
    # Auth Token 12345, give this signature.
    url = "https://mycompany.com/myapp.php?foo=1&bar=2"
    params = {
        "CallSid": "CA1234567890ABCDE",
        "Caller": "+12349013030",
        "Digits": "1234",
        "From": "+12349013030",
        "To": "+18005551212",
    }
    assert twilio_signature("12345", url, params) == "0/KCTR6DLpKmkAf8muzZqo1nDgQ="


def test_dtmf_digits_reach_the_application() -> None:
    digits: list[tuple[str, str]] = []

    async def on_dtmf(call: CallInfo, session: RealtimeSession, digit: str) -> None:
        digits.append((call.call_sid, digit))

    async def body() -> Any:
        async with RealtimeServer(scenario=SCENARIO, pacing=FAST, tts=None) as server:
            bridge = TwilioBridge(AGENT, url=server.url(), on_dtmf=on_dtmf)
            async with PhoneServer(bridge) as ph:
                async with TwilioCallSimulator(ph.url("/media", scheme="ws")) as call:
                    for digit in "42#":
                        await call.press(digit)
                    await call.listen(100)
                    await asyncio.sleep(0.1)
                await asyncio.sleep(0.2)
                return ph.reports

    (report,) = run(body())
    assert report.dtmf == ["4", "2", "#"]
    assert digits == [("CA00000000000000000000000000000001", d) for d in "42#"]


def test_a_socket_that_never_starts_a_stream_ends_without_a_session() -> None:
    async def body() -> Any:
        bridge = TwilioBridge(AGENT, start_timeout_s=0.3)
        async with PhoneServer(bridge) as ph:
            async with connect(ph.url("/media", scheme="ws")) as ws:
                await ws.send('{"event": "connected", "protocol": "Call", "version": "1.0.0"}')
                await ws.send("not json")
                await asyncio.sleep(0.6)
            await asyncio.sleep(0.1)
            return ph.reports

    (report,) = run(body())
    assert report.ended_by == "no_start"
    assert report.call is None
    assert report.stream_errors
    assert "not a JSON object" in report.stream_errors[0]


def test_voxwire_phone_answers_a_simulated_call(tmp_path: Path) -> None:
    """`voxwire phone module:attribute --url <local server>`: the webhook, then a call through
    it; the caller hears the agent's answer after its tool call."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))
    question = tmp_path / "question.wav"
    resampler = Resampler(8000, 24000)
    said = spoken("Where is my order?")
    write_wav(question, np.concatenate([resampler.process(said), resampler.flush()]), 24000)

    async def body() -> int:
        async with RealtimeServer(scenario=SCENARIO, pacing=FAST, tts="espeak") as server:
            env = {**os.environ, "PYTHONPATH": f"{ROOT / 'python'}{os.pathsep}{ROOT}"}
            env.pop("TWILIO_AUTH_TOKEN", None)
            command = [sys.executable, "-m", "voxwire.cli", "phone"]
            command += ["tests.telephony.twilio_helpers:AGENT", "--url", server.url()]
            command += ["--port", "0", "--config", str(config)]
            process = await asyncio.create_subprocess_exec(
                *command, stdout=subprocess.PIPE, cwd=ROOT, env=env
            )
            try:
                assert process.stdout is not None
                line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
                base = line.split(" answers on ")[1].split(":", 2)
                http = ":".join(base[:2]) + ":" + base[2].split(":")[0]
                status, twiml = await get(http + "/twiml?CallSid=CA9")
                assert status == 200
                parameters = stream_of(twiml)[1]
                ws_url = http.replace("http://", "ws://") + "/media"
                call = TwilioCallSimulator(ws_url, custom_parameters=parameters)
                async with call:
                    await call.say_wav(question)  # a 24 kHz WAV, resampled to the phone's 8 kHz
                    await call.until(lambda: call.agent_samples_heard >= 8000)
                call.write_heard(tmp_path / "heard.wav")
                report = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
                assert report.startswith("call CA00000000000000000000000000000001 ended (stop)")
                return call.agent_samples_heard
            finally:
                process.terminate()
                await process.wait()

    heard_samples = run(body(), timeout_s=120)
    assert heard_samples >= 8000
    heard = read_wav(tmp_path / "heard.wav")
    assert heard.rate_hz == 8000
    assert np.count_nonzero(heard.pcm) >= 8000 * 0.9  # the agent's speech (silence around it)


@pytest.mark.parametrize(
    ("greeting", "heard_first"),
    [
        ("Hello, you are through to the shop.", "Hello, you are through to the shop."),
        (True, FALLBACK),
    ],
    ids=["words", "instructions"],
)
def test_the_agent_greets_the_caller_before_the_caller_says_anything(
    greeting: str | bool, heard_first: str
) -> None:
    """``TwilioBridge(greeting=)``: the caller only listens, and hears the agent first — the
    words given, or a response of the agent's own (here the scenario's fallback)."""
    scenario = Scenario.from_mapping({"rules": [], "fallback": FALLBACK})
    said: list[str] = []

    async def on_event(call: CallInfo, session: RealtimeSession, event: ev.SessionEvent) -> None:
        if isinstance(event, ev.AssistantTranscriptDoneEvent):
            said.append(event.transcript)

    async def body() -> tuple[int, list[str]]:
        async with RealtimeServer(scenario=scenario, pacing=FAST, tts="espeak") as server:
            bridge = TwilioBridge(
                AGENT, url=server.url(), config=CONFIG, greeting=greeting, on_event=on_event
            )
            async with (
                PhoneServer(bridge) as phone,
                TwilioCallSimulator(phone.url("/media", scheme="ws")) as call,
            ):
                await call.until(lambda: call.agent_samples_heard >= 4_000 and bool(said))
                await call.until(lambda: call.line_idle)
            return call.agent_samples_heard, said

    heard, transcripts = run(body(), timeout_s=60)
    assert heard >= 4_000  # half a second of the greeting, with nothing said by the caller
    assert transcripts == [heard_first]


@pytest.mark.parametrize("spec", ["nope", "json:nothing", "no_such_module_x:agent", "json:dumps"])
def test_voxwire_phone_says_what_is_wrong_with_the_agent(spec: str) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "voxwire.cli", "phone", spec, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT / "python")},
    )
    assert p.returncode != 0
    assert spec in p.stderr


def test_a_post_webhook_twilios_default_is_answered_and_its_signature_checked() -> None:
    form = {"CallSid": "CA77", "From": "+15550100", "To": "+15550199", "Direction": "inbound"}

    async def body() -> None:
        public = "https://phone.example.com"
        async with PhoneServer(TwilioBridge(AGENT), public_url=public, auth_token=TOKEN) as ph:
            assert (await post(ph.url("/twiml"), form))[0] == 403
            signed = {"X-Twilio-Signature": twilio_signature(TOKEN, public + "/twiml", form)}
            status, twiml = await post(ph.url("/twiml"), form, signed)
            assert status == 200
            url, parameters = stream_of(twiml)
            assert url == "wss://phone.example.com/media"
            # The token is the call's: a stream of another call cannot use it.
            assert ph._authorized(CallInfo("MZ1", "CA77", "AC1", parameters))
            assert not ph._authorized(CallInfo("MZ1", "CA78", "AC1", parameters))
            assert (await post(ph.url("/elsewhere"), form, signed))[0] == 404
            assert (await post(ph.url("/twiml"), {"x": "y" * 70_000}))[0] == 413

    run(body())


def test_garbage_on_the_port_never_stops_the_server() -> None:
    payloads = [
        b"",
        b"P",
        b"POST",
        b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        b"\x00\xff" * 50,
    ]
    payloads += [b"GARBAGE\r\n\r\n", b"POST /twiml HTTP/1.1\r\nContent-Length: 5\r\n\r\nab"]

    async def body() -> None:
        async with PhoneServer(TwilioBridge(AGENT)) as ph:
            for payload in payloads:
                _, writer = await asyncio.open_connection("127.0.0.1", ph.port)
                writer.write(payload)
                await writer.drain()
                writer.close()
                await writer.wait_closed()
            assert (await get(ph.url("/twiml")))[0] == 200

    run(body())


def test_a_session_that_cannot_open_ends_that_call_only() -> None:
    async def body() -> Any:
        bridge = TwilioBridge(AGENT, url="ws://127.0.0.1:9/v1/realtime")  # nothing listens
        async with PhoneServer(bridge) as ph:
            call = TwilioCallSimulator(ph.url("/media", scheme="ws"))
            async with call:
                with pytest.raises(InvalidState, match="the agent's session failed"):
                    await call.until(lambda: False, timeout_s=20)
            assert (await get(ph.url("/twiml")))[0] == 200  # the server goes on
            return ph.reports

    (report,) = run(body())
    assert report.ended_by == "failed"
    assert report.error is not None
    assert "ConnectionFailed" in report.error


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=4))
def test_any_bytes_on_the_port_leave_the_server_answering(chunks: list[bytes]) -> None:
    """Whatever arrives (in pieces, POST-looking or not), the next webhook is still answered."""

    async def body() -> int:
        async with PhoneServer(TwilioBridge(AGENT)) as ph:
            _, writer = await asyncio.open_connection("127.0.0.1", ph.port)
            for chunk in [b"POST /twiml HTTP/1.1\r\n", *chunks]:
                writer.write(chunk)
                await writer.drain()
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            return (await get(ph.url("/twiml")))[0]

    assert run(body()) == 200


def test_no_task_is_left_after_calls_end() -> None:
    """A call that hangs up and one whose websocket just drops: the bridge's reader, sender
    and events tasks and the sessions are all gone once the servers close."""

    async def body() -> list[str]:
        async with RealtimeServer(scenario=SCENARIO, pacing=FAST, tts="espeak") as server:
            bridge = TwilioBridge(AGENT, url=server.url(), config=CONFIG)
            async with PhoneServer(bridge) as ph:
                async with TwilioCallSimulator(ph.url("/media", scheme="ws")) as call:
                    await call.say(spoken("Where is my order?"), 8000)
                    await call.until(lambda: call.agent_samples_heard >= 4000)
                async with connect(ph.url("/media", scheme="ws")) as ws:  # drops mid-call
                    start = {"streamSid": "MZ2", "callSid": "CA2", "accountSid": "AC1"}
                    await ws.send(json.dumps({"event": "start", "start": start}))
                    await asyncio.sleep(0.3)
                await asyncio.sleep(0.3)
                assert [r.ended_by for r in ph.reports] == ["stop", "disconnected"]
        ours = {asyncio.current_task()}
        left = [t for t in asyncio.all_tasks() if t not in ours]
        return [t.get_name() for t in left if t.get_coro().__name__ != "bounded"]  # run()'s

    assert run(body()) == []


@pytest.mark.parametrize(
    ("options", "greeting"),
    [([], False), (["--greet"], True), (["--greeting", "Hello, the shop."], "Hello, the shop.")],
)
def test_voxwire_phone_greet_and_greeting_make_the_agent_speak_first(
    options: list[str], greeting: str | bool
) -> None:
    from voxwire.cli import build_parser
    from voxwire.telephony.twilio.command import phone_server

    args = build_parser().parse_args(["phone", "tests.telephony.twilio_helpers:AGENT", *options])
    assert phone_server(args).bridge.greeting == greeting
    with pytest.raises(SystemExit):  # one or the other
        build_parser().parse_args(["phone", "m:a", "--greet", "--greeting", "Hi"])
