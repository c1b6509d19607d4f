"""The environment of the child processes tests start: the same voxwire as this test run.

Child processes import ``voxwire`` from the directory this run imported it from — the source
tree with ``PYTHONPATH=python``, an editable install, or a wheel installed into site-packages —
and ``tests.*`` helper modules from the repository root. Pointing them at ``python/`` instead
breaks as soon as the package is installed non-editable (the source tree holds no compiled
``_core``), and would test other code than the parent's.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import voxwire

ROOT = Path(__file__).resolve().parents[1]
#: The directory holding the ``voxwire`` package this test run imported.
PACKAGE_PARENT = Path(voxwire.__file__).resolve().parents[1]


def child_env(**extra: str) -> dict[str, str]:
    """``os.environ`` with ``PYTHONPATH`` leading to this run's voxwire and to ``tests``."""
    paths = [str(PACKAGE_PARENT), str(ROOT)]
    inherited = os.environ.get("PYTHONPATH")
    if inherited:
        paths.append(inherited)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **extra}


def default_sigint() -> None:
    """``preexec_fn`` of a child the test interrupts with SIGINT: the default action back. A
    suite run in the background (``nohup pytest … &``) ignores SIGINT and its children inherit
    that: Python then never raises ``KeyboardInterrupt``, and voxwire's serving commands keep
    the signal ignored, as a background job's should be."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
