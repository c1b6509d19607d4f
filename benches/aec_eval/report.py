"""Distributions of the figures per canceller, as Markdown tables and a plot."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from benches.aec_eval.run import finite

Row = dict[str, Any]


def _dist(values: list[float], worst: str = "min") -> str:
    """ "median / 10th percentile / worst" (``worst="max"``: 90th percentile and largest)."""
    v = finite(values)
    if not v:
        return "-"
    q = 10 if worst == "min" else 90
    edge = min(v) if worst == "min" else max(v)
    if worst == "max":
        return f"{100 * np.median(v):.1f} / {100 * np.percentile(v, q):.1f} / {100 * edge:.1f}"
    return f"{np.median(v):.2f} / {np.percentile(v, q):.2f} / {edge:.2f}".replace(".00", ".0")


def _pick(rows: list[Row], name: str, where: Callable[[Row], bool] = lambda r: True) -> list[Row]:
    return [r for r in rows if r["canceller"] == name and where(r)]


def _early(r: Row) -> bool:
    return r["double_talk"] != "none" and r["user_at_s"] < 2.0


def headline(rows: list[Row], names: list[str]) -> list[str]:
    out = [
        "| canceller | ERLE after 1 s dB (median / p10 / worst) | linear-or-all ERLE 1.5-2.5 s, "
        "RT60 <= 0.6 s | speech in agent-only frames % (median / p90 / worst) | false "
        "barge-ins per 10 min | barge-ins in 300 ms | STOI DT first 2 s | STOI DT later | "
        "CPU s/min (24 kHz) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        rs = _pick(rows, name)
        if not rs:
            continue
        conv = [r["erle_2s_db"] for r in rs if r["rt60_s"] <= 0.6]
        minutes = sum(r["agent_only_s"] for r in rs) / 60
        false = sum(r["false_barge_ins"] for r in rs) / minutes * 10
        users = [r for r in rs if r["double_talk"] != "none"]
        hits = sum(1 for r in users if r["barge_in_ms"] <= 300)
        early = [r["stoi"] for r in rs if _early(r)]
        later = [r["stoi"] for r in users if not _early(r)]
        out.append(
            f"| {name} | {_dist([r['erle_db'] for r in rs])} | {_dist(conv)} | "
            f"{_dist([r['speech_frames'] for r in rs], 'max')} | {false:.1f} | "
            f"{hits}/{len(users)} | {_dist(early)} | {_dist(later)} | "
            f"{np.mean([r['cpu'] for r in rs]):.2f} |"
        )
    return out


GROUPS: dict[str, list[tuple[str, Callable[[Row], bool]]]] = {
    "loudspeaker": [
        ("linear", lambda r: r["speaker"] == "linear"),
        ("distortion -16 dB", lambda r: r["speaker"] == "distort16"),
        ("distortion -10 dB", lambda r: r["speaker"] == "distort10"),
    ],
    "RT60": [
        ("0.2-0.4 s", lambda r: r["rt60_s"] < 0.4),
        ("0.4-0.7 s", lambda r: 0.4 <= r["rt60_s"] < 0.7),
        ("0.7-1.0 s", lambda r: r["rt60_s"] >= 0.7),
    ],
    "latency": [
        ("as reported", lambda r: r["latency_error_ms"] == 0),
        ("echo 0-20 ms early", lambda r: -20 <= r["latency_error_ms"] < 0),
        ("echo 20-50 ms early", lambda r: r["latency_error_ms"] < -20),
        ("echo 0-50 ms late", lambda r: r["latency_error_ms"] > 0),
    ],
    "clock drift": [
        ("none", lambda r: r["drift_ppm"] == 0),
        ("up to +-100 ppm", lambda r: r["drift_ppm"] != 0),
    ],
}


def by_group(rows: list[Row], names: list[str], group: str) -> list[str]:
    out = [
        f"| {group} | rooms | "
        + " | ".join(f"{n}: ERLE dB (median / p10 / worst); speech % (median / p90)" for n in names)
        + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for label, where in GROUPS[group]:
        cells = []
        count = 0
        for name in names:
            rs = _pick(rows, name, where)
            count = len(rs)
            sp = finite([r["speech_frames"] for r in rs])
            speech = f"{100 * np.median(sp):.1f} / {100 * np.percentile(sp, 90):.1f}" if sp else "-"
            cells.append(f"{_dist([r['erle_db'] for r in rs])}; {speech}")
        out.append(f"| {label} | {count} | " + " | ".join(cells) + " |")
    return out


def search_harm(rows: list[Row]) -> str:
    """How the delay search's worst half-second compares with the plain canceller's."""
    plain = {r["seed"]: r for r in _pick(rows, "voxwire")}
    worse = better = total = 0
    for r in _pick(rows, "voxwire delay_search"):
        p = plain.get(r["seed"])
        if p is None or math.isnan(r["worst_half_s_db"]) or math.isnan(p["worst_half_s_db"]):
            continue
        total += 1
        diff = r["worst_half_s_db"] - p["worst_half_s_db"]
        worse += diff < -3
        better += diff > 3
    return (
        f"delay_search vs without, worst half-second of each room: more than 3 dB better in "
        f"{better}/{total} rooms, more than 3 dB worse in {worse}/{total}"
    )


def plot(rows: list[Row], names: list[str], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    panels = [
        ("erle_db", "echo reduction after 1 s (dB)", 1.0),
        ("speech_frames", "speech in agent-only frames (%)", 100.0),
        ("stoi", "STOI of the user in double talk", 1.0),
    ]
    for ax, (key, label, scale) in zip(axes, panels, strict=True):
        data = [[scale * v for v in finite([r[key] for r in _pick(rows, n)])] for n in names]
        ax.boxplot(data, whis=(10, 90), showfliers=True)
        ax.set_xticks(range(1, len(names) + 1), [n.replace(" ", "\n", 1) for n in names])
        ax.set_title(label)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title + " (boxes: quartiles; whiskers: 10th-90th percentile)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
