"""``add_image``: bytes or a data URL into a user message, checked before anything is sent."""

from __future__ import annotations

import base64

import pytest

from voxwire.asyncio import RealtimeSession
from voxwire.asyncio.events import ResponseDoneEvent
from voxwire.asyncio.events.history import HistoryMessage, ImageContent
from voxwire.asyncio.images import MAX_IMAGE_BYTES, image_data_url, sniff_image_type
from voxwire.exceptions import ConfigurationError

from .helpers import MANUAL, run, serving, settle, until

# A real 1x1 PNG; the other formats only need their signatures for sniffing.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(32)
GIF = b"GIF89a\x01\x00\x01\x00" + bytes(16)
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + bytes(24)


@pytest.mark.parametrize(
    ("data", "mime"),
    [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp")],
)
def test_bytes_become_a_data_url_of_their_sniffed_type(data: bytes, mime: str) -> None:
    assert sniff_image_type(data) == mime
    url = image_data_url(data)
    head, _, payload = url.partition(",")
    assert head == f"data:{mime};base64"
    assert base64.b64decode(payload) == data
    assert image_data_url(bytearray(data)) == url


def test_a_valid_data_url_is_sent_as_given() -> None:
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert image_data_url(url) == url


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (b"%PDF-1.7 not an image", "not a PNG, JPEG, WebP or GIF"),
        (b"RIFF\x00\x00\x00\x00WAVE", "not a PNG, JPEG, WebP or GIF"),
        ("https://example.com/cat.png", "expected a data: URL"),
        ("data:image/png;base64", "expected a data: URL"),
        ("data:image/bmp;base64,Qk0=", "image/bmp"),
        ("data:image/png,rawtext", "with ;base64"),
        ("data:image/png;base64,not base64!", "base64 is invalid"),
    ],
)
def test_what_is_not_an_image_is_refused_with_the_reason(image: str | bytes, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        image_data_url(image)


def test_an_image_too_large_for_one_event_is_refused() -> None:
    big = PNG[:8] + bytes(MAX_IMAGE_BYTES)
    with pytest.raises(ConfigurationError, match="at most"):
        image_data_url(big)
    url = "data:image/png;base64," + "A" * (MAX_IMAGE_BYTES // 3 * 4 + 8)
    with pytest.raises(ConfigurationError, match="at most"):
        image_data_url(url)
    with pytest.raises(TypeError, match="expected image bytes"):
        image_data_url(123)  # type: ignore[arg-type]


def test_add_image_adds_a_user_message_and_asks_for_a_response() -> None:
    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(url=server.url(), config=MANUAL) as session,
        ):
            await session.add_image(PNG, detail="low")
            events = await settle(session)
            assert len([e for e in events if isinstance(e, ResponseDoneEvent)]) == 1
            assert not [e for e in events if e.type == "error"]
            user, assistant = session.history
            assert isinstance(user, HistoryMessage)
            assert user.role == "user"
            assert user.content == (ImageContent(image_url=image_data_url(PNG), detail="low"),)
            assert isinstance(assistant, HistoryMessage)
            assert assistant.role == "assistant"

    run(body())


def test_add_image_without_a_response_then_a_question() -> None:
    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(url=server.url(), config=MANUAL) as session,
        ):
            url = "data:image/png;base64," + base64.b64encode(PNG).decode()
            await session.add_image(url, trigger_response=False)
            await until(session, "history_added")
            await session.send_message("hello, what is in the picture?")
            events = await settle(session)
            assert len([e for e in events if isinstance(e, ResponseDoneEvent)]) == 1
            kinds = [(m.role, type(m.content[0]).__name__) for m in session.history]  # type: ignore[union-attr]
            assert kinds == [
                ("user", "ImageContent"),
                ("user", "TextContent"),
                ("assistant", "TextContent"),
            ]
            with pytest.raises(ConfigurationError):
                await session.add_image(b"not an image")
            assert len(session.history) == 3  # nothing was sent

    run(body())
