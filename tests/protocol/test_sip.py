"""protocol/sip.py: call-control bodies and the signing primitives (the webhook verifier's
behaviour is tested against the official client in tests/telephony/test_webhooks.py)."""

from __future__ import annotations

import pytest

from voxwire.exceptions import ConfigurationError, WebhookError
from voxwire.protocol import SessionConfig
from voxwire.protocol.sip import (
    MAX_WEBHOOK_BYTES,
    LiveCallIncoming,
    RealtimeCallIncoming,
    accept_body,
    check_status_code,
    check_target_uri,
    parse_webhook_event,
    refer_body,
    reject_body,
    sign_webhook,
    verify_webhook,
    webhook_key,
)

SECRET = "whsec_c2VjcmV0LWtleS1mb3ItdGVzdHM="


@pytest.mark.parametrize(
    "uri", ["tel:+14155550123", "tel:911", "sip:agent@example.com", "sips:a@b;transport=tls"]
)
def test_transfer_targets(uri: str) -> None:
    assert refer_body(uri) == {"target_uri": uri}


@pytest.mark.parametrize("uri", ["", "mailto:a@b", "tel:", "sip:", "tel:+1 555", 5, None])
def test_bad_transfer_targets(uri: object) -> None:
    with pytest.raises(ConfigurationError, match="target_uri"):
        check_target_uri(uri)


def test_reject_bodies() -> None:
    assert reject_body(None) == {}
    assert reject_body(486) == {"status_code": 486}
    for bad in (200, 399, 700, True, "486", 486.0):
        with pytest.raises(ConfigurationError, match="status_code"):
            check_status_code(bad)


def test_accept_body_is_the_session_object() -> None:
    config = SessionConfig.from_mapping({"instructions": "Hi", "voice": "marin"})
    body = accept_body(config, model="gpt-realtime")
    assert body == {
        "type": "realtime",
        "model": "gpt-realtime",
        "instructions": "Hi",
        "audio": {"output": {"voice": "marin"}},
    }
    assert "model" not in accept_body(config)


def test_signing_is_deterministic_and_headers_may_repeat() -> None:
    headers = sign_webhook(b"{}", secret=SECRET, webhook_id="wh", timestamp_s=10)
    assert headers == sign_webhook(b"{}", secret=SECRET, webhook_id="wh", timestamp_s=10)
    body = b'{"type": "x", "id": "e", "created_at": 1, "data": {}}'
    good = sign_webhook(body, secret=SECRET, webhook_id="wh", timestamp_s=10)
    pairs = [(k, v) for k, v in good.items() if k != "webhook-signature"]
    pairs += [("webhook-signature", "v1,AAAA"), ("Webhook-Signature", good["webhook-signature"])]
    assert verify_webhook(pairs, body, SECRET, now_s=10).type == "x"


def test_oversized_headers_and_bodies_are_refused() -> None:
    headers = sign_webhook(b"{}", secret=SECRET, webhook_id="wh", timestamp_s=10)
    headers["webhook-signature"] = "v1," + "A" * 9000
    with pytest.raises(WebhookError) as caught:
        verify_webhook(headers, b"{}", SECRET, now_s=10)
    assert caught.value.reason == "malformed"
    with pytest.raises(WebhookError, match="bytes"):
        parse_webhook_event(b" " * (MAX_WEBHOOK_BYTES + 1))
    assert parse_webhook_event('{"type": "t", "id": "e", "created_at": 1, "data": {}}').type == "t"


def _verify(headers: dict[str, str], body: bytes, now_s: float = 10) -> str:
    with pytest.raises(WebhookError) as caught:
        verify_webhook(headers, body, SECRET, now_s=now_s)
    return caught.value.reason


def test_every_refusal_has_its_reason() -> None:
    body = b'{"type": "x", "id": "e", "created_at": 1, "data": {}}'
    good = sign_webhook(body, secret=SECRET, webhook_id="wh", timestamp_s=10)
    assert _verify({k: v for k, v in good.items() if k != "webhook-id"}, body) == "missing_header"
    assert _verify({**good, "webhook-timestamp": "1e3"}, body) == "bad_timestamp"
    assert _verify(good, body, now_s=1000) == "stale"
    assert _verify(good, body, now_s=-1000) == "stale"
    assert _verify({**good, "webhook-signature": "v1,@@@ v0,abc"}, body) == "bad_signature"
    assert _verify(good, body + b" ") == "bad_signature"
    for bad in (b"{", b"1", b'{"type": 1}', b'{"type": "x"}'):
        signed = sign_webhook(bad, secret=SECRET, webhook_id="wh", timestamp_s=10)
        assert _verify(signed, bad) == "malformed"


def test_the_incoming_call_event() -> None:
    body = (
        b'{"object": "event", "id": "e", "type": "realtime.call.incoming", "created_at": 1, '
        b'"data": {"call_id": "rtc_1", "sip_headers": [{"name": "From", "value": "sip:a@b"}], '
        b'"sip_media_security": "srtp"}}'
    )
    headers = sign_webhook(body, secret=SECRET, webhook_id="wh", timestamp_s=10)
    event = verify_webhook(headers, body.decode(), SECRET, now_s=10)
    assert isinstance(event, RealtimeCallIncoming)
    assert event.call_id == "rtc_1"
    assert event.webhook_id == "wh"
    assert event.sip_header("FROM") == "sip:a@b"
    assert event.sip_header("To") is None
    assert event.data.sip_media_security == "srtp"


@pytest.mark.parametrize("secret", ["", "secret", "whsec_", "whsec_!!!", None])
def test_bad_secrets(secret: object) -> None:
    with pytest.raises(ConfigurationError, match="whsec_"):
        webhook_key(secret)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["live.transport.incoming", "live.call.incoming"])
def test_the_incoming_live_call_event(kind: str) -> None:
    body = (
        b'{"object": "event", "id": "e", "type": "' + kind.encode() + b'", "created_at": 1, '
        b'"data": {"session_id": "sess_1", "sip_headers": [{"name": "To", "value": "sip:b@c"}]}}'
    )
    headers = sign_webhook(body, secret=SECRET, webhook_id="wh", timestamp_s=10)
    event = verify_webhook(headers, body, SECRET, now_s=10)
    assert isinstance(event, LiveCallIncoming)
    assert event.session_id == event.call_id == "sess_1"
    assert event.sip_header("to") == "sip:b@c"
    assert event.sip_header("From") is None
