"""SIP calls of the Realtime API as data: the signed ``realtime.call.incoming`` webhook and the
bodies of the call-control requests (``/v1/realtime/calls/{call_id}/accept|reject|refer|hangup``);
GPT-Live's incoming call too (``live.transport.incoming``, and the deprecated
``live.call.incoming`` that existing integrations may still get: the GPT-Live SIP guide).

Sans I/O like the rest of ``protocol/``: the clock comes in as ``now_s``. The client
(:mod:`voxwire.telephony`) and the local server's SIP emulation (:mod:`voxwire.server.sip`) both
use it, so that what one signs the other verifies with one piece of code.

Signatures follow the Standard Webhooks specification (standardwebhooks.com), which OpenAI's
webhooks use (the OpenAI webhooks guide):

* three headers: ``webhook-id`` (the delivery's id, stable across retries), ``webhook-timestamp``
  (integer Unix seconds of the attempt) and ``webhook-signature``;
* the secret is ``whsec_`` followed by the base64 of the key bytes;
* the signed content is ``{webhook-id}.{webhook-timestamp}.{body}`` over the raw body bytes;
* the signature is the base64 HMAC-SHA256 of that content, sent as ``v1,<signature>``; the header
  may list several, separated by spaces (a secret being rotated), and one match is enough;
  entries of other versions are ignored;
* a timestamp further than the tolerance (5 minutes) from now, either way, is refused: a replay.

Signatures are compared in constant time. Everything read from a request is bounded.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec
from msgspec import Struct

from voxwire.exceptions import ConfigurationError, WebhookError
from voxwire.protocol.config import SessionConfig
from voxwire.protocol.limits import read_json

__all__ = [
    "DEFAULT_REJECT_STATUS",
    "LIVE_CALL_EVENTS",
    "WEBHOOK_TOLERANCE_S",
    "CallIncomingData",
    "LiveCallIncoming",
    "LiveCallIncomingData",
    "RealtimeCallIncoming",
    "SipHeader",
    "WebhookEvent",
    "accept_body",
    "check_status_code",
    "check_target_uri",
    "parse_webhook_event",
    "refer_body",
    "reject_body",
    "sign_webhook",
    "verify_webhook",
    "webhook_key",
]

#: Standard Webhooks: timestamps further than this from now (either way) are refused.
WEBHOOK_TOLERANCE_S: Final = 300
#: The reject endpoint's default when ``status_code`` is omitted (the API reference: 603 Decline).
DEFAULT_REJECT_STATUS: Final = 603
SECRET_PREFIX: Final = "whsec_"
MAX_WEBHOOK_BYTES: Final = 1024 * 1024
_MAX_HEADER_CHARS: Final = 8192
#: The webhook types announcing a SIP call to GPT-Live (the second one deprecated, no data.type).
LIVE_CALL_EVENTS: Final = ("live.transport.incoming", "live.call.incoming")
_URI: Final = re.compile(r"^(?:tel:\+?[0-9*#().\-]{1,64}(?:;[!-~]*)?|sips?:[!-~]{1,1000})$")

Headers = Mapping[str, str] | Iterable[tuple[str | bytes, str | bytes]]
"""Request headers: a mapping (any case), or (name, value) pairs as ASGI gives them (bytes)."""


class SipHeader(Struct, frozen=True, kw_only=True):
    """A header of the SIP INVITE (the service keeps names, order and repeats; untrusted)."""

    name: str
    value: str


class CallIncomingData(Struct, frozen=True, kw_only=True):
    call_id: str
    sip_headers: list[SipHeader]
    sip_media_security: str | None = None


class RealtimeCallIncoming(
    Struct, tag="realtime.call.incoming", tag_field="type", frozen=True, kw_only=True
):
    """``realtime.call.incoming``: a SIP call is waiting to be accepted or rejected by
    ``data.call_id``. ``webhook_id`` is the delivery's ``webhook-id`` (retries repeat it:
    use it to answer each call once)."""

    id: str
    created_at: int
    data: CallIncomingData
    object: str | None = "event"
    webhook_id: str = ""

    @property
    def call_id(self) -> str:
        return self.data.call_id

    def sip_header(self, name: str) -> str | None:
        """The first SIP header called ``name`` (any case), or ``None``."""
        return _first_header(self.data.sip_headers, name)


class LiveCallIncomingData(Struct, frozen=True, kw_only=True):
    session_id: str
    sip_headers: list[SipHeader]
    type: str | None = None  # "sip" (absent from the deprecated live.call.incoming)
    sip_media_security: str | None = None  # "srtp", "rtp" or omitted (unknown)


class LiveCallIncoming(Struct, frozen=True, kw_only=True):
    """``live.transport.incoming``: a SIP call for GPT-Live, waiting to be accepted or rejected
    by ``data.session_id`` (used as is for every Live call action: accept, the sideband, refer,
    hangup). ``webhook_id``: as :class:`RealtimeCallIncoming`'s."""

    id: str
    type: str
    created_at: int
    data: LiveCallIncomingData
    object: str | None = "event"
    webhook_id: str = ""

    @property
    def session_id(self) -> str:
        return self.data.session_id

    @property
    def call_id(self) -> str:
        """The session id (the name :class:`RealtimeCallIncoming` gives the call's id)."""
        return self.data.session_id

    def sip_header(self, name: str) -> str | None:
        """The first SIP header called ``name`` (any case), or ``None`` (untrusted)."""
        return _first_header(self.data.sip_headers, name)


