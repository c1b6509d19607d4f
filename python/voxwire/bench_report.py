"""``voxwire bench --report bench.html``: the table of :mod:`voxwire.bench` drawn as pictures.

One self-contained HTML file (inline SVG and style, no script, nothing fetched): a grouped bar
chart of the resampler against python-soxr per conversion (when soxr was measured), and one of
every other figure of the table (the ring, delta to playable at p50 and p99, G.711). Each
chart is a ``<figure data-plot=NAME>``, each bar a ``<rect data-value=µs>`` with its value
written beside it, so the figures can be read without the picture too.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from voxwire.bench import Row

__all__ = ["render_report", "write_report"]

_WIDTH: Final = 720
_LABEL_W: Final = 300
_BAR_H: Final = 16
_GAP: Final = 6
_COLORS: Final = {"voxwire": "#2f6fdf", "peer": "#d9822b"}

_STYLE: Final = """
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; max-width: 60em; }
figure { margin: 2em 0; } figcaption { font-weight: 600; margin-bottom: .5em; }
text { font: 12px system-ui, sans-serif; fill: #222; } .legend span { margin-right: 1.5em; }
.swatch { display: inline-block; width: 1em; height: 1em; vertical-align: middle; }
"""


def _bars(series: Sequence[tuple[str, list[tuple[str, float | None]]]]) -> str:
    """An SVG of horizontal bars: per label, one bar per (name, µs) of that label."""
    values = [v for _, bars in series for _, v in bars if v is not None]
    scale = (_WIDTH - _LABEL_W - 80) / max(values) if values else 0.0
    parts: list[str] = []
    y = 0
    for label, bars in series:
        parts.append(f'<text x="0" y="{y + _BAR_H - 3}">{html.escape(label)}</text>')
        for name, value in bars:
            if value is not None:
                width = max(1.0, value * scale)
                parts.append(
                    f'<rect x="{_LABEL_W}" y="{y}" width="{width:.1f}" height="{_BAR_H}" '
                    f'fill="{_COLORS[name]}" data-series="{name}" data-value="{value:.3f}"/>'
                    f'<text x="{_LABEL_W + width + 4:.1f}" y="{y + _BAR_H - 3}">'
                    f"{value:.2f} µs</text>"
                )
            y += _BAR_H + 2
        y += _GAP
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{y}" '
        f'role="img">{"".join(parts)}</svg>'
    )


def _figure(name: str, caption: str, legend: dict[str, str], svg: str) -> str:
    keys = "".join(
        f'<span><i class="swatch" style="background:{_COLORS[k]}"></i> {html.escape(v)}</span>'
        for k, v in legend.items()
    )
    return (
        f'<figure data-plot="{name}"><figcaption>{html.escape(caption)}</figcaption>'
        f'<div class="legend">{keys}</div>{svg}</figure>'
    )


def render_report(rows: Sequence[Row], title: str) -> str:
    """The report's HTML for ``rows`` (as :func:`voxwire.bench.rows` measured them)."""
    resampler = [r for r in rows if r.what.startswith("resample")]
    others = [r for r in rows if not r.what.startswith("resample")]
    peer = next((r.peer for r in resampler if r.peer_us is not None), "")
    figures = [
        _figure(
            "resampler",
            "Resampler per 20 ms chunk, by conversion (shorter is faster)",
            {"voxwire": "voxwire", "peer": peer} if peer else {"voxwire": "voxwire"},
            _bars([(r.what, [("voxwire", r.us), ("peer", r.peer_us)]) for r in resampler]),
        ),
        _figure(
            "audio_path",
            "The rest of the audio path per 20 ms chunk (delta -> playable: p50, and p99)",
            {"voxwire": "voxwire (p50)", "peer": "p99, or the peer named in the row"},
            _bars(
                [
                    (f"{r.what} {r.peer}".strip(), [("voxwire", r.us), ("peer", r.peer_us)])
                    for r in others
                ]
            ),
        ),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        "<p>A first look, measured on this machine; the figures of record are in "
        "benches/RESULTS.md.</p>"
        f"{''.join(figures)}</body></html>"
    )


def write_report(rows: Sequence[Row], path: Path, title: str) -> None:
    path.write_text(render_report(rows, title), encoding="utf-8")
