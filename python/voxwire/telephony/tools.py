"""Ready-made function tools for a phone agent: transfer the caller to a human (SIP REFER) and
hang up. They are :class:`voxwire.agents.FunctionTool` values: list them in an agent's
``tools`` and the session runs them like any other.

Which call they act on: the ``call`` given here, else the session's ``context`` — a
:class:`SipCall`, or an object with a ``sip_call`` attribute holding one
(``RealtimeSession(agent, call_id=..., context=SipCall(calls, call_id))``). So one agent,
declared once, serves every call.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from voxwire.agents.tool import FunctionTool, ToolContext, function_tool
from voxwire.exceptions import ConfigurationError
from voxwire.protocol.sip import check_target_uri
from voxwire.telephony.sip import SipCalls

__all__ = ["SipCall", "hangup_tool", "transfer_tool"]


@dataclass(frozen=True)
class SipCall:
    """One call and the client that controls it."""

    calls: SipCalls
    call_id: str


def _call_of(call: SipCall | None, context: Any) -> SipCall:
    if call is not None:
        return call
    found = context if isinstance(context, SipCall) else getattr(context, "sip_call", None)
    if not isinstance(found, SipCall):
        raise ConfigurationError(
            "this phone tool does not know its call: give call=SipCall(calls, call_id) when "
            "making the tool, or RealtimeSession(context=SipCall(calls, call_id))"
        )
    return found


def transfer_tool(
    target_uri: str,
    *,
    name: str = "transfer_to_human",
    description: str = (
        "Transfer the caller to a human agent, when they ask for a person or when you cannot "
        "help. Tell the caller you are transferring them before calling this."
    ),
    call: SipCall | None = None,
    delay_s: float = 0.0,
) -> FunctionTool:
    """A tool that transfers the call to ``target_uri`` (``tel:…`` / ``sip:…``) with SIP
    REFER, ``delay_s`` after the model called it (time for the last words to be heard)."""
    check_target_uri(target_uri)

    async def transfer(ctx: ToolContext[Any]) -> str:
        sip = _call_of(call, ctx.context)
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        await sip.calls.refer(sip.call_id, target_uri)
        return "The call was transferred."

    return function_tool(name=name, description=description)(transfer)


def hangup_tool(
    *,
    name: str = "hang_up",
    description: str = (
        "End the phone call, once the caller's request is done and you have said goodbye."
    ),
    call: SipCall | None = None,
    delay_s: float = 0.0,
) -> FunctionTool:
    """A tool that hangs up, ``delay_s`` after the model called it."""

    async def hang_up(ctx: ToolContext[Any]) -> str:
        sip = _call_of(call, ctx.context)
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        await sip.calls.hangup(sip.call_id)
        return "The call has ended."

    return function_tool(name=name, description=description)(hang_up)
