"""Ephemeral keys: minted from the application's side (voxwire.web.mint_client_secret) by the
local server's POST /v1/realtime/client_secrets, accepted at the handshake in the browser's form,
each session starting with the configuration it was minted with; answers checked against the
official ``openai`` types; bad requests get the service's JSON errors; garbage never stops it."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.realtime import ClientSecretCreateResponse
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from voxwire.agents import RealtimeAgent, function_tool
from voxwire.exceptions import ConfigurationError, ConnectionFailed
from voxwire.server import ClientSecrets
from voxwire.server.client_secrets import parse_request_head
from voxwire.web import client_secret_request, mint_client_secret

from .helpers import Client, run, serving


@function_tool
async def refund(order_id: str) -> str:
    """Refund an order.

    Args:
        order_id: the order.
    """
    return "done"


AGENT = RealtimeAgent(
    name="Desk", instructions="You are the front desk.", voice="verse", tools=[refund]
)


def test_the_request_carries_the_agent_and_leaves_tools_server_side() -> None:
    body = asyncio.run(
        client_secret_request(
            AGENT, config={"audio": {"input": {"turn_detection": {"type": "semantic_vad"}}}}
        )
    )
    assert body["expires_after"] == {"anchor": "created_at", "seconds": 600}
    session = body["session"]
    assert session["type"] == "realtime"
    assert session["model"] == "gpt-realtime"
    assert session["instructions"] == "You are the front desk."
    assert session["audio"]["output"]["voice"] == "verse"
    assert session["audio"]["input"]["turn_detection"]["type"] == "semantic_vad"
    assert "tools" not in session
    with pytest.raises(ConfigurationError, match=r"10 \.\.= 7200"):
        asyncio.run(client_secret_request(AGENT, expires_after_s=5))


def test_a_minted_key_opens_a_session_configured_by_its_mint() -> None:
    async def body() -> None:
        async with serving(token="app-key") as server, ClientSecrets(token="app-key") as keys:
            server.use_client_secrets(keys)
            secret = await mint_client_secret(
                AGENT, api_key="app-key", base_url=keys.base_url, expires_after_s=60
            )
            assert secret.value.startswith("ek_")
            assert secret.value not in repr(secret)
            official = ClientSecretCreateResponse.model_validate(
                {"value": secret.value, "expires_at": secret.expires_at, "session": secret.session}
            )
            assert official.session.type == "realtime"
            # The browser's form: the key as a subprotocol.
            async with connect(
                server.url(),
                subprotocols=["realtime", f"openai-insecure-api-key.{secret.value}"],  # type: ignore[list-item]
            ) as ws:
                created = await Client(ws).recv()
            assert created["type"] == "session.created"
            assert created["session"]["instructions"] == "You are the front desk."
            assert created["session"]["audio"]["output"]["voice"] == "verse"
            assert created["session"]["tools"] == []
            # Another key is still refused.
            with pytest.raises(InvalidStatus) as caught:
                async with connect(
                    server.url(),
                    subprotocols=["realtime", "openai-insecure-api-key.ek_nope"],  # type: ignore[list-item]
                ):
                    pass
            assert caught.value.response.status_code == 401

    run(body())


def test_an_expired_key_is_refused() -> None:
    now = [1_000_000.0]

    async def body() -> None:
        keys = ClientSecrets(clock=lambda: now[0])
        async with serving(token="app-key") as server, keys:
            server.use_client_secrets(keys)
            secret = await mint_client_secret(
                AGENT, api_key="anything", base_url=keys.base_url, expires_after_s=10
            )
            assert secret.expires_at == 1_000_010
            now[0] += 11
            assert keys.session_for(secret.value) is None
            with pytest.raises(InvalidStatus) as caught:
                async with connect(
                    server.url(), additional_headers={"Authorization": f"Bearer {secret.value}"}
                ):
                    pass
            assert caught.value.response.status_code == 401

    run(body())


def test_minting_needs_the_servers_token_and_a_valid_session() -> None:
    async def body() -> None:
        async with ClientSecrets(token="app-key") as keys:
            with pytest.raises(ConnectionFailed, match="401: Incorrect API key"):
                await mint_client_secret(AGENT, api_key="wrong", base_url=keys.base_url)
            bad_voice = RealtimeAgent(name="Odd", instructions="x", voice="not-a-voice")
            with pytest.raises(ConnectionFailed, match="400"):
                await mint_client_secret(bad_voice, api_key="app-key", base_url=keys.base_url)

    run(body())


async def _raw(base_url: str, request: bytes) -> tuple[int, dict[str, object]]:
    host, port = base_url.removeprefix("http://").removesuffix("/v1").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body)


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /v1/realtime/client_secrets HTTP/1.1\r\n\r\n", 405),
        (b"POST /v1/other HTTP/1.1\r\n\r\n", 404),
        (b"POST /v1/realtime/client_secrets HTTP/1.1\r\nContent-Length: 3\r\n\r\n{x}", 400),
        (b"POST /v1/realtime/client_secrets HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 413),
        (b"HELLO\r\n\r\n", 400),
        (
            b"POST /v1/realtime/client_secrets HTTP/1.1\r\nContent-Length: 36\r\n\r\n"
            b'{"expires_after": {"seconds": 9999}}',
            400,
        ),
        (
            b"POST /v1/realtime/client_secrets HTTP/1.1\r\nContent-Length: 40\r\n\r\n"
            b'{"session": {"type": "transcription"}}  ',
            400,
        ),
    ],
)
def test_bad_requests_get_the_services_json_error(request_bytes: bytes, status: int) -> None:
    async def body() -> None:
        async with ClientSecrets() as keys:
            got, answer = await _raw(keys.base_url, request_bytes)
            assert got == status
            assert isinstance(answer["error"], dict)
            assert answer["error"]["type"] == "invalid_request_error"
            # And it goes on serving.
            secret = await mint_client_secret(AGENT, api_key="k", base_url=keys.base_url)
            assert secret.value.startswith("ek_")

    run(body())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_request_head_parses_or_says_why(head: bytes) -> None:
    parsed = parse_request_head(head)
    assert isinstance(parsed, str) or parsed.method == head.split(b" ")[0].decode("latin-1")


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=12), kids),
        max_leaves=20,
    )
)
def test_any_json_body_gets_an_answer(body: object) -> None:
    status, answer = ClientSecrets().mint(body)
    assert status in (200, 400)
    assert ("value" in answer) == (status == 200)
