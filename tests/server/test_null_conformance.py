"""``null`` in every optional field of every client event, generated from the official types.

For each case of :func:`official_nulls.null_cases` the event is sent twice to the local server
over a real websocket, each time on a fresh connection: once without the field and once with
``null`` there. Null without a meaning of its own must do exactly what leaving the field out
does (same events, same session, same response, same error if the event fails anyway); null
with a meaning (``turn_detection``, ``noise_reduction``, ``transcription``, ``tracing``,
``prompt``, ``metadata``…) must be accepted and, in the session, read back as null.
"""

from __future__ import annotations

from typing import Any

import pytest
from msgspec import UNSET

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import ResponseCreateParams, SessionConfig
from voxwire.server import RealtimeServer

from .helpers import Client, client_of, pcm_b64, run, serving
from .official_nulls import NullCase, event_types, null_cases

CASES = null_cases()
_ABSENT = object()

# The required fields of each event that are not literals: a valid value to build on.
REQUIRED: dict[str, dict[str, Any]] = {
    "conversation.item.create": {
        "item": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hello"}],
        }
    },
    "conversation.item.delete": {"item_id": "item_probe"},
    "conversation.item.retrieve": {"item_id": "item_probe"},
    "conversation.item.truncate": {"item_id": "item_probe", "content_index": 0, "audio_end_ms": 0},
    "input_audio_buffer.append": {"audio": pcm_b64(2400)},
}
# What goes first on the connection, so that the event has something to act on.
SETUP: dict[str, list[dict[str, Any]]] = {
    "conversation.item.delete": [
        {
            "type": "conversation.item.create",
            "item": {**REQUIRED["conversation.item.create"]["item"], "id": "item_probe"},
        }
    ],
    "input_audio_buffer.commit": [{"type": "input_audio_buffer.append", "audio": pcm_b64(4800)}],
}
SETUP["conversation.item.retrieve"] = SETUP["conversation.item.delete"]
SETUP["conversation.item.truncate"] = SETUP["conversation.item.delete"]
# Answered with an error naming "probe": everything the event caused has been sent before it.
PROBE = {"type": "conversation.item.retrieve", "item_id": "item_missing", "event_id": "probe"}


