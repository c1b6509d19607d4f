"""The web server without a browser: its files, its origin check, a tab's protocol spoken by a
plain websocket client (audio chunks with ring positions, "played" acknowledgements, an
interrupt that truncates at what was acknowledged), bad messages from a page, and /watch."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import struct
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

import voxwire.web
from tests.children import default_sigint
from tests.server.helpers import FAST, WEATHER, run
from voxwire.agents import RealtimeAgent
from voxwire.exceptions import ConfigurationError
from voxwire.server import RealtimeServer
from voxwire.web import SessionRecipe, Timeline, WebServer
from voxwire.web.command import load_agent
from voxwire.web.server import STATIC_FILES

AGENT = RealtimeAgent(name="Weather", instructions="Say the weather.")
NO_VAD = {"audio": {"input": {"turn_detection": None}}}


@asynccontextmanager
async def web_for_local_server(**web: Any) -> AsyncIterator[WebServer]:
    async with RealtimeServer(scenario=WEATHER, pacing=FAST) as server:
        recipe = SessionRecipe(lambda: AGENT, server.url(), None, NO_VAD)
        async with WebServer(recipe, **web) as page:
            yield page


@asynccontextmanager
async def tab_at_48k() -> AsyncIterator[tuple[WebServer, ClientConnection, list[bytes]]]:
    """A page at 48 kHz on a web server for the local server, past its ``hello``: the web
    server, the page's websocket and the audio chunks received so far."""
    async with web_for_local_server() as web:
        origin = f"http://127.0.0.1:{web.port}"
        async with connect(f"ws://127.0.0.1:{web.port}/talk", origin=origin) as ws:  # type: ignore[arg-type]
            chunks: list[bytes] = []
            await ws.send(json.dumps({"type": "hello", "rate_hz": 48_000}))
            await _next_json(ws, "hello", chunks)
            yield web, ws, chunks


def _get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read()


def test_the_page_and_its_files_and_nothing_else() -> None:
    async def body() -> None:
        async with web_for_local_server() as web:
            status, kind, page = await asyncio.to_thread(_get, web.url)
            assert (status, kind) == (200, "text/html; charset=utf-8")
            assert b'src="/static/app.js"' in page
            for name, content_type in STATIC_FILES.items():
                status, kind, data = await asyncio.to_thread(_get, f"{web.url}static/{name}")
                assert (status, kind) == (200, content_type)
                assert b"http://" not in data.replace(b"http://www.w3.org/2000/svg", b"")
            for path in ("static/../server.py", "static/nope.js", "app.js", "index.html/x"):
                status, _, _ = await asyncio.to_thread(_get, web.url + path)
                assert status == 404, path

    run(body())


def test_websockets_only_from_the_pages_own_origin() -> None:
    async def body() -> None:
        async with web_for_local_server() as web:
            with pytest.raises(InvalidStatus) as caught:
                async with connect(
                    f"ws://127.0.0.1:{web.port}/talk",
                    origin="http://evil.example",  # type: ignore[arg-type]
                ):
                    pass
            assert caught.value.response.status_code == 403
            with pytest.raises(InvalidStatus) as caught:
                async with connect(f"ws://127.0.0.1:{web.port}/watch"):
                    pass
            assert caught.value.response.status_code == 404  # nothing watched here

    run(body())


async def _next_json(ws: ClientConnection, kind: str, chunks: list[bytes]) -> dict[str, Any]:
    while True:
        message = await asyncio.wait_for(ws.recv(), 10)
        if isinstance(message, bytes):
            chunks.append(message)
            continue
        parsed: dict[str, Any] = json.loads(message)
        if parsed["type"] == kind:
            return parsed


async def _record(ws: ClientConnection, kind: str, chunks: list[bytes]) -> dict[str, Any]:
    while True:
        message = await _next_json(ws, "record", chunks)
        if message["record"]["kind"] == kind:
            return message["record"]  # type: ignore[no-any-return]


