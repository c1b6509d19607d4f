"""The complete example app of docs/telephony.md, run as written against the local server's
SIP trunk: the caller presses an account number, the agent looks it up and transfers the call."""

from __future__ import annotations

import asyncio
import types
from pathlib import Path
from typing import Any

import pytest

from tests.docs_blocks import ROOT, blocks
from tests.server.helpers import FAST
from voxwire.server import RealtimeServer, Scenario
from voxwire.server.phone import Caller, Pause, Press
from voxwire.server.sip import SipTrunk

from .conftest import SECRET, serving_asgi

DOC = ROOT / "docs" / "telephony.md"
SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {
                "match": "account number is",
                "call": {"name": "lookup_account", "arguments": {"number": "1234"}},
            },
            {
                "after_tool": "lookup_account",
                "say": "Thank you {output.name}, transferring you.",
                "call": {"name": "transfer_to_human", "arguments": {}},
            },
        ],
        "fallback": "Welcome. Please key in your account number, then pound.",
    }
)


def example_source() -> str:
    """The block of docs/telephony.md marked '# run by:' this file (tests/docs_blocks.py)."""
    mine = Path(__file__).resolve().relative_to(ROOT).as_posix()
    found = [b for b in blocks(DOC) if b.run_by == mine]
    assert len(found) == 1, f"the example app marked '# run by: {mine}' is gone from {DOC.name}"
    return "\n" * (found[0].line - 1) + found[0].source  # tracebacks name the page's lines


def test_the_documented_example_app_takes_a_call(monkeypatch: pytest.MonkeyPatch) -> None:
    async def body() -> tuple[Any, str]:
        async with RealtimeServer(scenario=SCENARIO, pacing=FAST, transcriber=None) as server:
            started = False
            example: Any = types.ModuleType("phone")

            async def app(scope: Any, receive: Any, send: Any) -> None:
                if scope["type"] == "lifespan":  # before the example is loaded: nothing to do
                    while (await receive())["type"] != "lifespan.shutdown":
                        await send({"type": "lifespan.startup.complete"})
                    await send({"type": "lifespan.shutdown.complete"})
                    return
                await example.app(scope, receive, send)

            async with serving_asgi(app) as base:
                trunk = SipTrunk(server, webhook_url=base, secret=SECRET)
                async with trunk:
                    monkeypatch.setenv("OPENAI_WEBHOOK_SECRET", SECRET)
                    monkeypatch.setenv("API_BASE_URL", trunk.api_base_url)
                    monkeypatch.setenv("REALTIME_URL", server.base_url + "/realtime")
                    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
                    exec(compile(example_source(), str(DOC), "exec"), example.__dict__)
                    started = True
                    caller = Caller((Pause(1500), Press("1234#", interval_ms=100)), pace=0)
                    phone = await trunk.call(caller)
                    state = await phone.ended(timeout_s=60)
                    await asyncio.wait_for(example.app.wait_calls(), 30)
                    await example.calls.aclose()
            assert started
            return phone, state

    phone, state = asyncio.run(body())
    assert state == "referred"
    assert phone.call.refer_to == "tel:+14155550123"
    assert len(phone.line.heard()) > 8000  # the greeting and the goodbye reached the phone
