"""Phone calls. SIP (the Realtime API's own phone path): :mod:`~voxwire.telephony.webhooks`
(verify the incoming-call webhook; an ASGI app), :mod:`~voxwire.telephony.sip` (accept, reject,
refer, hang up; needs the ``telephony`` extra), :mod:`~voxwire.telephony.live` (the same for
calls answered by GPT-Live), :mod:`~voxwire.telephony.tools` (transfer and
hang-up tools), :mod:`~voxwire.telephony.dtmf` (collect keys),
:mod:`~voxwire.telephony.sip_worker` (N workers on one PostgreSQL store: a call survives the
death of its worker; with :mod:`~voxwire.telephony.calls_table`; needs the ``telephony`` and
``postgres`` extras). Twilio Media Streams:
:mod:`~voxwire.telephony.twilio` (the bridge, ``voxwire phone``, a call simulator for tests).
See docs/telephony.md.

Import from the submodules; the names below are the ones that need no extra.
"""

from voxwire.protocol.sip import LiveCallIncoming, RealtimeCallIncoming, SipHeader, WebhookEvent
from voxwire.telephony.dtmf import DigitCollector, Digits, collect_digits
from voxwire.telephony.webhooks import WebhookApp, verify

__all__ = [
    "DigitCollector",
    "Digits",
    "LiveCallIncoming",
    "RealtimeCallIncoming",
    "SipHeader",
    "WebhookApp",
    "WebhookEvent",
    "collect_digits",
    "verify",
]
