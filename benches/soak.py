"""A long session's memory: hundreds of spoken turns — answers, tool calls, barge-ins — against
the local realtime server at full speed, with the process's resident memory sampled as it goes.

    python benches/soak.py --turns 600 --every 50
    python benches/soak.py --turns 30 --every 10 --json soak.json   # quick

One RealtimeSession runs the whole time with an agent that has a function tool and an output
guardrail, an ``AudioOutput`` (the Rust ring and playback clock) pulled by a virtual device as
fast as audio comes, server VAD off (the application drives the turns). Turns cycle through:

* a question answered in speech;
* a question that makes the model call the tool (``get_weather``), then speak its result;
* a long story the user cuts short: ``session.interrupt()`` once the first audio played (the
  truncation at what was heard, as with a real speaker).

The server runs in its own process (``--server-in-process``: in this one), so the figure is
the client's: the session, its parts and the Rust audio core. After a
warm-up (the first ``--warmup`` turns: imports, caches, the allocator's arenas) the resident set
size should not grow: the script prints RSS at every ``--every`` turns and the growth per 100
turns after the warm-up, from a least-squares line through the samples. benches/RESULTS.md
records a run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path
from subprocess import PIPE

import numpy as np

from voxwire.agents import RealtimeAgent, function_tool, output_guardrail
from voxwire.asyncio import RealtimeSession, ResponseDoneEvent, ResponseStartedEvent
from voxwire.asyncio.events import MetricsCollectedEvent
from voxwire.audio import AudioOutput
from voxwire.server import Pacing, RealtimeServer, Scenario

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "call": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
            {"after_tool": "get_weather", "say": "It is {output.temperature} degrees in Oslo."},
            {"match": "story", "say": " ".join(["Once upon a time there was a long story."] * 8)},
        ],
        "fallback": "You said: {text}. Anything else?",
    }
)
CONFIG = {"audio": {"input": {"turn_detection": None}}}


@function_tool
def get_weather(city: str) -> dict[str, object]:
    """The weather in a city."""
    return {"city": city, "temperature": 7}


@output_guardrail
def no_secrets(agent: RealtimeAgent, text: str) -> bool:
    return "password" in text.lower()


AGENT = RealtimeAgent(
    name="Soak",
    instructions="Answer briefly.",
    tools=[get_weather],
    output_guardrails=[no_secrets],
)


@dataclass
class Sample:
    turns: int
    rss_mb: float
    seconds: float


def rss_mb() -> float:
    """The process's resident set size now (Linux: /proc/self/status VmRSS)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status (Linux only)")


async def device(output: AudioOutput, stop: asyncio.Event) -> None:
    """A virtual speaker pulling 20 ms periods as fast as there is audio."""
    period = np.zeros(480, dtype=np.int16)
    while not stop.is_set():
        output.pull_into(period)
        await asyncio.sleep(0 if output.playing else 0.002)


async def turn(session: RealtimeSession, n: int) -> str:
    """One turn; returns when its responses are done (and, for a barge-in, the cut made)."""
    kind = ("answer", "tool", "barge-in")[n % 3]
    text = {"answer": f"hello number {n}", "tool": "what is the weather", "barge-in": "story"}
    await session.send_message(text[kind])
    needed = 2 if kind == "tool" else 1  # the call, then the answer with its result
    started: list[str] = []
    done: set[str] = set()
    cut = kind != "barge-in"
    async for event in session:
        if isinstance(event, ResponseStartedEvent):
            started.append(event.response_id)
        elif isinstance(event, ResponseDoneEvent):
            done.add(event.response_id)
        elif isinstance(event, MetricsCollectedEvent) and not cut:
            cut = True
            await session.interrupt()  # the first sample was heard: cut the rest
        if cut and len(started) >= needed and set(started[:needed]) <= done:
            return kind
    raise RuntimeError("the session ended during the soak")


def local_server() -> RealtimeServer:
    return RealtimeServer(
        scenario=SCENARIO, pacing=Pacing(audio_pace=0, text_tokens_per_s=0), transcriber=None
    )


async def serve_main() -> None:
    """The ``serve`` subcommand: the local server on a free port; prints its URL, runs until
    stdin closes."""
    async with local_server() as server:
        print(server.url(), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


@contextlib.asynccontextmanager
async def server_url(in_process: bool) -> AsyncIterator[str]:
    if in_process:
        async with local_server() as server:
            yield server.url()
        return
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "serve", stdin=PIPE, stdout=PIPE
    )
    assert child.stdout is not None
    assert child.stdin is not None
    try:
        yield (await asyncio.wait_for(child.stdout.readline(), 60)).decode().strip()
    finally:
        child.stdin.close()
        await asyncio.wait_for(child.wait(), 30)


async def soak(turns: int, every: int, *, server_in_process: bool = False) -> list[Sample]:
    samples: list[Sample] = []
    started = time.monotonic()
    output = AudioOutput(24_000, prebuffer_ms=0)
    stop = asyncio.Event()
    async with server_url(server_in_process) as url:
        speaker = asyncio.create_task(device(output, stop))
        try:
            async with RealtimeSession(
                AGENT, url=url, config=CONFIG, audio_output=output
            ) as session:
                for n in range(1, turns + 1):
                    await turn(session, n)
                    if n % every == 0:
                        gc.collect()
                        samples.append(Sample(n, rss_mb(), time.monotonic() - started))
                        print(f"{n:5d} turns  RSS {samples[-1].rss_mb:7.1f} MB", flush=True)
        finally:
            stop.set()
            await speaker
    return samples


def growth_per_100_turns(samples: list[Sample], warmup: int) -> float:
    """MB per 100 turns after the warm-up: the slope of a least-squares line."""
    kept = [s for s in samples if s.turns > warmup]
    if len(kept) < 2:
        return float("nan")
    x = np.array([s.turns for s in kept], dtype=float)
    y = np.array([s.rss_mb for s in kept], dtype=float)
    slope = np.polyfit(x, y, 1)[0]
    return float(slope * 100)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--server-in-process", action="store_true")
    args = parser.parse_args(argv)
    if args.turns < 1 or args.every < 1:
        parser.error("--turns and --every must be at least 1")
    samples = asyncio.run(soak(args.turns, args.every, server_in_process=args.server_in_process))
    slope = growth_per_100_turns(samples, args.warmup)
    print(f"after {args.warmup} warm-up turns: {slope:+.2f} MB per 100 turns")
    if args.json is not None:
        args.json.write_text(
            json.dumps({"samples": [asdict(s) for s in samples], "mb_per_100": slope})
        )


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        asyncio.run(serve_main())
    else:
        main()
