"""Client CPU of one scripted voice conversation: voxwire's RealtimeSession vs openai-agents'.

    python benches/session_cpu.py --minutes 3 --runs 3
    python benches/session_cpu.py --minutes 1 --clients voxwire          # one client only
    python benches/session_cpu.py --python /path/to/env/bin/python        # clients run there

The conversation is the same for both clients, at real-time pace, against the local realtime
server (voxwire.server, espeak-ng voice, server VAD) in its own process:

* a microphone: user speech (made by the server's own voice) and silence streamed in 20 ms
  chunks, every 20 ms, for the whole conversation;
* per minute, five spoken turns answered with ~6 s of assistant audio each (100 ms deltas at
  real time), one typed question that makes the model call a function tool (``get_weather``,
  run by the client's own tool machinery) and speak its result, and one interruption (the user
  speaks over the assistant: server VAD cancels the response, the client truncates it).

Each client runs in its own process (``client`` subcommand), so its CPU time
(``resource.getrusage``, user + system, from just before connecting to just after closing —
imports excluded) and its peak RSS are its own. The application does what a minimal voice app
does with the events: takes every audio chunk from the session's event iterator and counts
responses, tool calls and interruptions.

Event-to-user latency: the server is reached through a tap in the server's process that stamps
each assistant audio delta (CLOCK_MONOTONIC, shared by the processes) just before it writes the
frame to the client's socket; the client stamps the same chunk when the application receives it
from the session. The difference is the client stack's work for that event: socket read, JSON
and base64 decoding, the session's own processing, its queue.

Results go to stdout as a Markdown table (and ``--json PATH``); benches/RESULTS.md records them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

RATE_HZ = 24_000
CHUNK_MS = 20
CHUNK_BYTES = RATE_HZ * 2 * CHUNK_MS // 1000
MODEL = "gpt-realtime"
CLIENTS = ("voxwire", "openai-agents")
#: Not an SDK: the least a client can do (websockets and json, no session logic), to show the
#: floor every client stands on (``--clients voxwire,openai-agents,raw``).
FLOOR = "raw"
#: Not a client either: the system calls alone (``--replay`` only). Every frame the conversation
#: sends is built before the measurement starts; measured are one ``send`` per frame and the
#: ``recv`` calls that read the server's frames, unparsed. No client can cost less.
SYSCALLS = "syscalls"

#: What the user says (audio turns carry no transcript: input transcription is off, so the
#: rules responder sees an empty text and answers with REPLY).
UTTERANCES = (
    "Hello there, can you hear me?",
    "Tell me something about the sea.",
    "What should I cook tonight?",
    "Wait, stop, let me ask something else.",
    "Thanks, that is all for now.",
)
REPLY = (
    "Sure. Here is a short answer that takes a few seconds to say, so that there is "
    "assistant audio to listen to before the next question."
)
WEATHER_QUESTION = "What is the weather in Paris?"
SCENARIO: dict[str, Any] = {
    "rules": [
        {"match": "weather", "call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"after_tool": "get_weather", "say": "It is {output.temperature} degrees in Paris."},
        {"match": "^$", "say": REPLY},
    ],
    "fallback": "You said: {text}",
}
#: One minute of conversation: (offset s, "speech", utterance index) or (offset s, "text", text).
#: The utterance at 36.0 starts while the answer to the one at 32.0 is being spoken.
CYCLE: tuple[tuple[float, str, Any], ...] = (
    (1.0, "speech", 0),
    (13.0, "speech", 1),
    (25.0, "text", WEATHER_QUESTION),
    (32.0, "speech", 2),
    (36.0, "speech", 3),
    (48.0, "speech", 4),
)
CYCLE_S = 60.0
#: The smoke test's conversation: a spoken turn, an interruption, a tool call.
SHORT: tuple[tuple[float, str, Any], ...] = (
    (0.5, "speech", 2),
    (4.5, "speech", 3),
    (15.0, "text", WEATHER_QUESTION),
)
SHORT_S = 20.0
GRACE_S = 2.0  # after the last microphone chunk: let the last answer finish


# --- the script -----------------------------------------------------------------------------------


def build_script(directory: Path, minutes: float, short: bool = False) -> float:
    """Write the microphone audio (``mic.pcm``) and the typed messages (``texts.json``) into
    ``directory``; returns the conversation's length in seconds."""
    from voxwire.server.engines.tts import Voice

    voice = Voice.load("espeak")
    try:
        speech = [voice.speak_blocking(u, "alloy", 1.0, "audio/pcm").audio for u in UTTERANCES]
    finally:
        voice.close()
    if short:
        timeline, total_s = list(SHORT), SHORT_S
    else:
        cycles = max(1, math.ceil(minutes))
        timeline = [(c * CYCLE_S + t, k, v) for c in range(cycles) for t, k, v in CYCLE]
        total_s = minutes * CYCLE_S
        timeline = [entry for entry in timeline if entry[0] < total_s]
    mic = bytearray(int(total_s * RATE_HZ) * 2)
    texts = []
    for offset_s, kind, value in timeline:
        if kind == "text":
            texts.append((offset_s, value))
            continue
        start = int(offset_s * RATE_HZ) * 2
        pcm = speech[value][: len(mic) - start]
        mic[start : start + len(pcm)] = pcm
    (directory / "mic.pcm").write_bytes(bytes(mic))
    (directory / "texts.json").write_text(json.dumps(texts))
    return total_s


