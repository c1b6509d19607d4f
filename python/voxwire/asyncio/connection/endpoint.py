"""Where a session connects and with which credentials.

* The URL: ``url`` as given (default: the hosted service), with ``model=`` or ``call_id=``
  (SIP: attach to a call accepted elsewhere) added to its query. A model and a call id together
  are an error: a call already has its model.
* The key: a string, or a function returning one (sync or async, called at each connect — for
  short-lived tokens); else ``OPENAI_API_KEY``. The hosted service needs one; any other URL may
  go without (the local server, or Azure-style ``api-key`` headers given in ``headers``).

The key is held by :class:`ApiKey`, whose repr never shows it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, TypeAlias
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from voxwire.exceptions import ConfigurationError

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_URL",
    "ApiKey",
    "ApiKeySource",
    "build_headers",
    "build_url",
    "is_hosted",
    "resolve_api_key",
]

DEFAULT_URL: Final = "wss://api.openai.com/v1/realtime"
DEFAULT_MODEL: Final = "gpt-realtime"
_HOSTED: Final = "api.openai.com"

#: A key, or a function returning one (called at each connect; may be a coroutine function).
ApiKeySource: TypeAlias = "str | Callable[[], str | Awaitable[str]]"


class ApiKey:
    """A secret that does not show itself: ``repr`` and ``str`` say ``[redacted]``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "ApiKey([redacted])"

    __str__ = __repr__


def build_url(url: str | None, *, model: str | None, call_id: str | None) -> str:
    """The URL to open: ``url`` (default: the hosted service) with ``model`` or ``call_id`` set
    in its query (replacing one already there). The hosted service gets the default model when
    neither is given."""
    if model is not None and call_id is not None:
        raise ConfigurationError(
            "model and call_id are exclusive: a call id attaches to a call that already has its "
            "model; give one or the other"
        )
    for name, value in (("model", model), ("call_id", call_id)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigurationError(f"{name}={value!r} is invalid: expected non-empty text")
    if url is not None and not isinstance(url, str):
        raise ConfigurationError(
            f"url={url!r} is invalid: expected the endpoint as text, e.g. "
            "'wss://api.openai.com/v1/realtime' (a local server's is server.url())"
        )
    base = url if url is not None else DEFAULT_URL
    parts = urlsplit(base)
    if parts.scheme not in ("ws", "wss"):
        raise ConfigurationError(
            f"url={base!r} is invalid: expected a ws:// or wss:// URL such as {DEFAULT_URL!r}"
        )
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("model", "call_id")]
    existing = dict(parse_qsl(parts.query))
    if call_id is not None:
        query.append(("call_id", call_id))
    elif model is not None:
        query.append(("model", model))
    elif "call_id" in existing:
        query.append(("call_id", existing["call_id"]))
    elif "model" in existing:
        query.append(("model", existing["model"]))
    elif url is None:
        query.append(("model", DEFAULT_MODEL))
    return urlunsplit(parts._replace(query=urlencode(query)))


def is_hosted(url: str) -> bool:
    """The URL is the hosted OpenAI service (which refuses connections without a key)."""
    return urlsplit(url).hostname == _HOSTED


async def resolve_api_key(source: ApiKeySource | None, *, required: bool) -> ApiKey | None:
    """The key to send: ``source`` (called and awaited if it is a function), else
    ``OPENAI_API_KEY``; ``None`` when there is none and none is ``required``."""
    if source is None:
        value: object = os.environ.get("OPENAI_API_KEY") or None
    elif isinstance(source, str):
        value = source
    else:
        value = source()
        if inspect.isawaitable(value):
            value = await value
        if not isinstance(value, str):
            raise ConfigurationError(
                f"the api_key function returned a {type(value).__name__}: expected the key as text"
            )
    if value is None or value == "":
        if required:
            raise ConfigurationError(
                "no API key: pass api_key=... or set OPENAI_API_KEY (the hosted service refuses "
                "connections without one)"
            )
        return None
    assert isinstance(value, str)
    return ApiKey(value)


def build_headers(key: ApiKey | None, extra: Mapping[str, str]) -> dict[str, str]:
    """``Authorization: Bearer <key>`` (unless ``extra`` sets its own) and ``extra``."""
    headers: dict[str, str] = {}
    if key is not None and not any(name.lower() == "authorization" for name in extra):
        headers["Authorization"] = f"Bearer {key.reveal()}"
    headers.update(extra)
    return headers
