"""What the console prints of a cut reply: what was heard, and what was not (marked)."""

from __future__ import annotations

import io
import json

from voxwire.asyncio import events as ev
from voxwire.asyncio.observability.metrics import InterruptionMetrics
from voxwire.console import Console

TEXT = "one two three four five six seven eight"


def cut(item_id: str = "item_1") -> ev.MetricsCollectedEvent:
    metrics = InterruptionMetrics(
        item_id=item_id,
        content_index=0,
        response_id="resp_1",
        played_ms=500,
        received_ms=1000,
        dropped_ms=500,
    )
    return ev.MetricsCollectedEvent(metrics=metrics)


def said(item_id: str = "item_1") -> ev.AssistantTranscriptDoneEvent:
    return ev.AssistantTranscriptDoneEvent(
        item_id=item_id, content_index=0, response_id="resp_1", transcript=TEXT, modality="audio"
    )


def printed(*events: ev.SessionEvent, json_lines: bool = False) -> list[str]:
    out = io.StringIO()
    console = Console(lambda: 1.0, json=json_lines, out=out)
    for event in events:
        console.event(event)
    return out.getvalue().splitlines()


def test_a_transcript_after_its_cut_is_split_into_heard_and_not_heard() -> None:
    lines = printed(cut(), said())
    assert lines[-1].endswith('"one two three four"  [not heard: "five six seven eight"]')


def test_a_cut_after_its_transcript_says_what_was_heard_on_the_metrics_line() -> None:
    lines = printed(said(), cut())
    assert lines[0].endswith(f'"{TEXT}"')
    assert lines[1].endswith('; heard about: "one two three four"')


def test_json_lines_carry_the_split() -> None:
    record = json.loads(printed(cut(), said(), json_lines=True)[-1])
    assert (record["heard"], record["not_heard"]) == ("one two three four", "five six seven eight")


def test_an_uncut_item_prints_whole() -> None:
    assert printed(cut("item_other"), said())[-1].endswith(f'"{TEXT}"')