# --- the server and its tap (``serve``) ----------------------------------------------------------


def serve_main(args: argparse.Namespace) -> None:
    asyncio.run(_serve(Path(args.tap_dir), record=args.record))


async def _serve(tap_dir: Path, *, record: bool = False) -> None:
    import msgspec
    from websockets.asyncio.client import connect
    from websockets.asyncio.server import ServerConnection, serve

    from voxwire.server import Pacing, RealtimeServer, Scenario

    class AudioDelta(msgspec.Struct):
        type: str
        item_id: str = ""
        delta: str = ""

    decode = msgspec.json.Decoder(AudioDelta).decode
    pacing = Pacing(audio_pace=1.0, text_tokens_per_s=100.0, audio_chunk_ms=100)

    async with RealtimeServer(
        scenario=Scenario.from_mapping(SCENARIO), tts="espeak", pacing=pacing
    ) as server:

        async def tap(client: ServerConnection) -> None:
            assert client.request is not None
            parts = urlsplit(client.request.path)
            query = parse_qs(parts.query)
            tag = query.pop("bench_tag", ["untagged"])[0]
            upstream = f"ws://127.0.0.1:{server.port}{parts.path}?{urlencode(query, doseq=True)}"
            sent: list[tuple[str, int, float]] = []
            received: dict[str, int] = {}
            frames: list[str] = []
            async with connect(upstream, max_size=None, compression=None) as server_side:

                async def down() -> None:
                    async for frame in server_side:
                        if isinstance(frame, str) and '"response.output_audio.delta"' in frame[:60]:
                            event = decode(frame)
                            # Decoded size of the base64 delta, without decoding it.
                            size = len(event.delta) * 3 // 4 - event.delta[-2:].count("=")
                            received[event.item_id] = total = received.get(event.item_id, 0) + size
                            sent.append((event.item_id, total, time.monotonic()))
                        if record and isinstance(frame, str):
                            frames.append(frame)
                        await client.send(frame)

                async def up() -> None:
                    async for frame in client:
                        await server_side.send(frame)

                tasks = [asyncio.create_task(down()), asyncio.create_task(up())]
                try:
                    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for task in tasks:
                        task.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
            if record:
                (tap_dir / f"frames-{tag}.jsonl").write_text("\n".join(frames) + "\n")
            (tap_dir / f"tap-{tag}.json").write_text(json.dumps(sent))

        async with serve(tap, "127.0.0.1", 0, max_size=None, compression=None) as tap_server:
            port = tap_server.sockets[0].getsockname()[1]
            print(f"ws://127.0.0.1:{port}/v1/realtime?model={MODEL}", flush=True)
            # Until the parent closes our stdin.
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


# --- the replay server (``replay``) ----------------------------------------------------------


def replay_main(args: argparse.Namespace) -> None:
    asyncio.run(_replay(Path(args.frames).read_text().splitlines()))


