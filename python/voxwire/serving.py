"""Serving commands (``voxwire serve``, ``web``, ``phone``) run until a signal: one place for
how they stop, so that they stop alike (standard library only)."""

from __future__ import annotations

import asyncio
import errno
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["until_stopped"]


def until_stopped(
    run: Callable[[asyncio.Event], Coroutine[Any, Any, None]],
    busy: str,
    metrics_port: int | None = None,
) -> int:
    """Run a serving command's ``run(stop)``: SIGINT (Ctrl-C) and SIGTERM set ``stop``, and it
    shuts down in order (closing its connections); a second signal cancels that shutdown.

    Ctrl-C then raises :class:`KeyboardInterrupt` for ``voxwire.cli.main`` (one line, status 130, as
    every command); SIGTERM is status 0. A busy port is status 2 with ``busy``. A signal that
    the process was started ignoring (a non-interactive shell's ``cmd &`` ignores SIGINT) stays
    ignored, as Python itself does with SIGINT.

    ``metrics_port``: also serve the sessions' metrics on 127.0.0.1 (``--metrics-port``;
    voxwire.export.process, docs/operations.md)."""
    try:
        if metrics_port is not None:
            from voxwire.export import process

            port = process.start(metrics_port)
            print(f"metrics on http://127.0.0.1:{port}/metrics", flush=True)
        signum = asyncio.run(_stoppable(run))
    except ImportError as exc:  # --metrics-port without the metrics extra
        print(f"voxwire: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        print(busy if metrics_port is None else f"{busy} (or --metrics-port)", file=sys.stderr)
        return 2
    finally:
        if metrics_port is not None:
            from voxwire.export import process

            process.stop()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    return 0


async def _stoppable(run: Callable[[asyncio.Event], Coroutine[Any, Any, None]]) -> int | None:
    """``run(stop)`` under the signal handlers; the first signal received, if any."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    received: list[int] = []
    main_task = asyncio.current_task()
    assert main_task is not None

    def on_signal(signum: int) -> None:
        received.append(signum)
        if stop.is_set():
            main_task.cancel()  # a second signal: do not wait for the shutdown
        stop.set()

    honoured = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) != signal.SIG_IGN]
    for signum in honoured:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        await run(stop)
    except asyncio.CancelledError:
        if len(received) < 2:
            raise
    finally:
        for signum in honoured:
            loop.remove_signal_handler(signum)
    return received[0] if received else None
