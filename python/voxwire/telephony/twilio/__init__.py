"""Twilio Media Streams: a bridge from a bidirectional stream (``<Connect><Stream>``) to a
:class:`~voxwire.asyncio.RealtimeSession` per call, truncating at what the caller heard
(docs/telephony-twilio.md).

* :class:`TwilioBridge` — runs an agent on each stream (:meth:`TwilioBridge.handle`)
* :class:`PhoneServer` — the voice webhook (TwiML) and the media stream on one port
  (``voxwire phone``)
* :class:`TwilioStream` — the sans-I/O core of one stream (messages in, events out, marks)
* :class:`TwilioCallSimulator` — Twilio's side of a call for tests (also in
  :mod:`voxwire.testing`)
"""

from voxwire.telephony.twilio.bridge import CallInfo, CallReport, TwilioBridge, phone_config
from voxwire.telephony.twilio.serve import PhoneServer, twilio_signature
from voxwire.telephony.twilio.simulator import LineClear, TwilioCallSimulator
from voxwire.telephony.twilio.stream import Played, StreamState, TwilioStream

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
