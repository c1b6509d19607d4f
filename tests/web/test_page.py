"""The page itself in headless Chromium: it loads without a console error, cut labels close
together do not cover each other, and the transcript marks what the listener never heard of a
cut reply (as the console does: ``[not heard: "..."]``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tests.web.browser import browser_or_skip, launch_args
from voxwire.console import split_heard
from voxwire.web import Timeline, WebServer

REPLY = "Billing desk here. I can see two payments of thirty two euros on your card."


async def _on_page(
    timeline: Timeline, query: str, look: Callable[[Any], Any]
) -> tuple[Any, list[str]]:
    """``look(page)`` on the page served for ``timeline`` (``query``: "?watch" or ""), and
    every console error, page error and failed or refused request while it ran."""
    from playwright.async_api import async_playwright

    chromium = browser_or_skip()
    async with WebServer(watch=timeline) as web, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium, args=launch_args())
        try:
            page = await browser.new_page(viewport={"width": 1100, "height": 700})
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: problems.append(str(exc)))
            page.on("requestfailed", lambda request: problems.append(f"failed {request.url}"))
            page.on(
                "response",
                lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None,
            )
            await page.goto(web.url + query, wait_until="networkidle")
            return await look(page), problems
        finally:
            await browser.close()


def _clock() -> tuple[list[float], Timeline]:
    now = [0.0]
    return now, Timeline(clock=lambda: now[0])


def test_the_page_loads_without_a_console_error() -> None:
    async def nothing(page: Any) -> None:
        await page.wait_for_timeout(300)  # a favicon request goes out after the load

    for query in ("", "?watch"):
        _, problems = asyncio.run(_on_page(Timeline(), query, nothing))
        assert problems == [], (query, problems)


def _cut_reply(timeline: Timeline, now: list[float], item: str, at_s: float, cut_ms: int) -> None:
    now[0] = at_s
    timeline.note("audio_first", item_id=item, content_index=0)
    timeline.note("heard", item_id=item, content_index=0, heard_ms=0)
    now[0] = at_s + cut_ms / 1000
    timeline.note("cut", item_id=item, content_index=0, audio_end_ms=cut_ms)
    timeline.note("truncated", item_id=item, content_index=0, audio_end_ms=cut_ms)
    timeline.note("audio_done", item_id=item, content_index=0, received_ms=4 * cut_ms)


def test_cut_labels_close_together_do_not_cover_each_other() -> None:
    now, timeline = _clock()
    # Three cuts 60 and 90 ms apart, and one far away: labels ~80 px wide, ~13 px apart.
    _cut_reply(timeline, now, "item_a", 0.5, 1000)  # cut at 1.5 s
    _cut_reply(timeline, now, "item_b", 1.5, 60)  # at 1.56 s
    _cut_reply(timeline, now, "item_c", 1.56, 90)  # at 1.65 s
    _cut_reply(timeline, now, "item_d", 3.0, 1000)  # at 4 s

    async def boxes(page: Any) -> dict[str, Any]:
        await page.wait_for_function("() => document.querySelectorAll('.cut-label').length >= 4")
        return dict(
            await page.evaluate(
                "() => ({boxes: [...document.querySelectorAll('.cut-label')].map(e => {"
                "const b = e.getBBox(); return [b.x, b.y, b.width, b.height]; }), "
                "cuts: [...document.querySelectorAll('line.cut')].map(e => +e.getAttribute('x1'))})"
            )
        )

    seen, problems = asyncio.run(_on_page(timeline, "?watch", boxes))
    assert problems == []
    found = seen["boxes"]
    assert len(found) == 4
    for n, (x, y, w, h) in enumerate(found):
        assert w > 20
        for x2, y2, w2, h2 in found[n + 1 :]:
            apart = x + w <= x2 or x2 + w2 <= x or y + h <= y2 or y2 + h2 <= y
            assert apart, (found, n)
    # Each label still starts at or after its own cut line.
    for (x, *_), cut in zip(found, seen["cuts"], strict=True):
        assert x >= cut


def test_the_label_layout_rows_then_moves_right() -> None:
    async def layout(page: Any) -> Any:
        return await page.evaluate(
            "async () => { const m = await import('/static/timeline.js'); return ["
            "m.layoutLabels([{x: 10, width: 50}, {x: 20, width: 50}, {x: 30, width: 50},"
            " {x: 200, width: 50}]),"
            "m.layoutLabels([{x: 30, width: 50}, {x: 10, width: 50}], 1)]; }"
        )

    (three, single), problems = asyncio.run(_on_page(Timeline(), "", layout))
    assert problems == []
    assert three == [
        {"x": 10, "row": 0},
        {"x": 20, "row": 1},
        {"x": 64, "row": 0},  # both rows taken: right of the first label, 4 px apart
        {"x": 200, "row": 0},
    ]
    assert single == [{"x": 64, "row": 0}, {"x": 10, "row": 0}]


def test_the_transcript_marks_what_was_never_heard_of_a_cut_reply() -> None:
    now, timeline = _clock()
    _cut_reply(timeline, now, "item_cut", 0.5, 1500)  # 1.5 of 6 s heard
    timeline.note("transcript", role="assistant", item_id="item_cut", text=REPLY)
    now[0] = 3.0
    timeline.note("audio_first", item_id="item_gone", content_index=0)
    timeline.note("cut", item_id="item_gone", content_index=0, audio_end_ms=None)
    timeline.note("transcript", role="assistant", item_id="item_gone", text="Anything else?")
    timeline.note("audio_first", item_id="item_whole", content_index=0)
    timeline.note("audio_done", item_id="item_whole", content_index=0, received_ms=800)
    timeline.note("transcript", role="assistant", item_id="item_whole", text="Goodbye.")

    async def lines(page: Any) -> Any:
        await page.wait_for_function("() => document.querySelectorAll('.transcripts li').length")
        await page.wait_for_function(
            "() => document.querySelectorAll('.transcripts li').length === 3"
        )
        return await page.evaluate(
            "() => [...document.querySelectorAll('.transcripts li')].map(li => [li.textContent,"
            " [...li.querySelectorAll('.not-heard')].map(s => s.textContent)])"
        )

    (cut, gone, whole), problems = asyncio.run(_on_page(timeline, "?watch", lines))
    assert problems == []
    heard, never = split_heard(REPLY, 1500, 6000)
    assert heard
    assert never
    assert cut == [
        f'2.00 s  assistant: "{heard}"  [not heard: "{never}"]',
        [f'  [not heard: "{never}"]'],
    ]
    assert gone[1] == ['  [not heard: "Anything else?"]']
    assert whole == ["3.00 s  assistant: Goodbye.", []]
