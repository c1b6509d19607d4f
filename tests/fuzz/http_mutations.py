"""Seeded mutation of HTTP requests: the hostile inputs of the HTTP side's fuzz (the client
secrets endpoint, the SIP trunk's REST routes, the Twilio webhook, the websocket handshakes).

A request is built from a clean one (method, target, headers, body) and broken the way a
faulty or hostile client could: non-ASCII or invalid UTF-8 bytes in a header value, the target or
the body, a header line without a colon, a Content-Length that lies, is negative, huge or
repeated, a body nested thousands deep or of the wrong JSON type, a head over the size bounds,
a request cut short. Everything is drawn from a :class:`random.Random` the caller seeds.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace

from .mutations import deep_text, mutate_frame

_ODD_BYTES = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\xfe", "é".encode(), b"\x00", b"\x7f")


@dataclass(frozen=True)
class Request:
    method: bytes
    target: bytes
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes = b""
    extra: tuple[bytes, ...] = field(default=())  # raw header lines added as they are

    def encode(self, *, length: bool = True) -> bytes:
        lines = [self.method + b" " + self.target + b" HTTP/1.1"]
        lines += [name + b": " + value for name, value in self.headers]
        if (
            length
            and self.method != b"GET"
            and not any(name.lower() == b"content-length" for name, _ in self.headers)
        ):
            lines.append(b"Content-Length: " + str(len(self.body)).encode())
        lines += list(self.extra)
        return b"\r\n".join(lines) + b"\r\n\r\n" + self.body


def _spoil(value: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(value) + 1)
    return value[:at] + rng.choice(_ODD_BYTES) + value[at:]


def mutate_body(request: Request, rng: random.Random) -> tuple[str, bytes]:
    """A hostile body made from ``request``'s: (the mutation's name, the body)."""
    try:
        event = json.loads(request.body) if request.body else {}
    except ValueError:
        event = {}
    roll = rng.randrange(5)
    if roll == 0:
        return "body_deep", deep_text(rng.choice([100, 1_000, 20_000])).encode()
    if roll == 1:
        return "body_not_object", rng.choice([b"[]", b"null", b"1", b'"x"', b"[{}]"])
    if roll == 2 or not isinstance(event, dict):
        return "body_bytes", _spoil(request.body, rng)
    kind, frame = mutate_frame(event, rng)
    return f"body_{kind}", frame if isinstance(frame, bytes) else frame.encode("utf-8", "replace")


def mutate_request(request: Request, rng: random.Random) -> tuple[str, bytes]:
    """One hostile request made from ``request``: (the mutation's name, its bytes)."""
    roll = rng.randrange(12)
    if roll <= 3:
        kind, body = mutate_body(request, rng)
        return kind, replace(request, body=body).encode()
    if roll == 4 and request.headers:
        index = rng.randrange(len(request.headers))
        name, value = request.headers[index]
        headers = list(request.headers)
        headers[index] = (name, _spoil(value, rng))
        return "header_bytes", replace(request, headers=tuple(headers)).encode()
    if roll == 5:
        return "target_bytes", replace(request, target=_spoil(request.target, rng)).encode()
    if roll == 6:
        length = rng.choice([b"-1", b"1e3", b"99999999999999999999", b"\xd9\xa1", b"", b"0x10"])
        headers = (*request.headers, (b"Content-Length", length))
        return "bad_length", replace(request, headers=headers).encode()
    if roll == 7:
        line = rng.choice(
            [b"no colon here", b": empty name", b" folded: x", b"X\x00: y", b"\xff: z"]
        )
        return "bad_header_line", replace(request, extra=(line,)).encode()
    if roll == 8:
        return "head_huge", replace(request, extra=(b"X-Pad: " + b"a" * 70_000,)).encode()
    if roll == 9:
        raw = request.encode()
        return "cut", raw[: rng.randrange(len(raw))]
    if roll == 10:
        method = rng.choice([b"GET", b"PUT", b"DELETE", b"\xff", b"POST /x", b""])
        return "method", replace(request, method=method).encode()
    # a body shorter or longer than its Content-Length says
    headers = (*request.headers, (b"Content-Length", str(len(request.body) + 5).encode()))
    return "short_body", replace(request, headers=headers).encode()