def test_a_tab_truncates_at_what_it_acknowledged() -> None:
    """A page at 48 kHz: its microphone resampled to the session's 24 kHz, the audio sent at
    48 kHz, every position counted at 48 kHz."""

    async def body() -> None:
        async with web_for_local_server() as web:
            origin = f"http://127.0.0.1:{web.port}"
            async with connect(f"ws://127.0.0.1:{web.port}/talk", origin=origin) as ws:  # type: ignore[arg-type]
                chunks: list[bytes] = []
                await ws.send(json.dumps({"type": "hello", "rate_hz": 48_000}))
                hello = await _next_json(ws, "hello", chunks)
                assert hello["agent"] == "Weather"
                await ws.send(bytes(48_000 // 50 * 2 * 10))  # 200 ms of silence from the mic
                # Bad messages are noted and ignored: the tab goes on.
                await ws.send(b"\x01\x02\x03")
                await ws.send("{not json")
                await ws.send(json.dumps({"type": "launch"}))
                for _ in range(3):
                    assert (await _record(ws, "error", chunks))["source"] == "page"
                await ws.send(json.dumps({"type": "text", "text": "tell me a story"}))
                assert (await _record(ws, "user_text", chunks))["text"] == "tell me a story"
                # 200 ms at 48 kHz became 24 kHz frames of 20 ms (less the resampler's delay).
                assert 9 <= web.bridges[0].microphone.frames_sent <= 10
                await _record(ws, "audio_first", chunks)
                while sum(len(c) - 8 for c in chunks) // 2 < 48_000:
                    message = await asyncio.wait_for(ws.recv(), 10)
                    if isinstance(message, bytes):
                        chunks.append(message)
                starts = [struct.unpack("<d", c[:8])[0] for c in chunks]
                sizes = [(len(c) - 8) // 2 for c in chunks]
                assert starts == list(np.cumsum([0, *sizes[:-1]]))  # contiguous ring positions
                assert set(sizes[:-1]) == {48_000 * 40 // 1000}  # 40 ms chunks at 48 kHz
                heard = 12_345  # as if the page had played this far
                await ws.send(json.dumps({"type": "played", "position": heard}))
                # The item's sound starts at ring position 82, after the 24 -> 48 kHz
                # resampler's warm-up (issue 30: it was heard - a 24 kHz count, 6,173).
                start = await _next_json(ws, "item_start", chunks)
                assert start["position"] == 82
                await ws.send(json.dumps({"type": "interrupt"}))
                clear = await _next_json(ws, "clear", chunks)
                assert clear["sent"] >= heard
                cut = await _record(ws, "cut", chunks)
                assert cut["audio_end_ms"] == (heard - 82) * 1000 // 48_000
                truncated = await _record(ws, "truncated", chunks)
                assert truncated["audio_end_ms"] == cut["audio_end_ms"]

    run(body())


def test_watch_streams_a_timeline_fed_from_code() -> None:
    async def body() -> None:
        timeline = Timeline()
        timeline.note("user_text", text="before")
        async with WebServer(watch=timeline) as web:
            origin = f"http://127.0.0.1:{web.port}"
            async with connect(f"ws://127.0.0.1:{web.port}/watch", origin=origin) as ws:  # type: ignore[arg-type]
                assert json.loads(await ws.recv())["type"] == "hello"
                assert json.loads(await ws.recv())["record"]["text"] == "before"
                timeline.note("user_text", text="after")
                assert json.loads(await ws.recv())["record"]["text"] == "after"
            with pytest.raises(InvalidStatus) as caught:
                async with connect(f"ws://127.0.0.1:{web.port}/talk", origin=origin):  # type: ignore[arg-type]
                    pass
            assert caught.value.response.status_code == 404
        assert timeline.subscribers == 1  # the page's subscription ended with it

    run(body())


def test_every_file_of_the_page_is_served() -> None:
    static = Path(voxwire.web.__file__).parent / "static"
    assert {p.name for p in static.iterdir()} == set(STATIC_FILES)


def test_voxwire_web_serves_the_demo_agents_page() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-m", "voxwire.cli", "web", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_sigint,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert "local server, offline" in line, line + (child.stderr.read() if child.stderr else "")
        url = line.split()[2]
        status, kind, _ = _get(url)
        assert (status, kind) == (200, "text/html; charset=utf-8")
    finally:
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=10)
    assert (child.returncode, stderr) == (130, "voxwire web: interrupted\n")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nocolon", "expected module:attribute"),
        ("voxwire.nothing:agent", "cannot be loaded"),
        ("voxwire.demo.script:RATE_HZ", "neither a RealtimeAgent nor a function"),
    ],
)
def test_a_bad_agent_spec_says_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load_agent(spec)
    assert load_agent("voxwire.demo.script:agents")().name == "Concierge"


def _hostile_page_messages(seed: int, count: int) -> list[str | bytes]:
    """Seeded garbage a page could send: mutated commands, wrong types, non-finite and huge
    numbers, deep nesting, odd and oversized audio frames, bytes that are not UTF-8."""
    rng = np.random.default_rng(seed)
    values: list[Any] = [None, True, -1, 2**70, 1e308, "x" * 5000, [], {}, [[[[]]]], "played"]
    kinds = ["played", "mute", "interrupt", "text", "hello", "launch", 7, None, ["played"]]
    out: list[str | bytes] = []
    for _ in range(count):
        pick = int(rng.integers(0, 6))
        if pick == 0:
            message = {"type": kinds[int(rng.integers(0, len(kinds)))]}
            for key in ("position", "muted", "text"):
                if rng.random() < 0.6:
                    message[key] = values[int(rng.integers(0, len(values)))]
            out.append(json.dumps(message))
        elif pick == 1:
            out.append(
                '{"type": "played", "position": '
                + ["NaN", "Infinity", "-Infinity"][int(rng.integers(0, 3))]
                + "}"
            )
        elif pick == 2:
            out.append("[" * 5000 + "]" * 5000)
        elif pick == 3:
            out.append(bytes(rng.integers(0, 256, int(rng.integers(1, 8)) * 2 + 1, dtype=np.uint8)))
        elif pick == 4:
            out.append(bytes(48_000 * 2 + 2))  # over a second of audio in one frame
        else:
            out.append(
                bytes(rng.integers(0, 256, int(rng.integers(1, 200)), dtype=np.uint8)).decode(
                    "latin-1"
                )
            )
    return out


def test_hostile_page_messages_never_end_the_tab() -> None:
    """Hundreds of seeded hostile messages from the page: each is noted (or acted on) and the
    tab goes on — a text message afterwards still reaches the session."""
    hostile = _hostile_page_messages(seed=20261125, count=300)

    async def body() -> None:
        async with tab_at_48k() as (_, ws, chunks):
            for message in hostile:
                await ws.send(message)
            await ws.send(json.dumps({"type": "text", "text": "still there?"}))
            record = await _record(ws, "user_text", chunks)
            assert record["text"] == "still there?"

    run(body())
    print(f"\nweb tab: {len(hostile)} hostile page messages, the tab went on")
