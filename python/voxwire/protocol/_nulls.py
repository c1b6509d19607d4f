"""JSON ``null`` in a field that has no null of its own means "not given".

Clients built on the hosted service send ``null`` for optional fields they leave empty
(LiveKit's plugin: ``"response": {"instructions": null, ...}``), and the service takes it as
absent. Where null *has* a meaning (``turn_detection: null`` turns detection off,
``transcription: null`` and ``noise_reduction: null`` turn them off, ``metadata``/``prompt``
may be cleared), the record's type admits ``None``, and the null is kept. Everywhere else
:func:`drop_absent_nulls` removes it before the value is type-checked, so the rule lives in the
types and nowhere else.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import msgspec
import msgspec.inspect as mi
from msgspec.structs import force_setattr

__all__ = ["drop_absent_nulls", "unset_absent_nulls"]


@cache
def _info(kind: Any) -> mi.Type:
    return mi.type_info(kind)


def drop_absent_nulls(value: Any, kind: Any) -> Any:
    """``value`` (decoded JSON) without the nulls that ``kind`` does not give a meaning; the
    same object if there were none, else a copy of the parts that changed."""
    return _strip(value, _info(kind))


def _admits_null(t: mi.Type) -> bool:
    if isinstance(t, mi.UnionType):
        return any(_admits_null(member) for member in t.types)
    return isinstance(t, mi.NoneType | mi.AnyType)


def _strip(value: Any, t: mi.Type) -> Any:
    if isinstance(t, mi.UnionType):
        t = _member_for(value, t)
    if isinstance(t, mi.StructType) and isinstance(value, dict):
        return _strip_struct(value, t)
    if isinstance(t, mi.ListType) and isinstance(value, list):
        items = [_strip(item, t.item_type) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def _member_for(value: Any, union: mi.UnionType) -> mi.Type:
    """The struct of ``union`` that the object ``value`` would decode as (by its tag, or the one
    untagged struct); the union itself otherwise (nothing inside is looked at: no client
    field today is a list inside a union)."""
    if not isinstance(value, dict):
        return union
    structs = [m for m in union.types if isinstance(m, mi.StructType)]
    for member in structs:
        if member.tag_field is not None and value.get(member.tag_field) == member.tag:
            return member
    untagged = [m for m in structs if m.tag_field is None]
    return untagged[0] if len(untagged) == 1 else union


def _strip_struct(value: dict[str, Any], t: mi.StructType) -> dict[str, Any]:
    out: dict[str, Any] | None = None
    for field in t.fields:
        name = field.encode_name
        if name not in value:
            continue
        item = value[name]
        if item is None:
            if _admits_null(field.type):
                continue
            # Not given: an optional field takes its default, a required one is reported
            # missing by the type check.
            out = out if out is not None else dict(value)
            del out[name]
            continue
        stripped = _strip(item, field.type)
        if stripped is not item:
            out = out if out is not None else dict(value)
            out[name] = stripped
    return value if out is None else out


def unset_absent_nulls(record: msgspec.Struct) -> None:
    """For records built in Python: a ``None`` given for a field that has no null of its own
    becomes ``UNSET`` (left off the wire), as a null on the wire would."""
    t = _info(type(record))
    assert isinstance(t, mi.StructType)
    for field in t.fields:
        absent = not field.required and getattr(record, field.name) is None
        if absent and not _admits_null(field.type):
            force_setattr(record, field.name, msgspec.UNSET)
