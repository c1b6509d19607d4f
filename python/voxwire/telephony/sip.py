"""Call control for SIP calls: accept, reject, refer (transfer) and hang up, over REST.

``POST /v1/realtime/calls/{call_id}/accept|reject|refer|hangup`` (the Realtime SIP guide and the
API reference): ``accept`` takes the session configuration — built here from an agent exactly as
the session builds its first ``session.update`` (:func:`voxwire.agents.agent_session_config`
over the resolved agent: instructions, voice, tools; turn detection and the rest from
``config``) — ``reject`` an optional SIP status code (default 603), ``refer`` a ``target_uri``
(``tel:`` or ``sip:``), ``hangup`` nothing. Success is an empty ``200``; anything else raises
:class:`~voxwire.exceptions.CallControlError` with the service's error message.

The requests go through httpx (the ``telephony`` extra): a maintained async HTTP client with
connection pooling, timeouts and TLS verification — four small JSON POSTs do not justify the
whole ``openai`` package, and the session's websocket library speaks no plain HTTP.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import TracebackType
from typing import Any, ClassVar, Final, TypeVar

try:
    import httpx
except ImportError as exc:  # pragma: no cover - the optional extra is missing
    raise ImportError(
        "voxwire.telephony.sip needs httpx: pip install 'voxwire[telephony]'"
    ) from exc

from voxwire.agents.agent import RealtimeAgent, agent_session_config, resolve_agent
from voxwire.exceptions import CallControlError, ConfigurationError
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.limits import read_json
from voxwire.protocol.sip import accept_body, refer_body, reject_body

__all__ = ["DEFAULT_API_BASE_URL", "CallControl", "SipCalls"]

DEFAULT_API_BASE_URL: Final = "https://api.openai.com/v1"
_Control = TypeVar("_Control", bound="CallControl")


class CallControl:
    """What every call-control client shares: the HTTP client, the key, the POST to
    ``{base_url}/{calls_path}/{id}/{action}`` and its errors, ``reject``, ``refer``, ``hangup``.
    :class:`SipCalls` (Realtime) and :class:`voxwire.telephony.live.LiveCalls` (GPT-Live) add
    their ``accept``."""

    calls_path: ClassVar[str] = "realtime/calls"
    id_source: ClassVar[str] = "the data.call_id of the realtime.call.incoming webhook"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_API_BASE_URL,
        http_client: httpx.AsyncClient | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"base_url={base_url!r} is invalid: expected an http(s) URL such as "
                f"{DEFAULT_API_BASE_URL!r}"
            )
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._base_url = base_url.rstrip("/")
        self._own = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=timeout_s)

    def __repr__(self) -> str:  # the key never shows
        return f"{type(self).__name__}(base_url={self._base_url!r})"

    async def reject(self, call_id: str, status_code: int | None = None) -> None:
        """Decline the call with a SIP status code (default 603 Decline; 486 Busy Here…)."""
        await self._post(call_id, "reject", reject_body(status_code))

    async def refer(self, call_id: str, target_uri: str) -> None:
        """Transfer the call (SIP REFER) to ``target_uri``: ``tel:+1…`` or ``sip:…@…``."""
        await self._post(call_id, "refer", refer_body(target_uri))

    async def hangup(self, call_id: str) -> None:
        """End the call."""
        await self._post(call_id, "hangup", None)

    async def _post(self, call_id: str, action: str, body: dict[str, Any] | None) -> None:
        if not isinstance(call_id, str) or not call_id or "/" in call_id:
            raise ConfigurationError(f"call_id={call_id!r} is invalid: expected {self.id_source}")
        url = f"{self._base_url}/{self.calls_path}/{call_id}/{action}"
        try:
            response = await self._http.post(url, json=body, headers=self._headers)
        except httpx.HTTPError as exc:
            raise CallControlError(f"{action} of call {call_id} failed: {exc!r}") from exc
        if response.is_success:
            return
        code, message = _error_of(response)
        raise CallControlError(
            f"{action} of call {call_id} failed: HTTP {response.status_code}"
            + (f" {code}" if code else "")
            + f": {message}",
            status=response.status_code,
            code=code,
        )

    async def aclose(self) -> None:
        if self._own:
            await self._http.aclose()

    async def __aenter__(self: _Control) -> _Control:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class SipCalls(CallControl):
    """The call-control client of Realtime SIP calls. ``api_key`` defaults to
    ``OPENAI_API_KEY`` (none is sent when neither is set: a local server without a token);
    ``base_url`` to the hosted API (a local server's trunk: ``trunk.api_base_url``);
    ``http_client``: your own ``httpx.AsyncClient`` (then yours to close). Use ``async with``
    or :meth:`aclose`."""

    async def accept(
        self,
        call_id: str,
        agent: RealtimeAgent | None = None,
        *,
        config: SessionConfig | Mapping[str, Any] | None = None,
        model: str | None = None,
    ) -> dict[str, Any]:
        """Accept the call with ``agent``'s configuration over ``config``; returns the body
        sent (the session configuration)."""
        resolved = await resolve_agent(agent) if agent is not None else None
        body = accept_body(agent_session_config(config, resolved), model=model)
        await self._post(call_id, "accept", body)
        return body


def _error_of(response: httpx.Response) -> tuple[str | None, str]:
    body, _ = read_json(response.content)  # bounded: never RecursionError on a deep answer
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = error.get("code")
        return (code if isinstance(code, str) else None), str(error.get("message", ""))[:500]
    return None, response.text[:500] or response.reason_phrase
