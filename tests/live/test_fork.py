"""A fork's session.start (``/v1/live/sessions/{id}/fork``): overrides only, checked locally,
validated against ``openai.types.live.ForkClientEvent``; the server side decodes it on a fork
connection (and only there); the state machine is a primary connection's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.live import ForkSessionStartEvent
from pydantic import TypeAdapter

from tests.live.samples import SERVER
from voxwire.exceptions import ConfigurationError, InvalidState
from voxwire.live import (
    ForkSessionConfig,
    LiveProtocol,
    decode_client_event,
    decode_fork_client_event,
    encode_event,
    unknown_fields,
)
from voxwire.live.client_events import ForkSessionStart, InputAudioMute, SessionStart
from voxwire.protocol.ids import CounterIds
from voxwire.protocol.server_events import ProtocolErrorEvent


@pytest.mark.parametrize(
    "overrides",
    [
        None,
        {},
        {"store": False},
        {"audio": {"format": {"type": "audio/pcm", "rate": 16000}}},
        {"delegation": {"type": "responses", "responses": {"instructions": "Be exact."}}},
    ],
)
def test_fork_start_sends_overrides_only(overrides: dict[str, Any] | None) -> None:
    live = LiveProtocol(ids=CounterIds("f"))
    event_id = live.send_fork_start(overrides)
    assert live.state == "starting"
    [sent] = live.data_to_send()
    wire = json.loads(sent)
    assert wire == {"type": "session.start", "event_id": event_id, "session": overrides or {}}
    TypeAdapter(ForkSessionStartEvent).validate_python(wire)  # the official type takes it
    with pytest.raises(InvalidState, match="already sent"):
        live.send_fork_start()
    with pytest.raises(InvalidState, match="already sent"):
        live.send_session_start({"model": "gpt-live-1"})
    live.receive_text(json.dumps({**SERVER["session.started"], "client_event_id": event_id}))
    live.events_received()
    assert live.state == "active"
    assert live.delegation_target == "responses"  # from the stored session, as reported
    assert live.pending_event_ids() == {}


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"model": "gpt-live-1"}, "does not take 'model'"),
        ({"instructions": "x", "voice": "marin"}, "does not take 'instructions', 'voice'"),
        ({"store": "yes"}, "invalid fork overrides"),
        ({"audio": {"format": {"type": "audio/pcm", "rate": 8000}}}, "invalid fork overrides"),
        (["store"], "a mapping, got list"),
    ],
)
def test_bad_overrides_are_refused_before_anything_is_queued(overrides: Any, says: str) -> None:
    live = LiveProtocol()
    with pytest.raises(ConfigurationError, match=says):
        live.send_fork_start(overrides)
    assert live.state == "idle"
    assert live.data_to_send() == []


def test_a_fork_connection_decodes_its_own_session_start() -> None:
    frame = encode_event(ForkSessionStart(event_id="e1", session=ForkSessionConfig(store=True)))
    event = decode_fork_client_event(frame)
    assert isinstance(event, ForkSessionStart)
    assert event.session.store is True
    # on a primary connection the same frame lacks the model
    primary = decode_client_event(frame)
    assert isinstance(primary, ProtocolErrorEvent)
    assert "session.start" in primary.message
    # a primary start on a fork connection: the fields a fork does not take are kept, for the
    # server to refuse by name
    start = decode_fork_client_event(
        json.dumps({"type": "session.start", "session": {"model": "gpt-live-1"}})
    )
    assert isinstance(start, ForkSessionStart)
    assert unknown_fields(start) == {"session.model": "gpt-live-1"}
    # the other events decode as on a primary connection
    assert isinstance(
        decode_fork_client_event(json.dumps({"type": "session.input_audio.mute"})),
        InputAudioMute,
    )
    assert isinstance(decode_fork_client_event(b"\xff"), ProtocolErrorEvent)
    assert not isinstance(
        decode_client_event(json.dumps({"type": "session.start", "session": {"model": "m"}})),
        ProtocolErrorEvent,
    )
    assert SessionStart.__struct_config__.tag == ForkSessionStart.__struct_config__.tag
