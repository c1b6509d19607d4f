"""The fenced Python blocks of README.md, docs/*.md and examples/*.md, and how the tests run
them (tests/test_docs.py; a page added to docs/ is picked up by itself).

A block is a program: it runs as written, top-level ``await`` allowed (as in ``python -m
asyncio``; a script wraps it in ``async def main()`` and ``asyncio.run(main())``), in a fresh
namespace, in a temporary working directory, bounded by a timeout. Its first lines may carry a
marker, a comment the reader sees too:

* ``# run by: tests/PATH.py`` — run by that test, which needs more around it than a block can
  have (a webhook app served to the local server's SIP trunk); the test reads the block from
  the page (:func:`blocks`), so what it runs is what the page shows.
* ``# fragment: why`` — refused (tests/test_docs.py fails on it): a block the tests never run
  is a claim nothing checks. Make it a program, or write it as prose.
* ``# needs: OPENAI_API_KEY`` — written for the hosted service. The tests run it against the
  local server on loopback instead (a server with :data:`DOCS_SCENARIO` standing in for the
  model), by pointing the session's default URL at it; the key is unset while it runs, so a
  block that reaches for the hosted service without saying so fails.
* ``# needs: a sound card`` — opens the microphone or speaker. The tests run it in a child
  process whose ALSA default device is README's null-device recipe (PortAudio opens it like a
  real device); skipped, with the reason, without the PortAudio library.
* ``# needs: PostgreSQL (VOXWIRE_STORE)`` — a PostgreSQL conninfo in ``VOXWIRE_STORE``; the
  tests give it a throwaway cluster's (skipped, with the reason, where the server binaries or
  psycopg are missing).
* ``# needs: pip install PACKAGE`` — a package that no user extra of voxwire installs (checked:
  tests/test_docs.py reads the imports of every block against pyproject.toml's extras).

Several needs go on one line, separated by commas.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voxwire.server import Pacing, RealtimeServer, Scenario

ROOT = Path(__file__).resolve().parents[1]
BLOCK_TIMEOUT_S = 30.0

HOSTED = "OPENAI_API_KEY"
SOUND_CARD = "a sound card"
POSTGRES = "PostgreSQL (VOXWIRE_STORE)"
#: ``# needs: pip install PACKAGE`` — a package no user extra of voxwire installs (the official
#: ``openai`` client, an ASGI server): the reader is told to install it; the tests run the block
#: where it is installed (the dev extra) and skip it, with the reason, elsewhere.
PIP_INSTALL = "pip install "
KNOWN_NEEDS = (HOSTED, SOUND_CARD, POSTGRES)

# A fence as CommonMark reads one: up to three spaces (more inside a list item), ``` or ~~~,
# then the info string; Python is any info string naming it (python, py, python3, pycon, in any
# case), so that no Python block escapes the tests by its spelling or its indentation.
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)[^`]*$")
_PYTHON = re.compile(r"^(python3?|py|pycon)$", re.I)
_MARKER = re.compile(r"^#\s*(fragment|needs|run by):\s*(.*?)\s*$")

#: The local server's answers while a ``needs: OPENAI_API_KEY`` block runs: the words the
#: examples use, answered as a model following their instructions would.
DOCS_SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"match": "weather", "call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"after_tool": "get_weather", "say": "It is {output.temperature} degrees in Paris."},
            {
                "match": "refund",
                "call": {"name": "refund", "arguments": {"order_id": "B-42", "amount": 30.0}},
            },
            {"after_tool": "refund", "say": "Done: {output}"},
            {
                "match": "supervisor",
                "call": {"name": "ask_refund_supervisor", "arguments": {"order_id": "B-42"}},
            },
            {"after_tool": "ask_refund_supervisor", "say": "The supervisor says: {output}"},
            {
                "match": "flights?",
                "call": {"name": "search_flights", "arguments": {"destination": "Rome"}},
            },
            {"after_tool": "search_flights", "say": "The best offer: {output}"},
            {"after_system": "Progress of", "say": "Still searching, one moment."},
            {"match": "docs", "mcp": {"server_label": "docs", "name": "search", "arguments": {}}},
            {"match": "publish", "mcp": {"server_label": "docs", "name": "publish"}},
            {"after_tool": "search", "say": "The docs say: {output}"},
            {"after_tool": "publish", "say": "Published: {output}"},
            {"match": "hello|hi\\b", "say": "Hello! How can I help?"},
        ],
        "fallback": "You said: {text}",
        "mcp_servers": {
            "docs": {
                "tools": [
                    {"name": "search", "read_only": True, "output": "Three pages match."},
                    {"name": "publish", "output": "Published."},
                ]
            }
        },
    }
)


@dataclass(frozen=True)
class Block:
    """One fenced ``python`` block of a page."""

    page: Path
    line: int  # of its first code line, 1-based
    source: str
    fragment: str | None  # '# fragment: why' (refused by the tests)
    needs: tuple[str, ...]
    run_by: str | None = None  # the test that runs it, relative to the repository

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README.md, every docs/*.md and examples/*.md, in a stable order."""
    found = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return found + sorted((ROOT / "examples").glob("**/*.md"))


