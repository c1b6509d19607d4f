"""Twilio Media Streams: a bridge from a bidirectional stream (``<Connect><Stream>``) to a
:class:`~voxwire.asyncio.RealtimeSession` per call, truncating at what the caller heard
(docs/telephony.md).

* :class:`TwilioBridge` — runs an agent on each stream (:meth:`TwilioBridge.handle`)
* :class:`PhoneServer` — the voice webhook (TwiML) and the media stream on one port
  (``voxwire phone``)
* :class:`TwilioStream` — the sans-I/O core of one stream (messages in, events out, marks)
* :class:`TwilioCallSimulator` — Twilio's side of a call for tests (also in
  :mod:`voxwire.testing`)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from voxwire.telephony.twilio.bridge import CallInfo, CallReport, TwilioBridge, phone_config
    from voxwire.telephony.twilio.serve import PhoneServer, twilio_signature
    from voxwire.telephony.twilio.simulator import LineClear, TwilioCallSimulator
    from voxwire.telephony.twilio.stream import Played, StreamState, TwilioStream

# Imported when first used: ``voxwire phone --help`` (and every other command) need not load
# the session.
_MODULES = {
    "CallInfo": "voxwire.telephony.twilio.bridge",
    "CallReport": "voxwire.telephony.twilio.bridge",
    "LineClear": "voxwire.telephony.twilio.simulator",
    "PhoneServer": "voxwire.telephony.twilio.serve",
    "Played": "voxwire.telephony.twilio.stream",
    "StreamState": "voxwire.telephony.twilio.stream",
    "TwilioBridge": "voxwire.telephony.twilio.bridge",
    "TwilioCallSimulator": "voxwire.telephony.twilio.simulator",
    "TwilioStream": "voxwire.telephony.twilio.stream",
    "phone_config": "voxwire.telephony.twilio.bridge",
    "twilio_signature": "voxwire.telephony.twilio.serve",
}

__all__ = [
    "CallInfo",
    "CallReport",
    "LineClear",
    "PhoneServer",
    "Played",
    "StreamState",
    "TwilioBridge",
    "TwilioCallSimulator",
    "TwilioStream",
    "phone_config",
    "twilio_signature",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