def _first_header(headers: list[SipHeader], name: str) -> str | None:
    wanted = name.lower()
    return next((h.value for h in headers if h.name.lower() == wanted), None)


class WebhookEvent(Struct, frozen=True, kw_only=True):
    """A verified webhook of another type (a response or batch event…), its ``data`` as sent."""

    id: str
    type: str
    created_at: int
    data: dict[str, Any]
    object: str | None = "event"
    webhook_id: str = ""


# --- secrets and signatures --------------------------------------------------------------------


def webhook_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_…`` secret (raises :class:`ConfigurationError` for anything
    else: the secret is the application's own setting, not received data)."""
    if not isinstance(secret, str) or not secret.startswith(SECRET_PREFIX):
        raise ConfigurationError(
            "the webhook secret is invalid: expected the 'whsec_…' value shown when the "
            "webhook was created (platform settings > Project > Webhooks)"
        )
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except binascii.Error:
        key = b""
    if not key:
        raise ConfigurationError(
            "the webhook secret is invalid: the part after 'whsec_' must be base64; copy the "
            "whole secret again"
        )
    return key


def _signature(key: bytes, webhook_id: str, timestamp: str, body: bytes) -> bytes:
    # surrogatepass: a header given as a str with a lone surrogate cannot match, never raises.
    content = b"%s.%s.%s" % (
        webhook_id.encode("utf-8", "surrogatepass"),
        timestamp.encode("utf-8", "surrogatepass"),
        body,
    )
    return hmac.new(key, content, hashlib.sha256).digest()


def sign_webhook(body: bytes, *, secret: str, webhook_id: str, timestamp_s: int) -> dict[str, str]:
    """The three Standard Webhooks headers for ``body`` (what a sender adds)."""
    signature = _signature(webhook_key(secret), webhook_id, str(int(timestamp_s)), body)
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(int(timestamp_s)),
        "webhook-signature": "v1," + base64.b64encode(signature).decode(),
    }


def _header(headers: Headers, name: str) -> str | None:
    pairs: Iterable[tuple[str | bytes, str | bytes]] = (
        headers.items() if isinstance(headers, Mapping) else headers
    )
    found: list[str] = []
    for key, value in pairs:
        key_text = key.decode("latin-1") if isinstance(key, bytes) else str(key)
        if key_text.lower() == name:
            found.append(value.decode("latin-1") if isinstance(value, bytes) else str(value))
    return " ".join(found) if found else None


def verify_webhook(
    headers: Headers,
    body: bytes | str,
    secret: str,
    *,
    now_s: float,
    tolerance_s: float = WEBHOOK_TOLERANCE_S,
) -> RealtimeCallIncoming | LiveCallIncoming | WebhookEvent:
    """Check a webhook request's signature and timestamp, then parse its body. Raises
    :class:`~voxwire.exceptions.WebhookError` (``reason`` and a message saying what to check)
    for a missing header, a forged or stale request, or a body that is not an event."""
    key = webhook_key(secret)
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body)
    webhook_id = _required(headers, "webhook-id")
    timestamp = _required(headers, "webhook-timestamp")
    offered = _required(headers, "webhook-signature")
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        raise WebhookError(
            "bad_timestamp",
            f"webhook-timestamp {timestamp[:40]!r} is not Unix seconds: refuse the request",
        )
    age_s = now_s - int(timestamp)
    if abs(age_s) > tolerance_s:
        when = "old" if age_s > 0 else "in the future"
        raise WebhookError(
            "stale",
            f"webhook-timestamp is {abs(age_s):.0f} s {when} (tolerance {tolerance_s:g} s): a "
            "replayed or delayed request, or this machine's clock is wrong (check NTP)",
        )
    expected = _signature(key, webhook_id, timestamp, raw)
    if not any(hmac.compare_digest(expected, sig) for sig in _v1_signatures(offered)):
        raise WebhookError(
            "bad_signature",
            "webhook-signature does not match this secret: a forged request, a body changed "
            "on the way (verify the raw bytes, before any JSON parsing), or the wrong secret",
        )
    return parse_webhook_event(raw, webhook_id=webhook_id)


