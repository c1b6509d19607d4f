"""What one received frame may cost: the bounds the decoders put on untrusted input.

A frame is read only if it is text (``str``, or ``bytes`` holding UTF-8), at most
:data:`MAX_FRAME_BYTES` long, nested at most :data:`MAX_DEPTH` levels and holding at most
:data:`MAX_VALUES` values. A frame past a bound becomes a
:class:`~voxwire.protocol.server_events.ProtocolErrorEvent` saying which bound, before anything
is built from it: no recursion into a hostile nesting, no million-entry list. Strings are bounded
by the frame (audio is the only long string a server sends).

The figures sit next to the hosted service's own (docs/protocol.md, "Limits", names the sources):

- :data:`MAX_FRAME_BYTES`, 32 MiB: the largest frame the session's websocket accepts
  (``max_message_bytes``). The largest legitimate frame is an item retrieved with its audio; one
  ``input_audio_buffer.append`` carries at most 15 MiB of audio (GA reference), 20 MiB as base64.
- :data:`MAX_DEPTH`, 64 levels: strict function schemas nest at most 10 levels (OpenAI Structured
  Outputs), about 20 JSON levels, under an envelope of five (event, session, tools, tool,
  parameters); 64 leaves room for looser schemas and MCP tool schemas.
- :data:`MAX_VALUES`, 100,000 values: a strict schema has at most 5,000 object properties; no
  event of the GA reference comes near the bound.

Cost of the check: the typed fast path decodes first; only events that can hold free-form JSON
(a session object, an MCP tool's schema, anything read as a mapping) are scanned, in one pass of
a compiled pattern over the frame's structural characters, so audio and text deltas pay nothing.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any, Final

import msgspec

__all__ = [
    "MAX_DEPTH",
    "MAX_FRAME_BYTES",
    "MAX_VALUES",
    "frame_problem",
    "read_json",
    "shape_problem",
]

MAX_FRAME_BYTES: Final = 32 * 1024 * 1024
MAX_DEPTH: Final = 64
MAX_VALUES: Final = 100_000

# The shape check works on the frame's skeleton: escapes out, every byte but the structural ones
# and quotes deleted (one C pass each), then the strings out: what lies between quote 2k and
# quote 2k+1 is inside a string once escapes are gone.
_ESCAPE: Final = re.compile(rb"\\.", re.DOTALL)
_NOT_STRUCTURAL: Final = bytes(b for b in range(256) if b not in b'[]{}",')
# +1 for an opening bracket, -1 for a closing one: the running sum is the nesting depth.
_STEP: Final = tuple(1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256))


def frame_problem(data: object) -> str | None:
    """What makes ``data`` unreadable as a frame before it is parsed (its kind, its size, bytes
    that are not UTF-8), or ``None``."""
    if not isinstance(data, (str, bytes)):
        return (
            f"frame is {type(data).__name__}, not text: Realtime events are JSON text frames "
            "(str, or bytes holding UTF-8)"
        )
    if len(data) > MAX_FRAME_BYTES:
        return (
            f"frame of {len(data):,} {'characters' if isinstance(data, str) else 'bytes'} is "
            f"over the {MAX_FRAME_BYTES:,}-byte bound (voxwire.protocol.limits.MAX_FRAME_BYTES)"
        )
    if isinstance(data, bytes) and not data.isascii():
        # The whole frame, not only the fields a typed decoder reads (it skips the others).
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return (
                f"frame is not UTF-8 text (byte {exc.start} is not): a binary frame? Realtime "
                "events are JSON text frames"
            )
    return None


def shape_problem(data: str | bytes) -> str | None:
    """``None`` if the JSON text ``data`` nests at most :data:`MAX_DEPTH` levels and holds at
    most :data:`MAX_VALUES` values (containers and the values separated by commas); else what
    is over. Brackets inside strings do not count; malformed JSON is left to the parser."""
    # First a bound that counts brackets and commas inside strings too: most frames are far
    # below it, and counting is one C pass with no copy.
    if isinstance(data, str):
        opening, commas = data.count("[") + data.count("{"), data.count(",")
    else:
        opening, commas = data.count(b"[") + data.count(b"{"), data.count(b",")
    if opening <= MAX_DEPTH and opening + commas <= MAX_VALUES:
        return None
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if b"\\" in raw:
        raw = _ESCAPE.sub(b"", raw)
    skeleton = b"".join(raw.translate(None, _NOT_STRUCTURAL).split(b'"')[::2])
    values = skeleton.count(b",") + skeleton.count(b"[") + skeleton.count(b"{")
    if values > MAX_VALUES:
        return f"frame holds more than {MAX_VALUES:,} values (voxwire.protocol.limits.MAX_VALUES)"
    brackets = skeleton.translate(None, b",")
    if len(brackets) > 2 * MAX_DEPTH and max(accumulate(map(_STEP.__getitem__, brackets))) > (
        MAX_DEPTH
    ):
        return f"frame nests deeper than {MAX_DEPTH} levels (voxwire.protocol.limits.MAX_DEPTH)"
    return None


def read_json(data: str | bytes) -> tuple[Any, str | None]:
    """``(value, None)`` for JSON text within the bounds above, else ``(None, what is wrong)``:
    not UTF-8, over a bound, or not JSON (the parser's message, for the caller to prefix).
    Never raises, whatever ``data`` holds: for the bodies and strings received outside the
    event codecs (REST bodies, webhooks, tool arguments and outputs), which must not recurse
    into a hostile nesting either."""
    problem = frame_problem(data)
    if problem is None:
        problem = shape_problem(data)
    if problem is not None:
        return None, problem
    try:
        return msgspec.json.decode(data), None
    except (msgspec.DecodeError, UnicodeError, RecursionError) as exc:
        # UnicodeError: a str with a lone surrogate; RecursionError: none within the bounds,
        # kept should the interpreter's limit ever be lower than MAX_DEPTH.
        return None, str(exc)  # msgspec says what: "JSON is malformed: …", "… truncated"
