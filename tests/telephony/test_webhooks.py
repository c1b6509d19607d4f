"""The incoming-call webhook: what voxwire's verifier accepts and refuses agrees with the official
``openai`` client's ``webhooks.unwrap`` (the cross-check; the verifier itself is written from the
Standard Webhooks specification); forged, stale and malformed requests are refused with a
reason, whatever the bytes; the ASGI app answers 200 / 400 / 405 and runs each call once."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voxwire.exceptions import ConfigurationError, WebhookError
from voxwire.protocol.sip import sign_webhook
from voxwire.telephony import RealtimeCallIncoming, WebhookApp, WebhookEvent, verify

from .conftest import SECRET

OFFICIAL = openai.OpenAI(api_key="unused", webhook_secret=SECRET)


def incoming(call_id: str = "rtc_abc", created_at: int | None = None) -> bytes:
    event = {
        "object": "event",
        "id": "evt_1",
        "type": "realtime.call.incoming",
        "created_at": int(time.time()) if created_at is None else created_at,
        "data": {
            "call_id": call_id,
            "sip_headers": [
                {"name": "From", "value": "sip:+14155550123@pstn.example"},
                {"name": "To", "value": "sip:+18005550100@sip.example"},
            ],
        },
    }
    return json.dumps(event).encode()


def signed(body: bytes, *, at: int | None = None, secret: str = SECRET) -> dict[str, str]:
    """Signed now (not at collection: a long test run must not make them stale)."""
    stamp = int(time.time()) if at is None else at
    return sign_webhook(body, secret=secret, webhook_id="wh_1", timestamp_s=stamp)


def official_accepts(headers: dict[str, str], body: bytes) -> bool:
    try:
        OFFICIAL.webhooks.unwrap(body, headers)
    except (openai.InvalidWebhookSignatureError, ValueError):
        return False
    return True


def test_a_signed_call_is_verified_and_typed_as_the_official_client_reads_it() -> None:
    body = incoming()
    headers = signed(body)
    event = verify(headers, body, SECRET)
    assert isinstance(event, RealtimeCallIncoming)
    assert event.call_id == "rtc_abc"
    assert event.webhook_id == "wh_1"
    assert event.sip_header("from") == "sip:+14155550123@pstn.example"
    assert event.sip_header("Contact") is None
    official = OFFICIAL.webhooks.unwrap(body, headers)
    assert official.type == "realtime.call.incoming"
    assert official.data.call_id == event.call_id  # type: ignore[union-attr]


def test_headers_in_any_case_and_as_asgi_byte_pairs() -> None:
    body = incoming()
    headers = signed(body)
    upper = {k.upper(): v for k, v in headers.items()}
    pairs = [(k.encode(), v.encode()) for k, v in headers.items()]
    assert verify(upper, body, SECRET) == verify(pairs, body.decode(), SECRET)


def test_a_rotated_secret_list_matches_on_any_v1_entry() -> None:
    body = incoming()
    other = "whsec_" + base64.b64encode(b"another-secret-key-0123456789ab").decode()
    old = signed(body, secret=other)["webhook-signature"]
    headers = signed(body)
    headers["webhook-signature"] = f"v2,abc {old} {headers['webhook-signature']}"
    assert isinstance(verify(headers, body, SECRET), RealtimeCallIncoming)
    assert official_accepts(headers, body)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda h, b: ({**h, "webhook-signature": "v1," + "A" * 44}, b), "bad_signature"),
        (lambda h, b: (h, b.replace(b"rtc_abc", b"rtc_evil")), "bad_signature"),
        (lambda h, b: ({**h, "webhook-id": "wh_2"}, b), "bad_signature"),
        (lambda h, b: ({**h, "webhook-signature": "v1,not base64!"}, b), "bad_signature"),
        (lambda h, b: ({**h, "webhook-signature": "v2,xyz"}, b), "bad_signature"),
        (lambda h, b: ({k: v for k, v in h.items() if k != "webhook-id"}, b), "missing_header"),
        (lambda h, b: ({**h, "webhook-signature": " "}, b), "missing_header"),
        (lambda h, b: ({**h, "webhook-timestamp": "soon"}, b), "bad_timestamp"),
        (lambda h, b: ({**h, "webhook-timestamp": "-5"}, b), "bad_timestamp"),
    ],
)
def test_forged_requests_are_refused(change: Any, reason: str) -> None:
    body = incoming()
    headers, forged = change(signed(body), body)
    with pytest.raises(WebhookError) as caught:
        verify(headers, forged, SECRET)
    assert caught.value.reason == reason
    assert not official_accepts(headers, forged)


@pytest.mark.parametrize("offset_s", [-310, 310, -3600, 86400])
def test_stale_and_future_timestamps_are_refused(offset_s: int) -> None:
    body = incoming()
    headers = signed(body, at=int(time.time()) + offset_s)
    with pytest.raises(WebhookError, match="tolerance") as caught:
        verify(headers, body, SECRET)
    assert caught.value.reason == "stale"
    assert not official_accepts(headers, body)


def test_the_window_edge_with_a_fixed_clock() -> None:
    body = incoming()
    headers = signed(body, at=1000)
    assert isinstance(verify(headers, body, SECRET, now_s=1300), RealtimeCallIncoming)
    with pytest.raises(WebhookError) as caught:
        verify(headers, body, SECRET, now_s=1301)
    assert caught.value.reason == "stale"
    assert isinstance(
        verify(headers, body, SECRET, now_s=1301, tolerance_s=301), RealtimeCallIncoming
    )


@pytest.mark.parametrize("offset_s", [-290, 0, 290])
def test_timestamps_within_the_window_pass(offset_s: int) -> None:
    body = incoming()
    headers = signed(body, at=int(time.time()) + offset_s)
    assert isinstance(verify(headers, body, SECRET), RealtimeCallIncoming)
    assert official_accepts(headers, body)


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        b'{"id": "evt_1"}',
        b'{"type": "realtime.call.incoming", "id": "e", "created_at": 1, "data": {}}',
        b'{"type": "realtime.call.incoming", "id": 5, "created_at": 1, '
        b'"data": {"call_id": "c", "sip_headers": []}}',
    ],
)
def test_signed_but_malformed_bodies_are_refused(body: bytes) -> None:
    with pytest.raises(WebhookError) as caught:
        verify(signed(body), body, SECRET)
    assert caught.value.reason == "malformed"


def test_other_event_types_come_back_untyped() -> None:
    body = json.dumps(
        {
            "id": "evt_2",
            "type": "response.completed",
            "created_at": int(time.time()),
            "data": {"id": "r"},
        }
    ).encode()
    event = verify(signed(body), body, SECRET)
    assert isinstance(event, WebhookEvent)
    assert event.type == "response.completed"
    assert event.data == {"id": "r"}


@pytest.mark.parametrize("secret", ["", "secret", "whsec_", "whsec_!!!", 5])
def test_a_bad_secret_is_a_configuration_error(secret: Any) -> None:
    with pytest.raises(ConfigurationError, match="whsec_"):
        verify({}, b"", secret)


@settings(max_examples=300, deadline=None)
@given(
    body=st.binary(max_size=300),
    webhook_id=st.text(max_size=30),
    timestamp=st.text(max_size=15),
    signature=st.text(max_size=120),
)
def test_fuzz_arbitrary_requests_only_ever_raise_webhook_error(
    body: bytes, webhook_id: str, timestamp: str, signature: str
) -> None:
    headers = {
        "webhook-id": webhook_id,
        "webhook-timestamp": timestamp,
        "webhook-signature": signature,
    }
    with pytest.raises(WebhookError):
        verify(headers, body, SECRET)


@settings(max_examples=200, deadline=None)
@given(position=st.integers(min_value=0), flip=st.integers(min_value=1, max_value=255))
def test_fuzz_any_changed_byte_breaks_the_signature(position: int, flip: int) -> None:
    body = bytearray(incoming())
    headers = signed(bytes(body))
    body[position % len(body)] ^= flip
    with pytest.raises(WebhookError):
        verify(headers, bytes(body), SECRET)


# --- the ASGI app ---------------------------------------------------------------------------------


def test_the_asgi_app_answers_and_runs_each_call_once() -> None:
    async def body() -> None:
        seen: list[str] = []

        async def on_call(event: RealtimeCallIncoming) -> None:
            seen.append(event.call_id)

        app = WebhookApp(SECRET, on_call)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
            payload = incoming()
            headers = signed(payload, at=int(time.time()))
            ok = await client.post("/webhook", content=payload, headers=headers)
            again = await client.post("/webhook", content=payload, headers=headers)
            forged = await client.post(
                "/webhook", content=payload.replace(b"abc", b"xyz"), headers=headers
            )
            stale = await client.post(
                "/webhook", content=payload, headers=signed(payload, at=int(time.time()) - 900)
            )
            wrong_method = await client.get("/webhook")
            await app.wait_calls()
        assert (ok.status_code, again.status_code) == (200, 200)
        assert forged.status_code == 400
        assert forged.json()["reason"] == "bad_signature"
        assert stale.status_code == 400
        assert stale.json()["reason"] == "stale"
        assert wrong_method.status_code == 405
        assert seen == ["rtc_abc"]  # the retry (same webhook-id) did not run it again
        assert [e.reason for e in app.refused] == ["bad_signature", "stale"]

    asyncio.run(body())


def test_a_failing_call_handler_is_logged_and_the_app_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def body() -> None:
        def on_call(event: RealtimeCallIncoming) -> None:
            raise RuntimeError("boom")

        app = WebhookApp(SECRET, on_call)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
            payload = incoming()
            answer = await client.post("/", content=payload, headers=signed(payload))
            await app.wait_calls()
        assert answer.status_code == 200

    asyncio.run(body())
    assert "call handler failed for call rtc_abc" in caplog.text


def test_an_oversized_body_is_refused_unread() -> None:
    async def body() -> None:
        app = WebhookApp(SECRET, lambda event: None)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
            answer = await client.post("/", content=b"x" * (1024 * 1024 + 1))
        assert answer.status_code == 413

    asyncio.run(body())
