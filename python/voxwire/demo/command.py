"""``voxwire demo``: the plain conversation, or the speakerphone room (the arguments are
declared in :mod:`voxwire.cli`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["DEFAULT_OUT", "run"]

#: ``--out`` when not given (in the current folder; the checkout's .gitignore names it).
DEFAULT_OUT = "voxwire-demo.wav"


def run(args: argparse.Namespace) -> int:
    """Run what the command line asks for; ``--aec`` alone asks for the room, the one scene
    with an echo to cancel. Options the room would ignore are a usage error (exit 2)."""
    if args.room is not None or args.aec:
        ignored = not_for_the_room(args)
        if ignored:
            print(
                "voxwire demo: --room (and --aec, which runs the room) is a scene of its own: "
                f"{' and '.join(ignored)} do not apply to it",
                file=sys.stderr,
            )
            return 2
        from voxwire.demo.room import run_room

        for line in run_room(aec=args.aec).lines():
            print(line)
        return 0

    from voxwire import demo

    out = args.out if args.out is not None else Path(DEFAULT_OUT)
    options = demo.DemoOptions(
        out,
        url=args.url,
        realtime=args.realtime,
        json=args.json,
        report=args.report,
        verbose=args.verbose,
    )
    return demo.main(options)


def not_for_the_room(args: argparse.Namespace) -> list[str]:
    """The plain demo's options given on this command line (the room takes none of them)."""
    given = {
        "--out": args.out is not None,
        "--url": args.url is not None,
        "--realtime": args.realtime,
        "--json": args.json,
        "--report": args.report is not None,
        "--verbose": args.verbose,
    }
    return [option for option, yes in given.items() if yes]
