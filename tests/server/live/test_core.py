"""The local server's Live rules, pure: client events in, server events and commands out (no
sockets, no clocks). Every event it makes validates against ``openai.types.live``."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.live import ServerEvent
from pydantic import TypeAdapter

from voxwire.live import client_events as ce
from voxwire.live import server_events as se
from voxwire.live.codec import decode_client_event, encode_event
from voxwire.live.objects import LiveSessionConfig
from voxwire.protocol.server_events import ProtocolErrorEvent
from voxwire.server.core.ids import ServerIds
from voxwire.server.live.core.session import Close, ContinueBackend, LiveServerSession, Speak

OFFICIAL: TypeAdapter[Any] = TypeAdapter(ServerEvent)
RESPONSES = {
    "type": "responses",
    "responses": {
        "model": "gpt-5.5",
        "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
    },
}


def checked(outs: list[Any]) -> list[Any]:
    for out in outs:
        if isinstance(out, se.LiveErrorEvent | se.SessionStarted | se.ResponseEvent) or hasattr(
            out, "__struct_config__"
        ):
            OFFICIAL.validate_json(encode_event(out))
    return outs


def started(delegation: dict[str, Any] | None = None) -> LiveServerSession:
    core = LiveServerSession(ServerIds(seed=7))
    raw: dict[str, Any] = {"model": "gpt-live-1"}
    if delegation is not None:
        raw["delegation"] = delegation
    import msgspec

    start = ce.SessionStart(event_id="s1", session=msgspec.convert(raw, LiveSessionConfig))
    [event] = checked(core.receive(start, 1_700_000_000.0, 0))
    assert isinstance(event, se.SessionStarted)
    assert event.session.expires_at == 1_700_003_600
    return core


def error_of(outs: list[Any]) -> Any:
    [event] = checked(outs)
    assert isinstance(event, se.LiveErrorEvent)
    return event.error


def test_defaults_and_tools() -> None:
    core = started(RESPONSES)
    assert (core.voice, core.audio_format.rate, core.target) == ("marin", 24000, "responses")
    assert core.tool_names() == ("get_weather",)
    assert started().tool_names() == ()


def test_start_rules() -> None:
    core = LiveServerSession(ServerIds(seed=1))
    assert (
        error_of(core.receive(ce.InputAudioMute(event_id="m"), 0.0, 0)).code
        == "session_not_started"
    )
    for raw, param in [
        ({"model": "gpt-realtime"}, "session.model"),
        (
            {"model": "gpt-live-1", "delegation": {"type": "responses"}},
            "session.delegation.responses.model",
        ),
        (
            {"model": "gpt-live-1", "audio": {"format": {"type": "audio/pcmu", "rate": 8000}}},
            "session.audio.format",
        ),
    ]:
        event = decode_client_event(
            encode_event(ce.SessionStart(session=LiveSessionConfig(model="x"))).replace(
                '{"model":"x"}', __import__("json").dumps(raw)
            )
        )
        assert error_of(core.receive(event, 0.0, 0)).param == param  # type: ignore[arg-type]
    core = started()
    again = ce.SessionStart(session=LiveSessionConfig(model="gpt-live-1"))
    assert error_of(core.receive(again, 0.0, 0)).code == "session_already_started"
    bad = decode_client_event("{")
    assert isinstance(bad, ProtocolErrorEvent)
    assert error_of(core.receive(bad, 0.0, 0)).code == "invalid_event"


def test_update_rules() -> None:
    core = started(RESPONSES)
    update = ce.SessionUpdate
    assert (
        error_of(core.receive(update(session={"voice": "x"}), 0.0, 0)).code == "unknown_parameter"
    )
    assert (
        error_of(core.receive(update(session={"model": "x"}), 0.0, 0)).code == "immutable_parameter"
    )
    owner = core.receive(update(session={"delegation": {"type": "client"}}), 0.0, 0)
    assert "owner" in error_of(owner).message
    wrong = core.receive(
        update(session={"delegation": {"type": "responses", "acknowledgement_delay_ms": "soon"}}),
        0.0,
        0,
    )
    assert "invalid session.update" in error_of(wrong).message
    [done] = checked(
        core.receive(
            update(
                event_id="u",
                session={
                    "delegation": {"type": "responses", "responses": {"instructions": "Be exact."}},
                    "triggers": [],
                },
            ),
            0.0,
            0,
        )
    )
    assert isinstance(done, se.SessionUpdated)
    backend = done.session.delegation.responses  # type: ignore[union-attr]
    assert (backend.model, backend.instructions) == ("gpt-5.5", "Be exact.")


def test_client_delegation_and_appends() -> None:
    core = started()
    delegation, events = core.delegate("weather?", 900, [("get_weather", "{}")])
    checked(events)
    assert [type(e) for e in events] == [se.DelegationCreated]  # client: no backend stream
    wrong = ce.CommentaryAppend(content="x", delegation_id="deleg_nope")
    assert "no delegation has id" in error_of(core.receive(wrong, 0.0, 0)).message
    thinking = core.receive(ce.ThinkingAppend(content="hm", delegation_id=delegation.id), 0.0, 500)
    assert [type(o) for o in checked(thinking)] == [se.ThinkingAppended]
    spoken = core.receive(
        ce.CommentaryAppend(content="Sunny.", delegation_id=delegation.id), 0.0, 500
    )
    assert spoken[1] == Speak("Sunny.", delegation.id)
    assert delegation.answered
    assert (
        "requires Responses delegation"
        in error_of(core.receive(ce.ResponseCreate(), 0.0, 0)).message
    )
    fixture = checked(core.receive(ce.OutputAudioFixturePlay(audio=b"\x00" * 4800), 0.0, 1000))
    assert [type(o) for o in fixture] == [
        se.OutputAudioFixturePlaying,
        se.OutputAudioDelta,
        se.OutputAudioFixturePlayed,
    ]
    assert (fixture[1].start_ms, fixture[1].end_ms) == (1000, 1100)
    odd = core.receive(ce.OutputAudioFixturePlay(audio=b"\x00" * 3), 0.0, 0)
    assert error_of(odd).param == "audio"
    refused = error_of(core.receive(ce.DecisionCreate(event_id="d"), 0.0, 0))
    assert "requires Decisions delegation" in refused.message


def test_responses_delegation_round() -> None:
    core = started(RESPONSES)
    delegation, events = core.delegate("weather?", 900, [("get_weather", '{"city": "Paris"}')])
    kinds = [
        e.event["type"] if isinstance(e, se.ResponseEvent) else e.type for e in checked(events)
    ]
    assert kinds == ["session.delegation.created", "response.created", "response.output_item.done"]
    [(call_id, _, _)] = delegation.calls
    create = ce.ResponseCreate(event_id="c")
    assert "no delegated response is waiting" in error_of(core.receive(create, 0.0, 0)).message
    item = ce.ResponseItemCreate
    assert error_of(core.receive(item(item={"type": "message"}), 0.0, 0)).param == "item.type"
    unknown = item(item={"type": "function_call_output", "call_id": "call_x", "output": "1"})
    assert error_of(core.receive(unknown, 0.0, 0)).param == "item.call_id"
    answer = item(item={"type": "function_call_output", "call_id": call_id, "output": {"t": 1}})
    assert core.receive(answer, 0.0, 0) == []
    assert core.receive(create, 0.0, 0) == [ContinueBackend(delegation.id)]
    with_id = ce.ThinkingAppend(content="x", delegation_id=delegation.id)
    assert (
        "not accepted with Responses delegation" in error_of(core.receive(with_id, 0.0, 0)).message
    )


def test_mute_and_close() -> None:
    core = started()
    assert isinstance(checked(core.receive(ce.InputAudioMute(), 0.0, 0))[0], se.InputAudioMuted)
    assert core.muted
    assert isinstance(checked(core.receive(ce.InputAudioUnmute(), 0.0, 0))[0], se.InputAudioUnmuted)
    closed, close = core.receive(ce.SessionClose(event_id="x"), 1_700_000_002.5, 0)
    checked([closed])
    assert (closed.reason, closed.usage.seconds, close) == ("close_requested", 2.5, Close())
    assert error_of(core.receive(ce.InputAudioMute(), 0.0, 0)).code == "session_not_started"


@pytest.mark.parametrize("kind", sorted(ce.CLIENT_EVENT_TYPES))
def test_every_client_event_has_an_answer_or_is_the_pumps(kind: str) -> None:
    from voxwire.server.live.core.session import _HANDLERS

    handled = {str(c.__struct_config__.tag) for c in _HANDLERS} | {"session.start"}
    assert kind in handled | {"session.input_audio.append"}  # the pump's: turn detection
