"""The seam for controlling a phone call the session is attached to (``call_id``): the Realtime
API's SIP calls are transferred and ended over REST, which ``asyncio/`` leaves to the
application's client (``voxwire.telephony.SipCalls``, or any object with these methods)."""

from __future__ import annotations

from typing import Protocol

__all__ = ["CallControl"]


class CallControl(Protocol):
    """Controls a phone call by its id (the Realtime API's SIP calls: REST ``refer`` and
    ``hangup``); :class:`voxwire.telephony.SipCalls` is one."""

    async def refer(self, call_id: str, target_uri: str) -> None: ...

    async def hangup(self, call_id: str) -> None: ...