def _without(event: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    node = event
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return event


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return _ABSENT
        value = value[key]
    return value


def _project(event: dict[str, Any]) -> tuple[Any, ...]:
    """What an event says, without the ids that differ from one connection to the next."""
    kind = event["type"]
    if kind == "error":
        return (kind, event["error"].get("code"), event["error"].get("param"))
    if kind == "session.updated":
        session = {k: v for k, v in event["session"].items() if k not in ("id", "expires_at")}
        return (kind, repr(session))
    if kind == "response.done":
        response = event["response"]
        kept = ("status", "output_modalities", "max_output_tokens", "audio", "metadata")
        texts = [
            part.get("text") or part.get("transcript")
            for item in response["output"]
            for part in item.get("content", [])
        ]
        return (kind, repr({k: response.get(k) for k in kept}), repr(texts))
    if kind.startswith("conversation.item."):
        item = event.get("item", {})
        return (kind, item.get("type"), item.get("role"), item.get("status"))
    return (kind,)


async def _outcome(server: RealtimeServer, event: dict[str, Any]) -> list[dict[str, Any]]:
    """The events the server sends for ``event`` (after its setup), up to the probe's answer."""
    async with client_of(server) as client:
        for step in SETUP.get(event["type"], []):
            await client.send(step)
            if step["type"] == "conversation.item.create":
                await client.until("conversation.item.done")
        await client.send(event)
        if event["type"] == "response.create":
            events = await client.until_any(("response.done", "error"))
        else:
            events = []
        await client.send(PROBE)
        events += await _until_probe(client)
        return events


async def _until_probe(client: Client) -> list[dict[str, Any]]:
    events = []
    while True:
        events.append(await client.recv())
        if events[-1]["type"] == "error" and events[-1]["error"].get("event_id") == "probe":
            return events


def _base(case: NullCase) -> dict[str, Any]:
    return {**REQUIRED.get(case.event_type, {}), **case.event()}


def test_every_client_event_type_has_cases() -> None:
    assert {case.event_type for case in CASES} == set(event_types())
    assert len(event_types()) == 11


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_null_in_an_optional_field(case: NullCase) -> None:
    async def main() -> None:
        async with serving() as server:
            with_null = _base(case)
            without = _without(_base(case), case.path)
            got = await _outcome(server, with_null)
            expected = await _outcome(server, without)
        errors = [e for e in got if e["type"] == "error"]
        assert [_project(e) for e in errors] == [
            _project(e) for e in expected if e["type"] == "error"
        ], errors
        if not case.meaningful:
            assert [_project(e) for e in got] == [_project(e) for e in expected]
        elif case.event_type == "session.update":
            session = [e for e in got if e["type"] == "session.updated"][-1]["session"]
            assert _at(session, case.path[1:]) in (None, _ABSENT)

    run(main())


# --- the application side: None where the official types allow leaving a field out ------------


SESSION_CASES = [c for c in CASES if c.event_type == "session.update" and c.path[0] == "session"]


@pytest.mark.parametrize("case", SESSION_CASES, ids=[c.id for c in SESSION_CASES])
def test_session_config_takes_none_as_the_official_types_mean_it(case: NullCase) -> None:
    with_none = _config_or_error(case.event()["session"])
    without = _config_or_error(_without(case.event(), case.path)["session"])
    if case.meaningful:
        assert isinstance(with_none, SessionConfig)
        assert _at(with_none.to_wire(), case.path[1:]) is None
    else:
        assert with_none == without  # the same config, or the same error if it is incomplete


def _config_or_error(session: dict[str, Any]) -> SessionConfig | str:
    try:
        return SessionConfig.from_mapping(session)
    except ConfigurationError as exc:
        return str(exc)


def test_records_built_in_python_take_none_as_not_given() -> None:
    assert SessionConfig(instructions=None, tools=None) == SessionConfig()
    assert SessionConfig(instructions=None).to_wire() == {"type": "realtime"}
    # Null with a meaning stays a value: tracing off.
    assert SessionConfig(tracing=None).to_wire() == {"type": "realtime", "tracing": None}
    params = ResponseCreateParams(instructions=None, tools=None, max_output_tokens=None)
    assert params == ResponseCreateParams()
    assert params.instructions is UNSET
    assert ResponseCreateParams(metadata=None).metadata is None


def test_livekit_generate_reply_is_answered() -> None:
    """The frame LiveKit Agents' realtime plugin sends for a plain ``generate_reply()``."""

    async def main() -> None:
        async with serving() as server, client_of(server) as client:
            await client.say("hello")
            await client.send(
                {
                    "type": "response.create",
                    "event_id": "evt_livekit",
                    "response": {"instructions": None, "metadata": {"client_event_id": "x"}},
                }
            )
            events = await client.until_any(("response.done", "error"))
        assert events[-1]["type"] == "response.done", events[-1]
        assert events[-1]["response"]["status"] == "completed"
        assert events[-1]["response"]["metadata"] == {"client_event_id": "x"}

    run(main())


def test_a_wrong_type_is_still_an_invalid_type_naming_the_field() -> None:
    async def main() -> None:
        async with serving() as server, client_of(server) as client:
            await client.send(
                {"type": "response.create", "event_id": "e1", "response": {"tools": "get_weather"}}
            )
            error = (await client.until("error"))[-1]["error"]
        assert error["code"] == "invalid_type"
        assert error["param"] == "response.tools"
        assert "array" in error["message"] or "list" in error["message"], error["message"]
        assert error["event_id"] == "e1"

    run(main())
