"""``voxwire phone``: answer Twilio calls with an agent (the webhook and the media stream on one
port; see :mod:`.serve` and docs/telephony.md). Its arguments are declared in
``voxwire/cli.py`` (``_add_phone``), so that ``voxwire --help`` does not load the session."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from voxwire.exceptions import ConfigurationError

if TYPE_CHECKING:
    from voxwire.agents import RealtimeAgent
    from voxwire.telephony.twilio.bridge import CallReport
    from voxwire.telephony.twilio.serve import PhoneServer

__all__ = ["load_agent", "phone_server", "serve"]


def load_agent(spec: str) -> RealtimeAgent:
    """``module:attribute`` -> the agent (calling the attribute if it is a function)."""
    from voxwire.agents import RealtimeAgent  # here: `voxwire --help` need not load agents

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigurationError(f"agent {spec!r}: expected module:attribute")
    if os.getcwd() not in sys.path:  # the `voxwire` script does not put it there; apps live there
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"agent {spec!r}: cannot import {module_name}: {exc}") from None
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ConfigurationError(f"agent {spec!r}: {module_name} has no {attribute}")
        found = getattr(found, part)
    if callable(found) and not isinstance(found, RealtimeAgent):
        try:
            found = found()
        except TypeError as exc:
            raise ConfigurationError(f"agent {spec!r}: {attribute}() failed: {exc}") from None
    if not isinstance(found, RealtimeAgent):
        raise ConfigurationError(f"agent {spec!r} is a {type(found).__name__}, not a RealtimeAgent")
    return found


def phone_server(args: argparse.Namespace) -> PhoneServer:
    """The server ``voxwire phone``'s arguments ask for (not started). A bad agent or
    ``--config`` raises here, before anything listens."""
    from voxwire.export import process
    from voxwire.telephony.twilio.bridge import TwilioBridge
    from voxwire.telephony.twilio.serve import PhoneServer

    config = json.loads(args.config.read_text()) if args.config else None
    bridge = TwilioBridge(
        load_agent(args.agent),
        url=args.url,
        model=args.model,
        config=config,
        chunk_ms=args.chunk_ms,
        greeting=args.greeting if args.greeting is not None else args.greet,
        on_event=process.observe_call,  # --metrics-port (docs/operations.md)
    )
    token = os.environ.get("TWILIO_AUTH_TOKEN") or None
    return PhoneServer(
        bridge,
        host=args.host,
        port=args.port,
        public_url=args.public_url,
        auth_token=token,
        on_call_ended=_call_ended,
    )


def _call_ended(report: CallReport) -> None:
    """A call's line, and its session counted as ended in ``--metrics-port``'s export."""
    from voxwire.export import process

    print(report.summary(), flush=True)
    process.call_ended(report)


async def serve(server: PhoneServer, args: argparse.Namespace, stop: asyncio.Event) -> None:
    """Answer calls until ``stop`` is set (``voxwire phone``: by SIGINT or SIGTERM, see
    :func:`voxwire.serving.until_stopped`); then the calls in progress end and the server closes."""
    async with server:
        print(
            f"voxwire phone: {args.agent} answers on {server.url()}: voice webhook "
            f"{args.public_url or server.url()}/twiml (POST or GET), media stream "
            f"{server.media_path}; Twilio signatures "
            f"{'checked' if server.auth_token else 'NOT checked (set TWILIO_AUTH_TOKEN)'}",
            flush=True,
        )
        await stop.wait()