def blocks(page: Path) -> list[Block]:
    """The page's Python blocks with their markers (indented ones dedented)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening.group(1), opening.group(2)
        end = index + 1
        while end < len(lines) and not _closes(lines[end], fence):
            end += 1
        if _PYTHON.match(opening.group(3)):
            code = [
                line[len(indent) :] if line.startswith(indent) else line.lstrip()
                for line in lines[index + 1 : end]
            ]
            found.append(_block(page, index + 2, code))
        index = end + 1
    return found


def _closes(line: str, fence: str) -> bool:
    """A closing fence: the opening's character, at least as many, nothing after."""
    stripped = line.strip()
    return stripped.startswith(fence) and set(stripped) == {fence[0]}


def _block(page: Path, line: int, code: list[str]) -> Block:
    fragment: str | None = None
    run_by: str | None = None
    needs: list[str] = []
    for text in code:
        marker = _MARKER.match(text.strip())
        if marker is None:
            break
        if marker.group(1) == "fragment":
            fragment = marker.group(2) or "fragment"
        elif marker.group(1) == "run by":
            run_by = marker.group(2)
        else:
            needs += [need.strip() for need in marker.group(2).split(",") if need.strip()]
    return Block(page, line, "\n".join(code) + "\n", fragment, tuple(needs), run_by)


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def compiled(block: Block) -> Any:
    """The block as code whose line numbers are the page's (tracebacks point into the page)."""
    source = "\n" * (block.line - 1) + block.source
    return compile(source, str(block.page), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


async def run_block(block: Block) -> None:
    """Run ``block`` (top-level await allowed), with the local server standing in for the
    hosted service if it needs one; bounded by :data:`BLOCK_TIMEOUT_S`."""
    code = compiled(block)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    async with _local_service(HOSTED in block.needs):
        result = eval(code, namespace)
        if inspect.isawaitable(result):
            await asyncio.wait_for(result, BLOCK_TIMEOUT_S)


@asynccontextmanager
async def _local_service(wanted: bool) -> AsyncIterator[None]:
    """The local server, with the session's default URL pointing at it, while the block runs."""
    if not wanted:
        yield
        return
    # RealtimeSession's default endpoint (DEFAULT_URL beside build_url, which reads it when a
    # session is made): the one place the hosted service's address lives.
    from voxwire.asyncio.options import build_url

    endpoint = sys.modules[build_url.__module__]

    hosted = endpoint.DEFAULT_URL
    pacing = Pacing(audio_pace=0, text_tokens_per_s=0)
    async with RealtimeServer(scenario=DOCS_SCENARIO, pacing=pacing) as server:
        endpoint.DEFAULT_URL = f"{server.base_url}/realtime"
        try:
            yield
        finally:
            endpoint.DEFAULT_URL = hosted


def pace_the_null_microphone() -> None:
    """The null-device recipe's capture (a file plugin reading /dev/zero) delivers blocks as
    fast as PortAudio asks, not in real time as a microphone does; the flood of silence would
    starve the session and the local server sharing this process. Here each block is handed on
    no earlier than a real microphone would deliver it (the test harness's stand-in for the
    device's clock; nothing of voxwire changes)."""
    import time

    from voxwire.audio import devices

    start = devices.SoundDeviceInput.start

    def paced_start(self: Any, callback: Any) -> None:
        began = time.monotonic()
        delivered = 0

        def paced(block: Any) -> None:
            nonlocal delivered
            delivered += len(block)
            due = began + delivered / self.rate_hz
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            callback(block)

        start(self, paced)

    devices.SoundDeviceInput.start = paced_start  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    """``python -m tests.docs_blocks PAGE LINE``: run one block here (a child process)."""
    pace_the_null_microphone()
    page, line = Path(argv[0]).resolve(), int(argv[1])
    (block,) = [b for b in blocks(page) if b.line == line]
    asyncio.run(run_block(block))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
