"""``voxwire web``: the page for an agent, against the local server (default) or ``--url``
(the arguments are declared in :mod:`voxwire.cli`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import os
import webbrowser
from collections.abc import AsyncIterator, Callable
from typing import Any

from voxwire.agents import RealtimeAgent
from voxwire.exceptions import ConfigurationError
from voxwire.web.bridge import SessionRecipe
from voxwire.web.server import WebServer

__all__ = ["DEFAULT_AGENT", "load_agent", "local_recipe", "serve"]

DEFAULT_AGENT = "voxwire.demo.script:agents"


def load_agent(spec: str) -> Callable[[], RealtimeAgent]:
    """``module:attribute`` naming a :class:`RealtimeAgent` or a function returning one; the
    result makes a new agent per call (one per tab) when it names a function. A spec that
    names neither raises :class:`~voxwire.exceptions.ConfigurationError` (status 2)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigurationError(f"--agent {spec!r}: expected module:attribute")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(f"--agent {spec!r} cannot be loaded: {exc}") from None
    if isinstance(target, RealtimeAgent):
        agent = target
        return lambda: agent
    if callable(target):
        return _checked(spec, target)
    raise ConfigurationError(f"--agent {spec!r} is neither a RealtimeAgent nor a function")


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


async def serve(
    args: argparse.Namespace, agent: Callable[[], RealtimeAgent], stop: asyncio.Event
) -> None:
    """Serve the page for ``agent`` until ``stop`` is set (``voxwire web``: by SIGINT or
    SIGTERM, see :func:`voxwire.serving.until_stopped`); then the tabs' sessions and the
    servers close."""
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
