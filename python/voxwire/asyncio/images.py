"""Images for ``RealtimeSession.add_image``: bytes or a ``data:`` URL in, a checked data URL out.

The Realtime API takes an image inline, as a base64 ``data:`` URL in an ``input_image`` content
part of a user message. Bytes get their type from their first bytes (PNG, JPEG, WebP, GIF);
anything else, an ``http(s)`` URL, or an image too large for one client event is refused here,
with a message, rather than by the server after the upload.
"""

from __future__ import annotations

import base64
import binascii
from typing import Final

from voxwire.exceptions import ConfigurationError

__all__ = ["IMAGE_TYPES", "MAX_IMAGE_BYTES", "image_data_url", "sniff_image_type"]

#: The largest image ``add_image`` sends, in bytes before base64 (10 MiB: ~13.4 MiB once
#: encoded, under the 15 MiB the service accepts in one client event for audio, so the event
#: carrying it stays a size the service and the local server take).
MAX_IMAGE_BYTES: Final = 10 * 1024 * 1024

#: The image types the session sends (by what their first bytes say).
IMAGE_TYPES: Final = ("image/png", "image/jpeg", "image/webp", "image/gif")


def sniff_image_type(data: bytes) -> str | None:
    """The MIME type the first bytes of ``data`` announce, or ``None`` if none of
    :data:`IMAGE_TYPES`."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_data_url(image: str | bytes | bytearray | memoryview) -> str:
    """A ``data:image/...;base64,...`` URL for ``image`` (raw bytes, or such a URL, checked).

    Raises :class:`~voxwire.exceptions.ConfigurationError` for an unknown type, bad base64, an
    URL that is not a data URL, or more than :data:`MAX_IMAGE_BYTES`.
    """
    if isinstance(image, bytes | bytearray | memoryview):
        data = bytes(image)
        mime = sniff_image_type(data)
        if mime is None:
            raise ConfigurationError(
                f"add_image() got {len(data)} bytes that are not a PNG, JPEG, WebP or GIF image "
                f"(they start with {data[:8]!r}): convert the image to one of those"
            )
        _check_size(len(data))
        return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    if not isinstance(image, str):
        raise TypeError(
            f"add_image() got {type(image).__name__}: expected image bytes or a data: URL"
        )
    head, sep, payload = image.partition(",")
    if not image.startswith("data:") or not sep:
        shown = image if len(image) <= 60 else image[:57] + "..."
        raise ConfigurationError(
            f"add_image() got {shown!r}: expected a data: URL (data:image/png;base64,...) or "
            "the image bytes — the Realtime API takes images inline, not by link"
        )
    mime, _, encoding = head[len("data:") :].partition(";")
    if mime not in IMAGE_TYPES or encoding != "base64":
        raise ConfigurationError(
            f"add_image() got a data URL of {head[len('data:') :]!r}: expected "
            f"{' / '.join(IMAGE_TYPES)} with ;base64"
        )
    # Decoded size from the encoded length: a too-large URL is refused before decoding it.
    _check_size(len(payload) * 3 // 4)
    try:
        base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise ConfigurationError(f"add_image(): the data URL's base64 is invalid ({exc})") from exc
    return image


def _check_size(n_bytes: int) -> None:
    if n_bytes > MAX_IMAGE_BYTES:
        raise ConfigurationError(
            f"add_image() got an image of {n_bytes} bytes: at most {MAX_IMAGE_BYTES} bytes "
            f"({MAX_IMAGE_BYTES // (1024 * 1024)} MiB) fit in one event — scale or recompress it"
        )
