"""Ephemeral keys for a browser that talks to the Realtime service itself.

The application's server holds the API key; a browser gets only a short-lived ``client_secret``
minted for it (``POST /v1/realtime/client_secrets``) with the session it must start with: the
agent's instructions and voice over the application's base configuration, normalised by the same
code as a session's (:func:`voxwire.agents.agent_session_config`).

Tools stay server-side: function tools and hosted MCP servers (whose ``authorization`` and
``headers`` are secrets) are left out of the minted session, so the browser's session has none to
call; an application that wants the model to call tools runs them from its own server (a
``RealtimeSession`` of its own, or a sideband connection to the browser's session).
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from voxwire.agents import RealtimeAgent, agent_session_config, resolve_instructions
from voxwire.asyncio import DEFAULT_MODEL
from voxwire.exceptions import ConfigurationError, ConnectionFailed
from voxwire.protocol import SessionConfig
from voxwire.protocol.limits import read_json

__all__ = ["HOSTED_BASE_URL", "ClientSecret", "client_secret_request", "mint_client_secret"]

HOSTED_BASE_URL: Final = "https://api.openai.com/v1"
_SERVER_SIDE: Final = ("tools", "tool_choice")


@dataclass(frozen=True)
class ClientSecret:
    """A minted key: ``value`` (give it to the browser, nothing else), when it expires (seconds
    since the epoch) and the session it starts with. Its repr hides the value."""

    value: str = field(repr=False)
    expires_at: int
    session: dict[str, Any] = field(repr=False)


async def client_secret_request(
    agent: RealtimeAgent,
    *,
    config: SessionConfig | Mapping[str, Any] | None = None,
    model: str = DEFAULT_MODEL,
    expires_after_s: int = 600,
) -> dict[str, Any]:
    """The body of ``POST /v1/realtime/client_secrets`` for ``agent`` (its instructions, awaited
    if dynamic, and voice over ``config``), tools left out (module docstring)."""
    if isinstance(expires_after_s, bool) or not isinstance(expires_after_s, int):
        raise ConfigurationError(f"expires_after_s={expires_after_s!r}: expected whole seconds")
    if not 10 <= expires_after_s <= 7200:
        raise ConfigurationError(
            f"expires_after_s={expires_after_s}: the service accepts 10 ..= 7200 seconds"
        )
    instructions = await resolve_instructions(agent)
    session = agent_session_config(config, agent, instructions=instructions).to_wire()
    for name in _SERVER_SIDE:
        session.pop(name, None)
    session.update({"type": "realtime", "model": model})
    return {
        "expires_after": {"anchor": "created_at", "seconds": expires_after_s},
        "session": session,
    }


async def mint_client_secret(
    agent: RealtimeAgent,
    *,
    api_key: str,
    config: SessionConfig | Mapping[str, Any] | None = None,
    model: str = DEFAULT_MODEL,
    expires_after_s: int = 600,
    base_url: str = HOSTED_BASE_URL,
    timeout_s: float = 10.0,
) -> ClientSecret:
    """Mint a key for a browser from the application's server (``api_key`` is sent to
    ``base_url`` only). ``base_url``: the hosted service, or a local server's
    (``ClientSecrets.base_url``). Raises :class:`~voxwire.exceptions.ConnectionFailed` saying
    what the service answered when it refuses."""
    if not isinstance(api_key, str) or not api_key:
        raise ConfigurationError("api_key is required: the application's key (never a browser's)")
    if not base_url.startswith(("https://", "http://")):
        raise ConfigurationError(f"base_url={base_url!r}: expected an http(s) URL ending in /v1")
    body = await client_secret_request(
        agent, config=config, model=model, expires_after_s=expires_after_s
    )
    url = base_url.rstrip("/") + "/realtime/client_secrets"
    status, answer = await asyncio.to_thread(_post, url, api_key, body, timeout_s)
    value = answer.get("value")
    if status != 200 or not isinstance(value, str):
        error = answer.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        raise ConnectionFailed(f"POST {url} answered {status}: {message or str(answer)[:300]}")
    expires_at = answer.get("expires_at")
    session = answer.get("session")
    return ClientSecret(
        value,
        expires_at if isinstance(expires_at, int) else 0,
        session if isinstance(session, dict) else {},
    )


def _post(
    url: str, api_key: str, body: Mapping[str, Any], timeout_s: float
) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (urllib.error.URLError, OSError) as exc:
        raise ConnectionFailed(f"POST {url} failed: {exc}") from None
    answer, problem = read_json(raw)  # bounded: an answer nested thousands deep is refused
    if problem is not None:
        answer = {"error": {"message": raw[:300].decode("utf-8", "replace")}}
    return status, answer if isinstance(answer, dict) else {"answer": answer}