def _required(headers: Headers, name: str) -> str:
    value = _header(headers, name)
    if value is None or not value.strip():
        raise WebhookError(
            "missing_header",
            f"the request has no {name} header: not a Standard Webhooks delivery (is this "
            "endpoint the one registered for the webhook?)",
        )
    if len(value) > _MAX_HEADER_CHARS:
        raise WebhookError("malformed", f"the {name} header is longer than {_MAX_HEADER_CHARS}")
    return value.strip()


def _v1_signatures(header: str) -> list[bytes]:
    found = []
    for entry in header.split():
        version, _, value = entry.partition(",")
        if version != "v1":
            continue
        try:
            found.append(base64.b64decode(value, validate=True))
        except ValueError:  # binascii.Error, or text that is not ASCII
            continue
    return found


def parse_webhook_event(
    body: bytes | str, *, webhook_id: str = ""
) -> RealtimeCallIncoming | LiveCallIncoming | WebhookEvent:
    """The event in a (verified) webhook body; raises :class:`WebhookError` (``malformed``)
    if it is not one."""
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if len(raw) > MAX_WEBHOOK_BYTES:
        raise WebhookError("malformed", f"the webhook body is over {MAX_WEBHOOK_BYTES} bytes")
    data, problem = read_json(raw)  # bounded: never a RecursionError or UnicodeDecodeError
    if problem is not None:
        raise WebhookError("malformed", f"the webhook body is not JSON: {problem}")
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise WebhookError("malformed", "the webhook body is not an event object with a 'type'")
    data["webhook_id"] = webhook_id
    target: type[RealtimeCallIncoming | LiveCallIncoming | WebhookEvent] = WebhookEvent
    if data["type"] == "realtime.call.incoming":
        target = RealtimeCallIncoming
    elif data["type"] in LIVE_CALL_EVENTS:
        target = LiveCallIncoming
    try:
        return msgspec.convert(data, target)
    except msgspec.ValidationError as exc:
        raise WebhookError("malformed", f"the {data['type']} event is malformed: {exc}") from None


# --- call control bodies -----------------------------------------------------------------------


def check_status_code(status_code: object) -> int:
    """A SIP final response code for a rejected call: an integer from 400 to 699."""
    if isinstance(status_code, bool) or not isinstance(status_code, int):
        raise ConfigurationError(
            f"status_code={status_code!r} is invalid: expected a SIP response code such as 486 "
            "(Busy Here) or 603 (Decline)"
        )
    if not 400 <= status_code <= 699:
        raise ConfigurationError(
            f"status_code={status_code} is invalid: a rejection is a SIP final failure code, "
            "400 to 699 (486 Busy Here, 603 Decline)"
        )
    return status_code


def check_target_uri(target_uri: object) -> str:
    """A transfer target for SIP REFER: a ``tel:`` or ``sip:``/``sips:`` URI."""
    if not isinstance(target_uri, str) or not _URI.match(target_uri):
        raise ConfigurationError(
            f"target_uri={target_uri!r} is invalid: expected a 'tel:+14155550123' or "
            "'sip:agent@example.com' URI (the SIP Refer-To header)"
        )
    return target_uri


def accept_body(config: SessionConfig, *, model: str | None = None) -> dict[str, Any]:
    """The JSON body of ``accept``: the session object (``type: realtime`` and the settings),
    as ``session.update`` carries it."""
    body = config.to_wire()
    body["type"] = "realtime"
    if model is not None:
        body["model"] = model
    return body


def reject_body(status_code: int | None) -> dict[str, Any]:
    return {} if status_code is None else {"status_code": check_status_code(status_code)}


def refer_body(target_uri: str) -> dict[str, Any]:
    return {"target_uri": check_target_uri(target_uri)}
