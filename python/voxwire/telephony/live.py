"""Call control for SIP calls answered by GPT-Live: accept, reject, refer and hang up over REST.

``POST /v1/live/sessions/{session_id}/accept|reject|refer|hangup`` (the GPT-Live SIP guide;
``openai.resources.live.sessions``), by the ``data.session_id`` of the
``live.transport.incoming`` webhook (:class:`~voxwire.protocol.sip.LiveCallIncoming`).
``accept`` takes ``{"session": {"type": "live", ...}}``: built here from an agent exactly as
:class:`~voxwire.asyncio.live.LiveSession` builds its ``session.start``
(:func:`voxwire.asyncio.live.config.start_config`: instructions, voice, the function tools
declared to the Responses backend, or client delegation) — SIP negotiates the media format, so
no ``audio.format``. ``reject`` sends its ``status_code`` (required by the Live reference;
default 603 Decline). The HTTP client, the errors, ``refer`` and ``hangup`` are
:class:`~voxwire.telephony.sip.CallControl`'s, shared with :class:`~voxwire.telephony.sip.SipCalls`.

Once accepted, attach the agent to the call with
:meth:`LiveSession.attach(session_id, agent, ...) <voxwire.asyncio.live.LiveSession.attach>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from voxwire.agents.agent import RealtimeAgent, resolve_agent
from voxwire.asyncio.live.config import DelegationMode, start_config
from voxwire.exceptions import ConfigurationError
from voxwire.protocol.sip import DEFAULT_REJECT_STATUS, reject_body
from voxwire.telephony.sip import CallControl

__all__ = ["LiveCalls", "live_accept_session"]


async def live_accept_session(
    agent: RealtimeAgent,
    *,
    model: str = "gpt-live-1",
    delegation: DelegationMode = "responses",
    backend_model: str = "gpt-5.5",
    backend_instructions: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``session`` of an accept for ``agent`` (``type: "live"`` and ``session.start``'s
    configuration); ``extra``: more fields (``store``, ``safety_identifier``, ``triggers``…)."""
    resolved = await resolve_agent(agent)
    session = start_config(
        resolved,
        model=model,
        delegation=delegation,
        backend_model=backend_model,
        backend_instructions=backend_instructions,
    )
    for key, value in (extra or {}).items():
        if key in ("type", "model", "audio") or key in session:
            raise ConfigurationError(
                f"extra={{{key!r}: ...}} is invalid: {key} comes from the agent and the options "
                "(SIP negotiates the media format)"
            )
        session[key] = value
    return {"type": "live", **session}


class LiveCalls(CallControl):
    """The call-control client of GPT-Live SIP calls (same options as
    :class:`~voxwire.telephony.sip.SipCalls`)."""

    calls_path: ClassVar[str] = "live/sessions"
    id_source: ClassVar[str] = "the data.session_id of the live.transport.incoming webhook"

    async def accept(
        self,
        session_id: str,
        agent: RealtimeAgent,
        *,
        model: str = "gpt-live-1",
        delegation: DelegationMode = "responses",
        backend_model: str = "gpt-5.5",
        backend_instructions: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Accept the call as a Live session for ``agent``; returns the ``session`` sent (give
        it to :meth:`LiveSession.attach` unchanged, or let it rebuild the same)."""
        session = await live_accept_session(
            agent,
            model=model,
            delegation=delegation,
            backend_model=backend_model,
            backend_instructions=backend_instructions,
            extra=extra,
        )
        await self._post(session_id, "accept", {"session": session})
        return session

    async def reject(self, call_id: str, status_code: int | None = None) -> None:
        """Decline the call with a SIP status code (default 603 Decline; always sent: the Live
        endpoint requires it)."""
        code = DEFAULT_REJECT_STATUS if status_code is None else status_code
        await self._post(call_id, "reject", reject_body(code))
