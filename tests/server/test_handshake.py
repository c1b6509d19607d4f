"""The handshake: path, bearer token (HTTP 401), the ``realtime`` subprotocol, the model."""

from __future__ import annotations

import logging

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from .helpers import Client, run, serving


def test_wrong_or_missing_token_is_401_at_the_handshake() -> None:
    async def body() -> None:
        async with serving(token="s3cret") as server:
            for headers in ({"Authorization": "Bearer nope"}, {}):
                with pytest.raises(InvalidStatus) as caught:
                    async with connect(server.url(), additional_headers=headers):
                        pass
                assert caught.value.response.status_code == 401
                assert b"invalid_api_key" in caught.value.response.body

    run(body())


def test_right_token_in_header_or_browser_subprotocol_is_accepted() -> None:
    async def body() -> None:
        async with serving(token="s3cret") as server:
            async with connect(
                server.url(),
                additional_headers={"Authorization": "Bearer s3cret"},
                subprotocols=["realtime"],  # type: ignore[list-item]
            ) as ws:
                assert ws.subprotocol == "realtime"
                assert (await Client(ws).recv())["type"] == "session.created"
            async with connect(
                server.url(),
                subprotocols=["realtime", "openai-insecure-api-key.s3cret"],  # type: ignore[list-item]
            ) as ws:
                assert ws.subprotocol == "realtime"

    run(body())


def test_no_token_configured_accepts_any_key_and_no_subprotocol() -> None:
    async def body() -> None:
        async with (
            serving() as server,
            connect(server.url(), additional_headers={"Authorization": "Bearer x"}) as ws,
        ):
            assert ws.subprotocol is None
            assert (await Client(ws).recv())["type"] == "session.created"

    run(body())


def test_other_paths_are_404() -> None:
    async def body() -> None:
        async with serving() as server:
            with pytest.raises(InvalidStatus) as caught:
                async with connect(f"ws://127.0.0.1:{server.port}/v1/other"):
                    pass
            assert caught.value.response.status_code == 404

    run(body())


def test_model_comes_from_the_query() -> None:
    async def body() -> None:
        async with serving() as server, connect(server.url("gpt-realtime-mini")) as ws:
            created = await Client(ws).recv()
            assert created["session"]["model"] == "gpt-realtime-mini"

    run(body())


def test_binds_loopback_by_default() -> None:
    async def body() -> None:
        async with serving() as server:
            assert server.base_url == f"ws://127.0.0.1:{server.port}/v1"

    run(body())


def test_token_never_reaches_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    async def body() -> None:
        async with serving(token="s3cret-token") as server:
            async with connect(
                server.url(), additional_headers={"Authorization": "Bearer s3cret-token"}
            ) as ws:
                await Client(ws).recv()
            with pytest.raises(InvalidStatus):
                async with connect(
                    server.url(), additional_headers={"Authorization": "Bearer wrong-token"}
                ):
                    pass

    with caplog.at_level(logging.DEBUG):
        run(body())
    # The server's records only (the test's own client logs what it sends).
    text = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("voxwire"))
    assert "Authorization" in text  # the header was logged ...
    assert "s3cret-token" not in text  # ... without its value
    assert "wrong-token" not in text
