"""The timeline as an observer of a real session on the local server: without an output (audio
events count what was received, the user state stands in for server VAD), and with a
RemoteOutput acknowledged by hand (heard, the cut at what was acknowledged, the server's
answer); then the report: one self-contained file, whatever the transcripts hold."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.server.helpers import FAST, WEATHER, run
from voxwire.agents import RealtimeAgent, function_tool, output_guardrail
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio import events as ev
from voxwire.audio import RemoteOutput
from voxwire.server import RealtimeServer
from voxwire.web import Timeline, render_report, write_report


@function_tool
async def get_weather(city: str) -> dict[str, Any]:
    """The weather.

    Args:
        city: where.
    """
    return {"temperature": 21}


AGENT = RealtimeAgent(name="Weather", instructions="Say the weather.", tools=[get_weather])
NO_VAD = {"audio": {"input": {"turn_detection": None}}}


async def _until(session: RealtimeSession, timeline: Timeline, done: type[Any], count: int) -> None:
    async def follow() -> None:
        seen = 0
        async for event in session:
            timeline.observe(event)
            seen += isinstance(event, done)
            if seen == count:
                return

    await asyncio.wait_for(follow(), 15)


async def _until_truncated(session: RealtimeSession, timeline: Timeline) -> None:
    async def follow() -> None:
        async for event in session:
            timeline.observe(event)
            if any(r["kind"] == "truncated" for r in timeline.records):
                return

    await asyncio.wait_for(follow(), 10)


def test_a_session_without_output_tool_call_and_received_audio() -> None:
    async def body() -> list[dict[str, Any]]:
        timeline = Timeline()
        async with RealtimeServer(scenario=WEATHER, pacing=FAST) as server:
            session = RealtimeSession(AGENT, url=server.url(), config=NO_VAD)
            async with session:
                await session.send_message("what is the weather?")
                # The tool's response, then the answer after its output.
                await _until(session, timeline, ev.ResponseDoneEvent, 2)
        return timeline.records

    records = run(body())
    kinds = [r["kind"] for r in records]
    assert kinds.count("response") == 2
    tool_start, tool_end = (r for r in records if r["kind"].startswith("tool_"))
    assert (tool_start["name"], tool_end["name"]) == ("get_weather", "get_weather")
    assert json.loads(tool_end["output"]) == {"temperature": 21}
    assert tool_end["t"] >= tool_start["t"]
    (done,) = (r for r in records if r["kind"] == "audio_done")
    assert done["received_ms"] > 500
    (said,) = (r for r in records if r["kind"] == "transcript")
    assert said["text"] == "It is 21 degrees in Paris."
    assert [r["t"] for r in records] == sorted(r["t"] for r in records)
    assert json.loads(json.dumps(records)) == records  # plain JSON


def test_a_remote_output_acknowledged_by_hand_is_cut_where_it_was_heard() -> None:
    async def body() -> tuple[list[dict[str, Any]], int]:
        output = RemoteOutput(24_000)
        timeline = Timeline(playback=output.clock)
        async with RealtimeServer(scenario=WEATHER, pacing=FAST) as server:
            session = RealtimeSession(
                AGENT, url=server.url(), config=NO_VAD, audio_output=output, raw_server_events=True
            )
            async with session:
                await session.send_message("tell me a story")
                await _until(session, timeline, ev.AudioEndEvent, 1)
                sent = output.take(30_000)
                heard = len(sent) // 3
                output.acknowledge(heard)
                timeline.observe_playback(output.clock.items())
                await session.interrupt()
                # The cut comes with the interruption, the server's answer after it.
                await _until_truncated(session, timeline)
        return timeline.records, heard

    records, heard = run(body())
    cut = next(r for r in records if r["kind"] == "cut")
    assert cut["audio_end_ms"] == heard * 1000 // 24_000
    assert (
        next(r for r in records if r["kind"] == "truncated")["audio_end_ms"] == cut["audio_end_ms"]
    )
    assert next(r for r in records if r["kind"] == "heard")["heard_ms"] == cut["audio_end_ms"]
    assert next(r for r in records if r["kind"] == "audio_done")["received_ms"] > 5_000


def test_the_report_is_one_file_and_keeps_any_text_inert(tmp_path: Path) -> None:
    timeline = Timeline(clock=iter([0.0, 0.5, 1.0, 2.0]).__next__)
    timeline.note("transcript", role="assistant", item_id="i", text="</script><b>bold</b> & more")
    timeline.note("user_text", text="<!-- -->")
    path = write_report(tmp_path / "r.html", timeline, title="A <title>")
    html = path.read_text("utf-8")
    assert "<title>A &lt;title&gt;</title>" in html
    assert html.count("</script>") == 2  # the data block and the code: nothing else ends one
    data = re.search(r'id="records">(.*?)</script>', html, re.S)
    assert data is not None
    assert json.loads(data.group(1)) == timeline.records
    assert "export " not in html  # the module inlined as a plain script
    assert "src=" not in html  # nothing fetched
    assert "href=" not in html
    assert render_report(timeline.records) == render_report(timeline)


@pytest.mark.parametrize("bad", [[{"kind": "x"}], [{"t": "0", "kind": "x"}], [{"t": 1}]])
def test_the_report_refuses_what_is_not_a_timeline(bad: list[dict[str, Any]]) -> None:
    with pytest.raises(ValueError, match="not a timeline record"):
        render_report(bad)


def test_a_tripped_output_guardrail_is_on_the_timeline() -> None:
    @output_guardrail(name="no_stories")
    def no_stories(agent: RealtimeAgent, text: str) -> bool:
        return "upon" in text

    strict = RealtimeAgent(name="Strict", instructions="Be brief.", output_guardrails=[no_stories])

    async def body() -> list[dict[str, Any]]:
        timeline = Timeline()
        async with RealtimeServer(scenario=WEATHER, pacing=FAST) as server:
            session = RealtimeSession(strict, url=server.url(), config=NO_VAD)
            async with session:
                await session.send_message("tell me a story")
                await _until(session, timeline, ev.GuardrailTrippedEvent, 1)
        return timeline.records

    (trip,) = (r for r in run(body()) if r["kind"] == "guardrail")
    assert trip["guardrails"] == ["no_stories"]
    assert trip["item_id"]


def test_events_recorded_with_their_times_replay_into_the_same_timeline() -> None:
    async def body() -> list[tuple[float, ev.SessionEvent]]:
        kept: list[tuple[float, ev.SessionEvent]] = []
        async with RealtimeServer(scenario=WEATHER, pacing=FAST) as server:
            session = RealtimeSession(AGENT, url=server.url(), config=NO_VAD)
            async with session:
                await session.send_message("what is the weather?")

                async def follow() -> None:
                    async for event in session:
                        kept.append((1000.0 + len(kept), event))
                        if sum(isinstance(e, ev.ResponseDoneEvent) for _, e in kept) == 2:
                            return

                await asyncio.wait_for(follow(), 15)
        return kept

    kept = run(body())
    timeline = Timeline.replay(kept)
    assert all(r["t"] == int(r["t"]) >= 0 for r in timeline.records)  # the kept times, from 0
    tool_end = next(r for r in timeline.records if r["kind"] == "tool_end")
    assert tool_end["t"] == float(
        next(n for n, (_, e) in enumerate(kept) if isinstance(e, ev.ToolEndEvent))
    )
    with pytest.raises(ValueError, match="expected"):
        Timeline.replay([("soon", kept[0][1])])  # type: ignore[list-item]
