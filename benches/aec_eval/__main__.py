"""python -m benches.aec_eval [--set held_out|tune] [--rooms N] [--only NAME ...]
[--save results.json] [--plot figure.png] [--cpu]

Prints Markdown tables of the figures' distributions per canceller (benches/aec_eval/metrics.py
defines them), over the seeds of ``--set`` (benches/aec_eval/generator.py's SEEDS; the first
``--rooms`` of them).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from benches.aec_eval.generator import SEEDS
from benches.aec_eval.report import GROUPS, by_group, headline, plot, search_harm
from benches.aec_eval.run import cancellers, cpu_48k, run_all


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", choices=sorted(SEEDS), default="held_out")
    parser.add_argument("--rooms", type=int, default=None)
    parser.add_argument("--only", nargs="*", help="cancellers whose name contains these")
    parser.add_argument("--save", type=Path, help="write every row as JSON")
    parser.add_argument("--load", type=Path, help="summarise saved rows instead of running")
    parser.add_argument("--plot", type=Path, help="write a PNG of the distributions")
    parser.add_argument("--cpu", action="store_true", help="also CPU at 48 kHz vs the APM")
    args = parser.parse_args()
    seeds = list(SEEDS[args.set])[: args.rooms]
    rows = json.loads(args.load.read_text()) if args.load else run_all(seeds, cancellers(args.only))
    if args.save:
        args.save.write_text(json.dumps(rows, indent=0))
    names = list(dict.fromkeys(r["canceller"] for r in rows))
    rooms = len({r["seed"] for r in rows})
    print(f"\n{rooms} rooms of the {args.set} set\n")
    print("\n".join(headline(rows, names)))
    for group in GROUPS:
        print()
        print("\n".join(by_group(rows, [n for n in names if n != "voxwire linear filter"], group)))
    if any(r["canceller"] == "voxwire delay_search" for r in rows):
        print("\n- " + search_harm(rows))
    if args.cpu:
        cpu = cpu_48k()
        ratio = cpu["voxwire"] / cpu["LiveKit APM (AEC3)"]
        print(
            f"- CPU at 48 kHz, s per minute: voxwire {cpu['voxwire']:.2f}, APM "
            f"{cpu['LiveKit APM (AEC3)']:.2f} ({ratio:.2f}x)"
        )
    if args.plot:
        plot(rows, names, args.plot, f"{rooms} {args.set} rooms")


if __name__ == "__main__":
    main()