async def _replay(frames: list[str]) -> None:
    """Serve a recorded conversation: after the client's first frame (its session.update), every
    frame the local server sent in that conversation, as fast as the client reads them, while
    the client's own frames are read and dropped. The connection stays open until the client
    closes it."""
    from websockets.asyncio.server import ServerConnection, serve

    async def handler(client: ServerConnection) -> None:
        first = asyncio.get_running_loop().create_future()

        async def drain() -> None:
            async for _ in client:
                if not first.done():
                    first.set_result(None)

        reader = asyncio.create_task(drain())
        try:
            await first
            for frame in frames:
                await client.send(frame)
            await reader
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

    async with serve(handler, "127.0.0.1", 0, max_size=None, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"ws://127.0.0.1:{port}/v1/realtime?model={MODEL}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


# --- one client (``client``) -------------------------------------------------------------


@dataclass
class Tally:
    """What the application saw."""

    responses: int = 0
    tool_calls: int = 0
    interruptions: int = 0
    errors: list[str] = field(default_factory=list)
    audio_bytes: int = 0
    events: int = 0  # every session event the application took, for settle()
    per_item: dict[str, int] = field(default_factory=dict)
    deliveries: list[tuple[str, int, float]] = field(default_factory=list)

    def audio(self, item_id: str, pcm: bytes) -> None:
        now = time.monotonic()
        self.audio_bytes += len(pcm)
        self.per_item[item_id] = total = self.per_item.get(item_id, 0) + len(pcm)
        self.deliveries.append((item_id, total, now))


#: Replay mode (``--replay``): microphone chunks go out as fast as the client takes them (the
#: microphone loop yields to the receiving task once per second of audio), and the client ends
#: once the application has seen no event for SETTLE_S.
SETTLE_S = 0.5
YIELD_EVERY = 1000 // CHUNK_MS
REPLAY = False


async def stream_microphone(
    mic: bytes,
    texts: list[tuple[float, str]],
    send_audio: Callable[[bytes], Awaitable[None]],
    send_text: Callable[[str], Awaitable[None]],
) -> None:
    """Every 20 ms the next 20 ms of the microphone; typed messages at their times. In replay
    mode without waiting."""
    start = time.monotonic()
    pending = list(texts)
    for index in range(len(mic) // CHUNK_BYTES):
        offset_s = index * CHUNK_MS / 1000
        while pending and pending[0][0] <= offset_s:
            await send_text(pending.pop(0)[1])
        if REPLAY:
            if index % YIELD_EVERY == 0:
                await asyncio.sleep(0)
        else:
            delay = start + offset_s - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        await send_audio(mic[index * CHUNK_BYTES : (index + 1) * CHUNK_BYTES])


async def settle(tally: Tally) -> None:
    """After the microphone: at real time, let the last answer finish; in replay mode, wait
    until the application has taken every event (none for SETTLE_S)."""
    if not REPLAY:
        await asyncio.sleep(GRACE_S)
        return
    seen = -1
    while tally.events != seen:
        seen = tally.events
        await asyncio.sleep(SETTLE_S)


async def run_voxwire(url: str, mic: bytes, texts: list[tuple[float, str]], tally: Tally) -> None:
    from voxwire.agents import RealtimeAgent, function_tool
    from voxwire.asyncio import RealtimeSession

    @function_tool
    def get_weather(city: str) -> dict[str, int]:
        """The weather in a city."""
        return {"temperature": 21}

    agent = RealtimeAgent(
        name="bench", instructions="Be brief.", voice="alloy", tools=[get_weather]
    )
    config = {
        "output_modalities": ["audio"],
        "audio": {
            "input": {"transcription": None, "turn_detection": {"type": "server_vad"}},
        },
    }
    async with RealtimeSession(agent, url=url, api_key="sk-bench", config=config) as session:

        async def receive() -> None:
            async for event in session:
                tally.events += 1
                if event.type == "audio":
                    tally.audio(event.item_id, event.pcm)
                elif event.type == "response_done":
                    tally.responses += 1
                elif event.type == "tool_end":
                    tally.tool_calls += 1
                elif event.type == "audio_interrupted":
                    tally.interruptions += 1
                elif event.type == "error":
                    tally.errors.append(event.message)

        receiver = asyncio.create_task(receive())
        await stream_microphone(mic, texts, session.send_audio, session.send_message)
        await settle(tally)
    await receiver


async def run_openai_agents(
    url: str, mic: bytes, texts: list[tuple[float, str]], tally: Tally
) -> None:
    from agents.realtime import RealtimeAgent, RealtimeRunner

    from agents import function_tool

    @function_tool
    def get_weather(city: str) -> dict[str, int]:
        """The weather in a city."""
        return {"temperature": 21}

    agent = RealtimeAgent(name="bench", instructions="Be brief.", tools=[get_weather])
    runner = RealtimeRunner(
        agent,
        config={
            "model_settings": {
                "model_name": MODEL,
                "output_modalities": ["audio"],
                "audio": {
                    "input": {"transcription": None, "turn_detection": {"type": "server_vad"}},
                    "output": {"voice": "alloy"},
                },
            }
        },
    )
    session = await runner.run(model_config={"url": url, "api_key": "sk-bench"})
    async with session:
        done = asyncio.Event()

        async def receive() -> None:
            async for event in session:
                tally.events += 1
                if event.type == "audio":
                    tally.audio(event.item_id, event.audio.data)
                elif event.type == "agent_end":
                    tally.responses += 1
                elif event.type == "tool_end":
                    tally.tool_calls += 1
                elif event.type == "audio_interrupted":
                    tally.interruptions += 1
                elif event.type == "error":
                    tally.errors.append(str(event.error))
                if done.is_set():
                    return

        receiver = asyncio.create_task(receive())
        await stream_microphone(mic, texts, session.send_audio, session.send_message)
        await settle(tally)
        done.set()
    # Its iterator does not always end when the session closes: stop waiting for it.
    receiver.cancel()
    await asyncio.gather(receiver, return_exceptions=True)


async def run_raw(url: str, mic: bytes, texts: list[tuple[float, str]], tally: Tally) -> None:
    """The floor: the same conversation with bare websockets and json — encode each chunk, decode
    each frame, answer the tool call; no history, no state, no truncation."""
    import base64

    from websockets.asyncio.client import connect

    tool = {
        "type": "function",
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    session = {
        "type": "realtime",
        "instructions": "Be brief.",
        "output_modalities": ["audio"],
        "tools": [tool],
        "audio": {
            "input": {"transcription": None, "turn_detection": {"type": "server_vad"}},
            "output": {"voice": "alloy"},
        },
    }
    headers = {"Authorization": "Bearer sk-bench"}
    async with connect(url, additional_headers=headers, compression=None, max_size=None) as ws:
        await ws.send(json.dumps({"type": "session.update", "session": session}))

        # The one piece of state every client needs: a response.create while a response is
        # active is refused ("Conversation already has an active response"), so it waits for
        # that response's response.done.
        gate = {"active": False, "waiting": False}

        async def create_response() -> None:
            if gate["active"]:
                gate["waiting"] = True
            else:
                gate["active"] = True  # until its response.done
                await ws.send(json.dumps({"type": "response.create"}))

        async def receive() -> None:
            async for frame in ws:
                tally.events += 1
                event = json.loads(frame)
                kind = event["type"]
                if kind == "response.output_audio.delta":
                    tally.audio(event["item_id"], base64.b64decode(event["delta"]))
                elif kind == "response.created":
                    gate["active"] = True
                elif kind == "response.done":
                    tally.responses += 1
                    gate["active"] = False
                    if gate["waiting"]:
                        gate["waiting"] = False
                        await create_response()
                elif kind == "response.function_call_arguments.done":
                    output = {"type": "function_call_output", "call_id": event["call_id"]}
                    output["output"] = json.dumps({"temperature": 21})
                    await ws.send(json.dumps({"type": "conversation.item.create", "item": output}))
                    await create_response()
                    tally.tool_calls += 1
                elif kind == "input_audio_buffer.speech_started" and tally.responses:
                    tally.interruptions += 1  # not exact: no playback state to judge by
                elif kind == "error":
                    tally.errors.append(event["error"]["message"])

        async def send_audio(chunk: bytes) -> None:
            audio = base64.b64encode(chunk).decode()
            await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": audio}))

        async def send_text(text: str) -> None:
            content = [{"type": "input_text", "text": text}]
            item = {"type": "message", "role": "user", "content": content}
            await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
            await create_response()

        receiver = asyncio.create_task(receive())
        await stream_microphone(mic, texts, send_audio, send_text)
        await settle(tally)
    await asyncio.gather(receiver, return_exceptions=True)


class SyscallFloor:
    """The ``syscalls`` floor: a websocket opened by hand on a blocking socket, every outgoing
    frame (session.update, each microphone chunk as ``input_audio_buffer.append``, the typed
    messages, the close) encoded and masked in advance by :meth:`__init__`; :meth:`run` only
    sends them and reads what the server sends until it has been quiet for SETTLE_S."""

    def __init__(self, url: str, mic: bytes, texts: list[tuple[float, str]]) -> None:
        import base64
        import socket

        from websockets.frames import Close, Frame, Opcode

        def frame(event: dict[str, Any]) -> bytes:
            return Frame(Opcode.TEXT, json.dumps(event).encode()).serialize(mask=True)

        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                "Authorization: Bearer sk-bench\r\n\r\n"
            ).encode()
        )
        response = b""
        while b"\r\n\r\n" not in response:
            response += self.sock.recv(4096)
        if b" 101 " not in response.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"the websocket handshake failed: {response[:200]!r}")
        self.early = len(response.split(b"\r\n\r\n", 1)[1])  # frames already read
        session = {"type": "realtime", "output_modalities": ["audio"]}
        self.frames = [frame({"type": "session.update", "session": session})]
        pending = list(texts)
        for index in range(len(mic) // CHUNK_BYTES):
            while pending and pending[0][0] <= index * CHUNK_MS / 1000:
                content = [{"type": "input_text", "text": pending.pop(0)[1]}]
                item = {"type": "message", "role": "user", "content": content}
                self.frames.append(frame({"type": "conversation.item.create", "item": item}))
                self.frames.append(frame({"type": "response.create"}))
            chunk = mic[index * CHUNK_BYTES : (index + 1) * CHUNK_BYTES]
            audio = base64.b64encode(chunk).decode()
            self.frames.append(frame({"type": "input_audio_buffer.append", "audio": audio}))
        self.close = Frame(Opcode.CLOSE, Close(1000, "").serialize()).serialize(mask=True)

    def run(self, tally: Tally) -> None:
        sock, buffer = self.sock, bytearray(1 << 20)
        for data in self.frames:
            sock.sendall(data)
        sock.settimeout(SETTLE_S)
        tally.audio_bytes = self.early
        try:
            while received := sock.recv_into(buffer):
                tally.audio_bytes += received  # all bytes, not only audio
                tally.events += 1
        except TimeoutError:
            pass
        sock.settimeout(None)
        sock.sendall(self.close)
        sock.close()


def peak_rss_mb(usage: resource.struct_rusage) -> float:
    """This process's peak RSS. Linux keeps ``ru_maxrss`` across fork and exec, so a client
    would report at least its parent's peak: read the memory map's own high-water mark."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return usage.ru_maxrss / 1024  # kilobytes on Linux, bytes on macOS (then an overestimate)


def client_main(args: argparse.Namespace) -> None:
    global REPLAY
    REPLAY = args.replay
    directory = Path(args.dir)
    mic = (directory / "mic.pcm").read_bytes()
    texts = [(t, text) for t, text in json.loads((directory / "texts.json").read_text())]
    if args.impl == SYSCALLS and not REPLAY:
        raise SystemExit("the syscalls floor needs --replay (it does not answer the tool call)")
    run = {"voxwire": run_voxwire, "openai-agents": run_openai_agents, FLOOR: run_raw}.get(
        args.impl
    )
    # Imports first (not counted): the conversation's CPU is what is measured.
    if args.impl == "voxwire":
        import voxwire.asyncio  # noqa: F401
    elif args.impl == "openai-agents":
        import agents.realtime  # noqa: F401
    else:
        import websockets.asyncio.client  # noqa: F401
    floor = None
    if run is None:  # the syscalls floor: its frames are built here, before the measurement
        floor = SyscallFloor(args.url, mic, texts)
    elif REPLAY:
        # A first, unmeasured conversation: what a stack builds once per process (lazy imports,
        # schema and validator construction) is not a per-minute cost.
        asyncio.run(run(args.url, mic, texts, Tally()))
    tally = Tally()
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.monotonic()
    if floor is not None:
        floor.run(tally)
    else:
        assert run is not None
        asyncio.run(run(args.url, mic, texts, tally))
    wall_s = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(args.profile)
    result = {
        "impl": args.impl,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "wall_s": wall_s,
        "peak_rss_mb": peak_rss_mb(after),
        **{k: v for k, v in asdict(tally).items() if k not in ("per_item",)},
    }
    Path(args.out).write_text(json.dumps(result))


# --- the comparison (default) ------------------------------------------------------------


@dataclass
class Run:
    impl: str
    cpu_s_per_min: float
    peak_rss_mb: float
    latency_ms: list[float]
    responses: int
    tool_calls: int
    interruptions: int
    errors: list[str]


def run_client(
    python: str,
    impl: str,
    url: str,
    directory: Path,
    tag: str,
    profile: str | None = None,
    *,
    replay_of_s: float | None = None,
) -> Run:
    """One client's conversation in its own process. ``replay_of_s``: the client talks to the
    replay server, which plays back a conversation of that many seconds (CPU is per minute of
    that conversation; no latency: the replay has no tap)."""
    out = directory / f"{tag}.json"
    command = [
        python,
        __file__,
        "client",
        "--impl",
        impl,
        "--url",
        f"{url}&bench_tag={tag}",
        "--dir",
        str(directory),
        "--out",
        str(out),
    ]
    if profile:
        command += ["--profile", profile]
    if replay_of_s is not None:
        command.append("--replay")
    env = {**os.environ, "OPENAI_AGENTS_DISABLE_TRACING": "1", "OPENBLAS_NUM_THREADS": "1"}
    subprocess.run(command, check=True, env=env, timeout=3600)
    result = json.loads(out.read_text())
    latency_ms = []
    if replay_of_s is None:
        tap_file = directory / f"tap-{tag}.json"
        for _ in range(100):  # the tap writes its file when the connection ends
            if tap_file.exists():
                break
            time.sleep(0.05)
        sent = {(item, total): t for item, total, t in json.loads(tap_file.read_text())}
        latency_ms = [
            (t - sent[(item, total)]) * 1000
            for item, total, t in result["deliveries"]
            if (item, total) in sent
        ]
    minutes = (replay_of_s if replay_of_s is not None else result["wall_s"]) / 60
    return Run(
        impl=impl,
        cpu_s_per_min=result["cpu_s"] / minutes,
        peak_rss_mb=result["peak_rss_mb"],
        latency_ms=latency_ms,
        responses=result["responses"],
        tool_calls=result["tool_calls"],
        interruptions=result["interruptions"],
        errors=result["errors"],
    )


def compare(
    minutes: float,
    runs: int,
    clients: tuple[str, ...],
    python: str,
    *,
    short: bool = False,
    profile_dir: str | None = None,
    replay: bool = False,
) -> dict[str, list[Run]]:
    """Run every client ``runs`` times (alternating their order) against one server.

    ``replay``: first record the conversation once, at real time, as the local server plays it
    with the ``raw`` client; then each client runs against a replay server that sends every
    recorded frame as fast as the client reads, while the client's microphone goes out as fast
    as it is taken. CPU per minute of that conversation is then the work of each client stack,
    without the idle wake-ups of a real-time pace."""
    results: dict[str, list[Run]] = {impl: [] for impl in clients}
    with tempfile.TemporaryDirectory(prefix="voxwire-session-cpu-") as tmp:
        directory = Path(tmp)
        conversation_s = build_script(directory, minutes, short=short)
        with _server_process("serve", "--tap-dir", tmp, *(["--record"] if replay else [])) as url:
            if replay:
                run_client(python, FLOOR, url, directory, "record")
            else:
                _run_series(results, runs, clients, python, url, directory, profile_dir, None)
        if replay:
            frames = directory / "frames-record.jsonl"
            for _ in range(100):  # written when the recorded connection ends
                if frames.exists():
                    break
                time.sleep(0.05)
            with _server_process("replay", "--frames", str(frames)) as url:
                _run_series(
                    results, runs, clients, python, url, directory, profile_dir, conversation_s
                )
    return results


def _run_series(
    results: dict[str, list[Run]],
    runs: int,
    clients: tuple[str, ...],
    python: str,
    url: str,
    directory: Path,
    profile_dir: str | None,
    replay_of_s: float | None,
) -> None:
    for index in range(runs):
        order = clients if index % 2 == 0 else tuple(reversed(clients))
        for impl in order:
            profile = str(Path(profile_dir) / f"{impl}-{index}.prof") if profile_dir else None
            results[impl].append(
                run_client(
                    python,
                    impl,
                    url,
                    directory,
                    f"{impl}-{index}",
                    profile,
                    replay_of_s=replay_of_s,
                )
            )


@contextlib.contextmanager
def _server_process(*args: str) -> Iterator[str]:
    """This script's ``serve`` or ``replay`` in its own process; yields its URL."""
    server = subprocess.Popen(
        [sys.executable, __file__, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        if not url.startswith("ws://"):
            raise RuntimeError(f"the {args[0]} process did not start")
        yield url
    finally:
        assert server.stdin is not None
        server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def table(results: dict[str, list[Run]]) -> str:
    lines = [
        "| client | runs | CPU s / min (median) | peak RSS MB (median) | latency ms p50 / p95 | "
        "responses | tool calls | interruptions |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for impl, runs in results.items():
        latencies = [value for run in runs for value in run.latency_ms]
        lines.append(
            f"| {impl} | {len(runs)} "
            f"| {statistics.median(r.cpu_s_per_min for r in runs):.3f} "
            f"| {statistics.median(r.peak_rss_mb for r in runs):.1f} "
            f"| {percentile(latencies, 0.5):.2f} / {percentile(latencies, 0.95):.2f} "
            f"| {'/'.join(str(r.responses) for r in runs)} "
            f"| {'/'.join(str(r.tool_calls) for r in runs)} "
            f"| {'/'.join(str(r.interruptions) for r in runs)} |"
        )
    if set(CLIENTS) <= set(results):
        ours = statistics.median(r.cpu_s_per_min for r in results["voxwire"])
        theirs = statistics.median(r.cpu_s_per_min for r in results["openai-agents"])
        lines.append("")
        lines.append(f"CPU ratio voxwire / openai-agents (medians): {ours / theirs:.3f}x")
        if FLOOR in results:
            floor = statistics.median(r.cpu_s_per_min for r in results[FLOOR])
            lines.append(
                f"Above the raw floor: voxwire {ours - floor:.3f}, openai-agents "
                f"{theirs - floor:.3f} CPU s / min, ratio {(ours - floor) / (theirs - floor):.3f}x"
            )
        if SYSCALLS in results:
            syscalls = statistics.median(r.cpu_s_per_min for r in results[SYSCALLS])
            lines.append(
                f"The system calls alone: {syscalls:.3f} CPU s / min = "
                f"{syscalls / theirs:.3f}x openai-agents"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="(internal) the local server behind the latency tap")
    serve.add_argument("--tap-dir", required=True)
    serve.add_argument("--record", action="store_true", help="keep every frame sent")
    replay = sub.add_parser("replay", help="(internal) serve a recorded conversation")
    replay.add_argument("--frames", required=True)
    client = sub.add_parser("client", help="(internal) one client's conversation")
    client.add_argument("--impl", choices=(*CLIENTS, FLOOR, SYSCALLS), required=True)
    client.add_argument("--url", required=True)
    client.add_argument("--dir", required=True)
    client.add_argument("--out", required=True)
    client.add_argument("--profile", help="write a cProfile of the conversation here")
    client.add_argument("--replay", action="store_true", help="no real-time pace")
    parser.add_argument("--minutes", type=float, default=3.0, help="conversation length")
    parser.add_argument("--runs", type=int, default=3, help="runs per client")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--python", default=sys.executable, help="interpreter of the clients")
    parser.add_argument("--short", action="store_true", help="the smoke test's 20 s script")
    parser.add_argument("--profile-dir", help="cProfile each client run into this folder")
    parser.add_argument(
        "--replay",
        action="store_true",
        help="record the conversation once, then replay it to each client at full speed",
    )
    parser.add_argument("--json", help="also write the raw results here")
    args = parser.parse_args(argv)
    if args.command == "serve":
        serve_main(args)
        return
    if args.command == "client":
        client_main(args)
        return
    if args.command == "replay":
        replay_main(args)
        return
    clients = tuple(c for c in args.clients.split(",") if c)
    results = compare(
        args.minutes,
        args.runs,
        clients,
        args.python,
        short=args.short,
        profile_dir=args.profile_dir,
        replay=args.replay,
    )
    print(table(results))
    for impl, runs in results.items():
        for run in runs:
            if run.errors:
                print(f"{impl}: errors: {run.errors[:3]}")
    if args.json:
        raw = {impl: [asdict(r) for r in runs] for impl, runs in results.items()}
        Path(args.json).write_text(json.dumps(raw))


if __name__ == "__main__":
    main()
