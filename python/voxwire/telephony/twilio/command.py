"""``voxwire phone``: answer Twilio calls with an agent (the webhook and the media stream on one
port; see :mod:`.serve` and docs/telephony-twilio.md)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from voxwire.exceptions import ConfigurationError

if TYPE_CHECKING:
    from voxwire.agents import RealtimeAgent

__all__ = ["add_phone_parser", "load_agent", "main"]


def add_phone_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``phone`` subcommand of ``voxwire``."""
    ph = sub.add_parser(
        "phone",
        help="answer Twilio calls with an agent (voice webhook + media stream on one port)",
        description="Set the Twilio number's voice webhook ('A call comes in') to "
        "PUBLIC_URL/twiml (HTTP POST or GET). OPENAI_API_KEY for the hosted service; "
        "TWILIO_AUTH_TOKEN to check Twilio's signatures (recommended on a public URL).",
    )
    ph.add_argument(
        "agent",
        help="the agent, as module:attribute (a RealtimeAgent or a "
        "function returning one), e.g. myapp.agents:receptionist",
    )
    ph.add_argument(
        "--url", help="a Realtime endpoint (e.g. a `voxwire serve`) instead of the hosted service"
    )
    ph.add_argument("--model", help="the Realtime model (hosted service)")
    ph.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    ph.add_argument("--port", type=int, default=8080, help="port (0: any free port)")
    ph.add_argument(
        "--public-url",
        help="the https:// URL Twilio reaches this server at (a "
        "tunnel or proxy); default: from the request's Host header",
    )
    ph.add_argument(
        "--config",
        type=Path,
        help="session configuration, a JSON file (turn "
        "detection, voice ...; the audio formats are set to audio/pcmu)",
    )
    ph.add_argument(
        "--chunk-ms",
        type=int,
        default=40,
        help="audio per media message, each followed by a mark: the truncation bound (default 40)",
    )
    ph.set_defaults(func=main)


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


def main(args: argparse.Namespace) -> int:
    """Serve until interrupted (Ctrl-C)."""
    from voxwire.telephony.twilio.bridge import TwilioBridge
    from voxwire.telephony.twilio.serve import PhoneServer

    config = json.loads(args.config.read_text()) if args.config else None
    bridge = TwilioBridge(
        load_agent(args.agent),
        url=args.url,
        model=args.model,
        config=config,
        chunk_ms=args.chunk_ms,
    )
    token = os.environ.get("TWILIO_AUTH_TOKEN") or None
    server = PhoneServer(
        bridge, host=args.host, port=args.port, public_url=args.public_url, auth_token=token
    )

    async def serve() -> None:
        async with server:
            print(
                f"voxwire phone: {args.agent} answers on {server.url()}: voice webhook "
                f"{args.public_url or server.url()}/twiml (POST or GET), media stream "
                f"{server.media_path}; Twilio signatures "
                f"{'checked' if token else 'NOT checked (set TWILIO_AUTH_TOKEN)'}",
                flush=True,
            )
            await server.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
    return 0
