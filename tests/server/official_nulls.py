"""Every optional field of every GA client event, read from the official ``openai`` types.

:func:`null_cases` walks the ``TypedDict`` params of ``openai.types.realtime`` (the request side
of ``RealtimeClientEventParam``) and yields one case per optional field: where it sits, and
whether ``null`` there has a meaning of its own — the official type admits ``None``
(``Optional``), or the field's documentation says to set it to ``null`` (``noise_reduction``,
``transcription``: "can be set to `null` to turn off"). Nested objects are entered when their
required keys are all literals (``type``), so that a skeleton of them can be built.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import typing_extensions
from openai.types.realtime import RealtimeClientEventParam

__all__ = ["NullCase", "event_types", "null_cases"]

_WRAPPERS = (
    typing_extensions.Required,
    typing_extensions.NotRequired,
    typing_extensions.Annotated,
)


@dataclass(frozen=True)
class NullCase:
    """``path`` (keys from the event's top) set to null inside ``skeleton``."""

    event_type: str
    path: tuple[str, ...]
    skeleton: dict[str, Any]  # the event with the literal-only parents of ``path``
    meaningful: bool  # null is a value of its own (kept), not "not given"

    @property
    def id(self) -> str:
        return f"{self.event_type}:{'.'.join(self.path)}"

    def event(self) -> dict[str, Any]:
        """The event with ``null`` at ``path``."""
        event = _deep_copy(self.skeleton)
        node = event
        for key in self.path[:-1]:
            node = node[key]
        node[self.path[-1]] = None
        return event


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    return value


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    required = False
    while get_origin(annotation) in _WRAPPERS:
        if get_origin(annotation) is typing_extensions.Required:
            required = True
        annotation = get_args(annotation)[0]
    return annotation, required


def _members(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) in (Union, types.UnionType):
        return get_args(annotation)
    return (annotation,)


@cache
def _field_docs(td: type) -> dict[str, str]:
    """The docstring under each field of a TypedDict (from its source)."""
    docs: dict[str, str] = {}
    body = ast.parse(textwrap.dedent(inspect.getsource(td))).body[0]
    assert isinstance(body, ast.ClassDef)
    for field, doc in zip(body.body, body.body[1:], strict=False):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)
        ):
            docs[field.target.id] = doc.value.value
    return docs


def _literal_skeleton(td: type) -> dict[str, Any] | None:
    """The required keys of ``td`` (and its ``type``, the discriminator) filled with their first
    literal value; None if a required one is not a literal (it cannot be built blind)."""
    skeleton: dict[str, Any] = {}
    for key, annotation in get_type_hints(td, include_extras=True).items():
        inner, required = _unwrap(annotation)
        literal = get_origin(inner) is Literal
        if required and not literal:
            return None
        if literal and (required or key == "type"):
            skeleton[key] = get_args(inner)[0]
    return skeleton


def _walk(
    td: type, event_type: str, prefix: tuple[str, ...], top: dict[str, Any]
) -> Iterator[NullCase]:
    docs = _field_docs(td)
    for key, annotation in get_type_hints(td, include_extras=True).items():
        inner, required = _unwrap(annotation)
        members = _members(inner)
        path = (*prefix, key)
        if not required:
            meaningful = type(None) in members or "`null`" in docs.get(key, "")
            yield NullCase(event_type, path, _deep_copy(top), meaningful)
        for member in members:
            if not typing_extensions.is_typeddict(member):
                continue
            skeleton = _literal_skeleton(member)
            if skeleton is None or (key == "session" and skeleton.get("type") != "realtime"):
                continue  # the local server serves realtime sessions only
            nested = _deep_copy(top)
            node = nested
            for step in prefix:
                node = node[step]
            node[key] = {**node.get(key, {}), **skeleton}
            yield from _walk(member, event_type, path, nested)


def _events() -> dict[str, type]:
    found = {}
    for td in get_args(RealtimeClientEventParam):
        kind = get_args(_unwrap(get_type_hints(td, include_extras=True)["type"])[0])[0]
        found[kind] = td
    return found


def event_types() -> list[str]:
    """The GA client event types, as the official union lists them."""
    return list(_events())


def null_cases() -> list[NullCase]:
    """One case per optional field of every client event; duplicates (a field reached through
    two members of a union, such as both VAD kinds) are kept once per skeleton."""
    cases: dict[tuple[str, str], NullCase] = {}
    for kind, td in _events().items():
        for case in _walk(td, kind, (), {"type": kind}):
            cases.setdefault((case.id, repr(case.skeleton)), case)
    return list(cases.values())
