"""HostedMCPTool: checked at once, sent in the GA ``mcp`` tool shape (official types agree)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from openai.types.realtime import RealtimeToolsConfigUnion
from pydantic import TypeAdapter

from voxwire.agents import HostedMCPTool, RealtimeAgent, agent_session_config, resolve_agent
from voxwire.exceptions import ConfigurationError


def test_the_declaration_is_the_ga_mcp_tool_with_filters_in_their_wire_shape() -> None:
    tool = HostedMCPTool(
        server_label="docs",
        server_url="https://mcp.example.test",
        authorization="token",
        headers={"X-Team": "voice"},
        allowed_tools={"tool_names": ("search", "publish"), "read_only": True},
        require_approval={"always": ["publish"], "never": {"read_only": True}},
        server_description="The product docs",
    )
    wire = msgspec.to_builtins(tool.declaration())
    assert wire == {
        "type": "mcp",
        "server_label": "docs",
        "server_url": "https://mcp.example.test",
        "authorization": "token",
        "headers": {"X-Team": "voice"},
        "server_description": "The product docs",
        "allowed_tools": {"tool_names": ["search", "publish"], "read_only": True},
        "require_approval": {"always": {"tool_names": ["publish"]}, "never": {"read_only": True}},
    }
    TypeAdapter(RealtimeToolsConfigUnion).validate_python(wire)  # the official shape
    assert "token" not in repr(tool)  # credentials stay out of logs


def test_an_agent_sends_its_hosted_mcp_tools() -> None:
    tool = HostedMCPTool(
        server_label="cal",
        connector_id="connector_googlecalendar",
        require_approval="never",
        allowed_tools=["list_events"],
    )
    agent = RealtimeAgent(name="Assistant", tools=[tool])
    config = agent_session_config(None, asyncio.run(resolve_agent(agent)))
    assert msgspec.to_builtins(config.tools) == [
        {
            "type": "mcp",
            "server_label": "cal",
            "connector_id": "connector_googlecalendar",
            "allowed_tools": ["list_events"],
            "require_approval": "never",
        }
    ]
    assert msgspec.to_builtins(agent_session_config(None, agent).tools) == msgspec.to_builtins(
        config.tools
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"server_label": ""}, "non-empty label"),
        ({"server_url": None}, "exactly one of server_url, connector_id, tunnel_id .got none"),
        ({"connector_id": "connector_gmail"}, "got server_url, connector_id"),
        ({"headers": {"X": 1}}, "headers must map text to text"),
        ({"allowed_tools": "search"}, "expected a list of tool names"),
        ({"allowed_tools": [""]}, "expected a list of tool names"),
        ({"allowed_tools": {"names": ["a"]}}, "tool_names .a list of names."),
        ({"allowed_tools": {"read_only": "yes"}}, "read_only .true or false."),
        ({"require_approval": "sometimes"}, "expected 'always', 'never'"),
        ({"require_approval": {"maybe": ["a"]}}, "expected 'always', 'never'"),
        ({"require_approval": {"always": "search"}}, r"require_approval\['always'\]"),
    ],
)
def test_bad_declarations_say_what_is_wrong(options: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"server_label": "docs", "server_url": "https://x.test", **options}
    with pytest.raises(ConfigurationError, match=message):
        HostedMCPTool(**arguments)
