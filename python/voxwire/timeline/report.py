"""``write_report``: a session's timeline as one self-contained HTML file.

The file holds the records (JSON), the page's style and its timeline module inline: it opens
from disk in any browser, offline, with nothing fetched, and draws what the live page draws.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from voxwire.timeline.observer import Timeline

__all__ = ["render_report", "write_report"]

_EXPORT_LIST = re.compile(r"^export \{[^}]*\};\s*$", re.MULTILINE)


def static_text(name: str) -> str:
    """One of the browser page's files (``voxwire/web/static``: the page's legend, style and
    timeline module), read as package data: the report draws what the page draws."""
    return (resources.files("voxwire") / "web" / "static" / name).read_text("utf-8")


def _legend() -> str:
    """The legend of the page (index.html), one source for both."""
    page = static_text("index.html")
    start = page.index('<div class="legend">')
    return page[start : page.index("</div>", start) + len("</div>")]


def _inline_module() -> str:
    """timeline.js as a plain script body: its ``export`` keywords removed (it imports nothing)."""
    source = _EXPORT_LIST.sub("", static_text("timeline.js"))
    return source.replace("export function ", "function ")


def _records(source: Timeline | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(source, Timeline):
        return list(source.records)
    records = [dict(r) for r in source]
    for n, record in enumerate(records):
        if not isinstance(record.get("t"), int | float) or not isinstance(record.get("kind"), str):
            raise ValueError(
                f"record {n} is not a timeline record (expected 't' seconds and a 'kind'): "
                f"{str(record)[:120]}"
            )
    return records


def render_report(
    source: Timeline | Iterable[Mapping[str, Any]], *, title: str = "voxwire session"
) -> str:
    """The report's HTML for a :class:`~voxwire.web.Timeline` or its records (e.g.
    ``json.loads(timeline.to_json())`` saved earlier)."""
    data = json.dumps(_records(source), separators=(",", ":"))
    # Inside <script>, only "</" can end the element early; JSON allows "<\\/" for it.
    data = data.replace("</", "<\\/")
    script = _inline_module().replace("</script", "<\\/script")
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>
{static_text("style.css")}
</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
{_legend()}
<h2>Timeline</h2>
<div id="timeline"></div>
<script type="application/json" id="records">{data}</script>
<script>
{script}
const records = JSON.parse(document.getElementById("records").textContent);
window.voxwireModel = renderTimeline(document.getElementById("timeline"), records,
  {{ width: document.body.clientWidth - 10 }});
</script>
</body>
</html>
"""


def write_report(
    path: str | Path,
    source: Timeline | Iterable[Mapping[str, Any]],
    *,
    title: str = "voxwire session",
) -> Path:
    """Write :func:`render_report` to ``path`` (UTF-8); returns the path."""
    out = Path(path)
    out.write_text(render_report(source, title=title), encoding="utf-8")
    return out
