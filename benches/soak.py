"""A long session's memory: hundreds of spoken turns — answers, tool calls, barge-ins — against
the local realtime server at full speed, with the process's resident memory sampled as it goes.

    python benches/soak.py --turns 600 --every 50
    python benches/soak.py --turns 600 --every 50 --max-history-items 64
    python benches/soak.py --turns 30 --every 10 --json soak.json   # quick

One RealtimeSession runs the whole time with an agent that has a function tool and an output
guardrail, an ``AudioOutput`` (the Rust ring and playback clock) pulled by a virtual device as
fast as audio comes, server VAD off (the application drives the turns). Turns cycle through:

* a question answered in speech;
* a question that makes the model call the tool (``get_weather``), then speak its result;
* a long story the user cuts short: ``session.interrupt()`` once the first audio played (the
  truncation at what was heard, as with a real speaker).

The server runs in its own process (``--server-in-process``: in this one), so the client's
figure is the session, its parts and the Rust audio core; the server process is measured too
(its audio budget: ``--server-audio-budget-mb``, ``none`` keeps all audio).
``--max-history-items`` bounds the conversation the session holds (the session option).
After a warm-up (the first ``--warmup`` turns: imports, caches, the allocator's arenas) the
resident set size should not grow: the script prints RSS at every ``--every`` turns and the
growth per 100 turns after the warm-up, from a least-squares line through the samples.
benches/RESULTS.md records runs.
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
from typing import Literal

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
    server_rss_mb: float | None = None  # the server's process, when it has its own


def rss_mb(pid: int | str = "self") -> float:
    """A process's resident set size now (Linux: /proc/<pid>/status VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS in /proc/{pid}/status (Linux only)")


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


Budget = int | None | Literal["default"]  # server audio budget in bytes; None: keep all


def local_server(audio_budget: Budget = "default") -> RealtimeServer:
    budget = {} if audio_budget == "default" else {"audio_budget_bytes": audio_budget}
    return RealtimeServer(
        scenario=SCENARIO,
        pacing=Pacing(audio_pace=0, text_tokens_per_s=0),
        transcriber=None,
        **budget,  # type: ignore[arg-type]
    )


async def serve_main(budget: Budget) -> None:
    """The ``serve`` subcommand: the local server on a free port; prints its URL, runs until
    stdin closes."""
    async with local_server(budget) as server:
        print(server.url(), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


@contextlib.asynccontextmanager
async def server_url(
    in_process: bool, audio_budget: Budget = "default"
) -> AsyncIterator[tuple[str, int | None]]:
    """The server's URL and its process id (``None``: in this process)."""
    if in_process:
        async with local_server(audio_budget) as server:
            yield server.url(), None
        return
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "serve", str(audio_budget), stdin=PIPE, stdout=PIPE
    )
    assert child.stdout is not None
    assert child.stdin is not None
    try:
        url = (await asyncio.wait_for(child.stdout.readline(), 60)).decode().strip()
        yield url, child.pid
    finally:
        child.stdin.close()
        await asyncio.wait_for(child.wait(), 30)


async def soak(
    turns: int,
    every: int,
    *,
    server_in_process: bool = False,
    max_history_items: int | None = None,
    audio_budget: Budget = "default",
) -> list[Sample]:
    samples: list[Sample] = []
    started = time.monotonic()
    output = AudioOutput(24_000, prebuffer_ms=0)
    stop = asyncio.Event()
    async with server_url(server_in_process, audio_budget) as (url, server_pid):
        speaker = asyncio.create_task(device(output, stop))
        try:
            async with RealtimeSession(
                AGENT,
                url=url,
                config=CONFIG,
                audio_output=output,
                max_history_items=max_history_items,
            ) as session:
                for n in range(1, turns + 1):
                    await turn(session, n)
                    if n % every == 0:
                        gc.collect()
                        server = rss_mb(server_pid) if server_pid is not None else None
                        samples.append(Sample(n, rss_mb(), time.monotonic() - started, server))
                        shown = f"  server RSS {server:7.1f} MB" if server is not None else ""
                        print(f"{n:5d} turns  RSS {samples[-1].rss_mb:7.1f} MB{shown}", flush=True)
        finally:
            stop.set()
            await speaker
    return samples


def growth_per_100_turns(samples: list[Sample], warmup: int, *, server: bool = False) -> float:
    """MB per 100 turns after the warm-up (the client's, or the server process's): the slope
    of a least-squares line."""
    kept = [s for s in samples if s.turns > warmup]
    values = [s.server_rss_mb if server else s.rss_mb for s in kept]
    if len(kept) < 2 or any(v is None for v in values):
        return float("nan")
    x = np.array([s.turns for s in kept], dtype=float)
    y = np.array(values, dtype=float)
    slope = np.polyfit(x, y, 1)[0]
    return float(slope * 100)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--server-in-process", action="store_true")
    parser.add_argument("--max-history-items", type=int, default=None)
    parser.add_argument(
        "--server-audio-budget-mb",
        default="default",
        help="the server's audio budget in MiB, 'none' (keep all) or 'default'",
    )
    args = parser.parse_args(argv)
    if args.turns < 1 or args.every < 1:
        parser.error("--turns and --every must be at least 1")
    budget: Budget = args.server_audio_budget_mb
    if budget not in ("default", "none"):
        budget = int(float(args.server_audio_budget_mb) * 1024 * 1024)
    elif budget == "none":
        budget = None
    samples = asyncio.run(
        soak(
            args.turns,
            args.every,
            server_in_process=args.server_in_process,
            max_history_items=args.max_history_items,
            audio_budget=budget,
        )
    )
    slope = growth_per_100_turns(samples, args.warmup)
    server = growth_per_100_turns(samples, args.warmup, server=True)
    print(
        f"after {args.warmup} warm-up turns: client {slope:+.2f} MB per 100 turns"
        + ("" if server != server else f", server {server:+.2f} MB per 100 turns")
    )
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "samples": [asdict(s) for s in samples],
                    "mb_per_100": slope,
                    "server_mb_per_100": server,
                }
            )
        )


def _budget(text: str) -> Budget:
    return "default" if text == "default" else None if text == "None" else int(text)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        asyncio.run(serve_main(_budget(sys.argv[2] if len(sys.argv) > 2 else "default")))
    else:
        main()
