"""Verifying the ``realtime.call.incoming`` webhook: voxwire.telephony.webhooks.verify side by
side with the official ``openai`` client's ``webhooks.unwrap`` (both check the Standard Webhooks
signature and the timestamp, then parse the event), on one typical delivery.

    pytest benches/test_bench_webhooks.py --benchmark-only --benchmark-group-by=group
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable

import openai
import pytest

from voxwire.protocol.sip import sign_webhook
from voxwire.telephony import verify

SECRET = "whsec_" + base64.b64encode(b"bench-secret-key-0123456789abcdef").decode()
BODY = json.dumps(
    {
        "object": "event",
        "id": "evt_685343a1381c819085d44c354e1b330e",
        "type": "realtime.call.incoming",
        "created_at": int(time.time()),
        "data": {
            "call_id": "rtc_479a275623b54bdb9b6fbae2f7cbd408",
            "sip_headers": [
                {"name": "Max-Forwards", "value": "63"},
                {"name": "CSeq", "value": "851287 INVITE"},
                {"name": "Content-Type", "value": "application/sdp"},
                {"name": "To", "value": "<sip:+18005550100@sip.api.openai.com>"},
                {"name": "From", "value": '"Caller" <sip:+14155550123@pstn.example>;tag=64b'},
                {"name": "Call-ID", "value": "a1b2c3d4e5@pstn.example"},
            ],
        },
    }
).encode()


def calls() -> dict[str, Callable[[], object]]:
    client = openai.OpenAI(api_key="unused", webhook_secret=SECRET)
    headers = sign_webhook(BODY, secret=SECRET, webhook_id="wh_1", timestamp_s=int(time.time()))
    return {
        "voxwire": lambda: verify(headers, BODY, SECRET),
        "openai": lambda: client.webhooks.unwrap(BODY, headers),
    }


@pytest.mark.parametrize("library", ["voxwire", "openai"])
def test_verify_incoming_call(benchmark: pytest.FixtureRequest, library: str) -> None:
    benchmark.group = "webhook verify + parse"  # type: ignore[attr-defined]
    run = calls()[library]
    result = benchmark(run)  # type: ignore[operator]
    assert result is not None
