"""``voxwire web``: the page for an agent, against the local server (default) or ``--url``
(the arguments are declared in :mod:`voxwire.cli`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import importlib
import os
import signal
import sys
import webbrowser
from collections.abc import AsyncIterator, Callable
from typing import Any

from voxwire.agents import RealtimeAgent
from voxwire.web.bridge import SessionRecipe
from voxwire.web.server import WebServer

__all__ = ["DEFAULT_AGENT", "load_agent", "local_recipe", "run"]

DEFAULT_AGENT = "voxwire.demo.script:agents"


def load_agent(spec: str) -> Callable[[], RealtimeAgent]:
    """``module:attribute`` naming a :class:`RealtimeAgent` or a function returning one; the
    result makes a new agent per call (one per tab) when it names a function."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise SystemExit(f"voxwire web: --agent {spec!r}: expected module:attribute")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise SystemExit(f"voxwire web: --agent {spec!r} cannot be loaded: {exc}") from None
    if isinstance(target, RealtimeAgent):
        agent = target
        return lambda: agent
    if callable(target):
        return _checked(spec, target)
    raise SystemExit(f"voxwire web: --agent {spec!r} is neither a RealtimeAgent nor a function")


def _checked(spec: str, make: Callable[[], Any]) -> Callable[[], RealtimeAgent]:
    def agent() -> RealtimeAgent:
        made = make()
        if not isinstance(made, RealtimeAgent):
            raise TypeError(f"{spec} returned {type(made).__name__}, not a RealtimeAgent")
        return made

    return agent


def _config(silence_ms: int) -> dict[str, Any]:
    from voxwire.demo.script import session_config

    return session_config(silence_ms)


@contextlib.asynccontextmanager
async def local_recipe(
    agent: Callable[[], RealtimeAgent], url: str | None, silence_ms: int = 500
) -> AsyncIterator[SessionRecipe]:
    """The recipe for ``agent`` against ``url`` (with ``OPENAI_API_KEY``), or against a local
    server answering from the demo's scenario, in real time, for the duration."""
    from voxwire.demo.script import SCENARIO
    from voxwire.quickstart import endpoint
    from voxwire.server import Pacing

    api_key = os.environ.get("OPENAI_API_KEY") if url is not None else None
    async with endpoint(url, SCENARIO, Pacing(audio_pace=2.0)) as in_use:
        label = in_use.split("?")[0] + ("" if url is not None else " (local server, offline)")
        yield SessionRecipe(agent, in_use, api_key, _config(silence_ms), label)


async def _serve(args: argparse.Namespace) -> None:
    agent = load_agent(args.agent)
    # SIGINT (Ctrl-C) and SIGTERM end the wait below: tabs' sessions and the servers close.
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    async with (
        local_recipe(agent, args.url, args.silence_ms) as recipe,
        WebServer(recipe, host="127.0.0.1", port=args.port) as web,
    ):
        print(
            f"voxwire web: {web.url}  (agent {args.agent}; {recipe.label}); Ctrl-C stops",
            flush=True,
        )
        if args.open:
            webbrowser.open(web.url)
        await stop.wait()


def run(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C (status 0); a busy port is status 2 with what to do."""
    try:
        with contextlib.suppress(KeyboardInterrupt):  # one before the handlers are in place
            asyncio.run(_serve(args))
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        print(
            f"voxwire web: port {args.port} is already in use: choose another with --port N, "
            "or --port 0 for a free one (the page's address is printed)",
            file=sys.stderr,
        )
        return 2
    return 0
