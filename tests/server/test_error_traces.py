"""The server's errors against recorded ones (tests/fixtures/realtime_error_traces.jsonl: lines
copied from ../shared/realtime-traces/, each naming its source file): same type, code, param
and message, the ids aside."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .helpers import SLOW, client_of, run, serving

TRACES = Path(__file__).resolve().parents[1] / "fixtures" / "realtime_error_traces.jsonl"
_RESPONSE_ID = re.compile(r"resp_[A-Za-z0-9]+")


def recorded(code: str) -> dict[str, Any]:
    for line in TRACES.read_text().splitlines():
        error = json.loads(line)["event"]["error"]
        if error["code"] == code:
            return dict(error)
    raise AssertionError(f"no recorded {code}")


def same(got: dict[str, Any], want: dict[str, Any]) -> None:
    for key in ("type", "code", "param"):
        assert got[key] == want[key], (key, got, want)
    assert _RESPONSE_ID.sub("resp_", got["message"]) == _RESPONSE_ID.sub("resp_", want["message"])


def test_a_frame_without_type() -> None:
    async def main() -> dict[str, Any]:
        async with serving() as server, client_of(server) as client:
            await client.send({"event_id": "event_567"})
            return (await client.until("error"))[-1]["error"]

    error = run(main())
    same(error, recorded("invalid_event"))
    assert error["event_id"] == "event_567"


def test_a_second_response_while_one_is_active() -> None:
    async def main() -> dict[str, Any]:
        async with serving(pacing=SLOW) as server, client_of(server) as client:
            await client.say("hello")
            await client.send({"type": "response.create"})
            await client.until("response.created")
            await client.send({"type": "response.create"})
            return (await client.until("error"))[-1]["error"]

    same(run(main()), recorded("conversation_already_has_active_response"))
