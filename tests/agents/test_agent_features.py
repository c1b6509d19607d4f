"""The pure parts of input guardrails and finished tools: the response hold (what
``create_response`` goes on the wire, what the application sees), the error message
precedence, and the declarations (context annotations, generator tools, tool guardrails)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from voxwire.agents import (
    GuardrailResult,
    RealtimeAgent,
    ResponseHold,
    ToolCall,
    ToolContext,
    ToolErrorInfo,
    function_tool,
    progress,
    tool_input_guardrail,
)
from voxwire.agents.tool_guardrail import error_message
from voxwire.exceptions import ConfigurationError
from voxwire.protocol.config import SemanticVad, ServerVad, SessionConfig


def detection(config: SessionConfig | None) -> Any:
    assert config is not None
    assert isinstance(config.audio, msgspec.Struct)
    return config.audio.input.turn_detection  # type: ignore[union-attr]


def vad(**fields: Any) -> SessionConfig:
    return SessionConfig.from_mapping({"audio": {"input": {"turn_detection": fields}}})


def test_the_first_config_holds_responses_only_for_an_agent_with_input_guardrails() -> None:
    hold = ResponseHold(SessionConfig())
    unset = SessionConfig(instructions="x")
    assert hold.first_config(unset, holding=False) is unset
    # Left to the server's default (server VAD): made explicit, with create_response off.
    assert detection(hold.first_config(unset, holding=True)) == ServerVad(create_response=False)
    semantic = vad(type="semantic_vad", eagerness="low")
    assert detection(hold.first_config(semantic, holding=True)) == SemanticVad(
        eagerness="low", create_response=False
    )
    off = SessionConfig.from_mapping({"audio": {"input": {"turn_detection": None}}})
    assert hold.first_config(off, holding=True) is off  # the application asks for every response


def test_application_updates_are_noted_and_held() -> None:
    hold = ResponseHold(vad(type="server_vad", create_response=False))
    assert hold.wanted is False
    sent = hold.application_update(vad(type="server_vad", threshold=0.7), holding=True)
    assert detection(sent) == ServerVad(threshold=0.7, create_response=False)
    assert hold.wanted is True  # the application's update did not say: the server's default
    not_held = vad(type="server_vad", create_response=True)
    assert hold.application_update(not_held, holding=False) is not_held


def test_a_switch_turns_create_response_off_and_back() -> None:
    hold = ResponseHold(SessionConfig())
    update = SessionConfig(instructions="new agent")
    current = vad(type="server_vad", silence_duration_ms=300, create_response=True)
    held = hold.switch_config(update, holding=True, was_holding=False, current=current)
    assert held.instructions == "new agent"
    assert detection(held) == ServerVad(silence_duration_ms=300, create_response=False)
    back = hold.switch_config(
        update,
        holding=False,
        was_holding=True,
        current=vad(type="server_vad", silence_duration_ms=300, create_response=False),
    )
    assert detection(back) == ServerVad(silence_duration_ms=300, create_response=True)
    # No change of holding, or turn detection off on the server: the update is left alone.
    assert hold.switch_config(update, holding=True, was_holding=True, current=current) is update
    assert hold.switch_config(update, holding=True, was_holding=False, current=None) is update


def test_the_view_shows_the_applications_setting() -> None:
    hold = ResponseHold(SessionConfig())
    wire = vad(type="server_vad", create_response=False)
    assert detection(hold.view(wire)).create_response is True
    assert hold.view(None) is None


def call() -> ToolCall:
    return ToolCall(
        call_id="c1", name="book", arguments={}, raw_arguments="{}", agent=RealtimeAgent(name="a")
    )


def test_error_messages_per_call_then_formatter_then_default() -> None:
    info = ToolErrorInfo(kind="rejected", call=call(), default_message="default")
    assert error_message("mine", lambda i: "formatted", info) == "mine"
    assert error_message(None, lambda i: f"formatted {i.kind}", info) == "formatted rejected"
    assert error_message(None, lambda i: None, info) == "default"
    assert error_message(None, None, info) == "default"
    with pytest.raises(TypeError, match="expected text or None"):
        error_message(None, lambda i: 42, info)  # type: ignore[arg-type,return-value]


def test_context_annotations_generators_and_tool_guardrails_are_recognised() -> None:
    @function_tool
    async def lookup(ctx: ToolContext[dict[str, int]], city: str) -> AsyncIterator[Any]:
        yield progress("looking")
        yield ctx.context[city]

    assert lookup.takes_context
    assert lookup.is_generator
    assert not lookup.is_coroutine
    assert list(lookup.parameters["properties"]) == ["city"]

    @tool_input_guardrail(before_approval=True, name="early")
    def early(request: ToolCall) -> GuardrailResult:
        return GuardrailResult(False)

    assert (early.name, early.before_approval) == ("early", True)
    with pytest.raises(ConfigurationError, match="must come first"):

        @function_tool
        def misplaced(city: str, ctx: ToolContext[None]) -> str:
            return city
