"""``voxwire bench --report``: the table drawn in one self-contained HTML file, opened from disk
in headless Chromium (when there is one) with every plot and bar present."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.children import child_env
from tests.web.browser import browser_or_skip, launch_args


def test_voxwire_bench_report_draws_every_figure_and_opens_offline(tmp_path: Path) -> None:
    report = tmp_path / "bench.html"
    done = subprocess.run(
        [sys.executable, "-m", "voxwire.cli", "bench", "--rounds", "1", "--report", str(report)],
        capture_output=True,
        text=True,
        timeout=300,
        env=child_env(),
    )
    assert done.returncode == 0, done.stderr
    printed = [line for line in done.stdout.splitlines() if re.search(r"\d+\.\d\d", line)]
    page = report.read_text("utf-8")
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing fetched
    assert "<script" not in page
    chromium = browser_or_skip()

    async def look() -> dict[str, Any]:
        from playwright.async_api import async_playwright

        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium, args=launch_args())
            try:
                page = await browser.new_page()
                requests: list[str] = []
                page.on("request", lambda r: requests.append(r.url))
                await page.goto(report.as_uri())
                found: dict[str, Any] = await page.evaluate(
                    """() => Object.fromEntries([...document.querySelectorAll('figure')].map(
                        f => [f.dataset.plot, [...f.querySelectorAll('rect')].map(r => ({
                            series: r.dataset.series, value: Number(r.dataset.value),
                            width: r.getBoundingClientRect().width}))]))"""
                )
                found["requests"] = requests
                return found
            finally:
                await browser.close()

    drawn = asyncio.run(look())
    assert drawn.pop("requests") == [report.as_uri()]  # the file alone: no network
    assert set(drawn) == {"resampler", "audio_path"}
    resampler = drawn["resampler"]
    assert sum(bar["series"] == "voxwire" for bar in resampler) == 4  # every conversion
    assert all(bar["width"] > 0 and bar["value"] > 0 for bars in drawn.values() for bar in bars)
    # Every figure the command printed is a bar (the peers' too).
    values = sorted(bar["value"] for bars in drawn.values() for bar in bars)
    assert len(values) == sum(len(re.findall(r"\d+\.\d\d(?!x)", line)) for line in printed)
