"""``voxwire demo --report``: the demo's conversation as one HTML file, its records checked, and
the file opened from disk in headless Chromium (when there is one), drawn, and photographed."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import browser_or_skip, launch_args
from voxwire.demo import DemoOptions, run_demo


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]], Any]:
    where = tmp_path_factory.mktemp("report")
    options = DemoOptions(where / "demo.wav", json=True, report=where / "demo.html")
    summary = asyncio.run(run_demo(options))
    html = options.report.read_text("utf-8") if options.report else ""
    found = re.search(r'id="records">(.*?)</script>', html, re.S)
    assert found is not None
    return where / "demo.html", json.loads(found.group(1)), summary


def test_the_demo_report_holds_the_conversation(
    report: tuple[Path, list[dict[str, Any]], Any],
) -> None:
    _, records, summary = report
    assert summary.ok
    kinds = [r["kind"] for r in records]
    for kind in ("speech_started", "speech_stopped", "tool_start", "tool_end", "handoff"):
        assert kind in kinds, kind
    (cut,) = (r for r in records if r["kind"] == "cut" and r["audio_end_ms"] is not None)
    (truncated,) = (r for r in records if r["kind"] == "truncated")
    assert truncated["audio_end_ms"] == cut["audio_end_ms"]
    # The demo's own check of the same cut: what its virtual speaker played.
    assert [c.audio_end_ms for c in summary.cuts if c.audio_end_ms is not None] == [
        cut["audio_end_ms"]
    ]
    assert any(r["kind"] == "transcript" and "Billing desk" in r["text"] for r in records)


def test_the_report_opens_in_a_browser(report: tuple[Path, list[dict[str, Any]], Any]) -> None:
    chromium = browser_or_skip()
    path, records, _ = report
    cut = next(r for r in records if r["kind"] == "cut" and r["audio_end_ms"] is not None)

    async def look() -> dict[str, Any]:
        from playwright.async_api import async_playwright

        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium, args=launch_args())
            try:
                page = await browser.new_page(viewport={"width": 1300, "height": 700})
                errors: list[str] = []
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                failed: list[str] = []
                page.on("requestfailed", lambda request: failed.append(request.url))
                await page.goto(path.as_uri())
                shot = path.with_suffix(".png")
                await page.screenshot(path=str(shot), full_page=True)
                print(f"screenshot: {shot}")
                seen: dict[str, Any] = await page.evaluate(
                    "() => ({labels: [...document.querySelectorAll('.cut-label')]"
                    ".map(e => e.textContent), handoffs: document.querySelectorAll("
                    "'.mark.handoff').length, tools: document.querySelectorAll('rect.tool')"
                    ".length, turns: window.voxwireModel.turns.length, transcripts: "
                    "document.querySelectorAll('.transcripts li').length})"
                )
                seen["errors"], seen["failed"] = errors, failed
                return seen
            finally:
                await browser.close()

    seen = asyncio.run(look())
    assert seen["errors"] == []
    assert seen["failed"] == []
    assert seen["labels"] == [f"cut {cut['audio_end_ms']} ms ✓"]
    assert seen["handoffs"] == 1
    assert seen["tools"] == 1
    assert seen["turns"] == 2
    assert seen["transcripts"] == 3
