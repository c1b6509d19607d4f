"""A phone agent on Twilio: a shop's line with a tool, and a key menu ("press 1").

Against the hosted service (``OPENAI_API_KEY``), or any Realtime endpoint with ``--url``; offline
with the local server and this example's scenario::

    python examples/phone_agent.py --port 8080 --public-url https://phone.example.com

    voxwire serve --scenario examples/scenarios/phone.json &
    python examples/phone_agent.py --url ws://127.0.0.1:8765/v1/realtime --port 8080

Point the Twilio number's voice webhook ("A call comes in") at ``PUBLIC_URL/twiml`` (a tunnel or
a reverse proxy to the port); set ``TWILIO_AUTH_TOKEN`` so that only Twilio's signed requests
start calls. ``voxwire phone examples.phone_agent:agent --greet`` serves the same agent without
the key menu. What it shows: a ``RealtimeAgent`` with a tool answering calls through
``TwilioBridge`` / ``PhoneServer`` (one session per call, µ-law passed through, the agent cut at
what the caller heard on a barge-in), the agent greeting the caller first (``greeting=True``),
DTMF turned into a message to the agent, and the report of each call, printed as one line when
it ends. docs/telephony.md explains the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os

from voxwire.agents import RealtimeAgent, function_tool
from voxwire.asyncio import RealtimeSession
from voxwire.telephony.twilio import CallInfo, PhoneServer, TwilioBridge


@function_tool
def opening_hours(day: str) -> str:
    """When the shop is open.

    Args:
        day: the day the caller asks about ("today", "saturday" ...).
    """
    return "from nine to six" if day.lower() not in ("saturday", "sunday") else "closed"


agent = RealtimeAgent(
    name="Shop",
    instructions="You answer the phone for a small shop. Be brief: this is a phone call. Greet "
    "the caller and offer the key menu (press 1 for opening hours); look hours up with "
    "opening_hours.",
    tools=[opening_hours],
)

CONFIG = {"audio": {"input": {"turn_detection": {"type": "server_vad"}}}}
MENU = {"1": "What are your opening hours today?"}


async def on_dtmf(call: CallInfo, session: RealtimeSession, digit: str) -> None:
    """A key: the menu's question goes to the agent as if the caller had asked it."""
    if digit in MENU:
        await session.send_message(MENU[digit])


async def serve(args: argparse.Namespace) -> None:
    # greeting=True: the agent speaks first, as its instructions say ("Greet the caller ...");
    # without it, it would wait for the caller to speak.
    bridge = TwilioBridge(agent, url=args.url, config=CONFIG, on_dtmf=on_dtmf, greeting=True)
    token = os.environ.get("TWILIO_AUTH_TOKEN") or None
    server = PhoneServer(
        bridge,
        port=args.port,
        public_url=args.public_url,
        auth_token=token,
        on_call_ended=lambda report: print(report.summary(), flush=True),
    )
    async with server:
        print(f"answering on {server.url()} (webhook /twiml, media stream /media)", flush=True)
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description="a shop's phone line on Twilio")
    parser.add_argument("--url", help="a Realtime endpoint instead of the hosted service")
    parser.add_argument("--port", type=int, default=8080, help="0: a free port")
    parser.add_argument("--public-url", help="the https:// URL Twilio reaches this server at")
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C stops it
        asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
