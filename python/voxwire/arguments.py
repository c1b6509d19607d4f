"""The ``voxwire`` command's argument types and help formatter: each value is checked when the
command line is read, so a bad one is a usage error (status 2) before anything runs."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = [
    "QUICKSTART_OUT",
    "ShowDefaults",
    "integer",
    "output_file",
    "pace",
    "port",
    "positive",
]


class ShowDefaults(argparse.HelpFormatter):
    """Each option's help ends with its default ``(default: 8765)``, unless it has none (or
    its help already says what not giving it means)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            not action.option_strings
            or action.default in (None, False, argparse.SUPPRESS)
            or "default" in text
        ):
            return text
        return text + " (default: %(default)s)"


#: quickstart's default output (git-ignored in the checkout, as the demo's voxwire-demo.wav).
QUICKSTART_OUT = "quickstart-reply.wav"


def output_file(text: str) -> Path:
    """An output file (``--out``, ``--report``), checked when the command line is read — before
    a session runs — so that a path that cannot be written fails at once, not after the work."""
    import os

    path = Path(text)
    folder = path.parent
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: give a file name in it")
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text} cannot be written: no folder {folder}")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"{text} cannot be written: permission denied")
    return path


def port(text: str) -> int:
    """``--port``: 0 (a free port) to 65535."""
    port = integer(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a port: expected 0..65535 (0: a free one)")
    return port


def positive(text: str) -> int:
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: expected a whole number >= 1")
    return value


def integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def pace(text: str) -> float:
    """``--pace``: x real time, 0 for as fast as possible."""
    try:
        pace = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not pace >= 0 or pace == float("inf"):
        raise argparse.ArgumentTypeError(f"{text}: expected a speed >= 0 (0: as fast as possible)")
    return pace
