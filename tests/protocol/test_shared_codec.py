"""The codec helpers another core shares (voxwire.live): any event struct keeps its frame and
reports the fields it does not model."""

from __future__ import annotations

from msgspec import Struct

from voxwire.protocol.codec import remember_source, struct_unknown_fields


class Probe(Struct, tag_field="type", tag="probe", kw_only=True, dict=True):
    name: str


def test_unknown_fields_of_any_struct_from_text_bytes_and_mappings() -> None:
    for source in (
        '{"type": "probe", "name": "a", "new": 1}',
        b'{"type": "probe", "name": "a", "new": 1}',
        bytearray(b'{"type": "probe", "name": "a", "new": 1}'),
        {"type": "probe", "name": "a", "new": 1},
    ):
        event = Probe(name="a")
        remember_source(event, source)
        assert struct_unknown_fields(event) == {"new": 1}


def test_no_frame_or_an_unreadable_one_has_no_unknown_fields() -> None:
    assert struct_unknown_fields(Probe(name="a")) == {}
    event = Probe(name="a")
    remember_source(event, "[1]")
    assert struct_unknown_fields(event) == {}
