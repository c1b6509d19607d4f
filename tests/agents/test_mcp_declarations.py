"""Local MCP server declarations (pure): checked at once, the allow/deny lists, approvals per
server and per tool, and the one naming rule for collisions."""

from __future__ import annotations

from typing import Any

import pytest

from voxwire.agents import MCPServerHTTP, MCPServerStdio, RealtimeAgent
from voxwire.agents.mcp_local import exposed_names
from voxwire.exceptions import ConfigurationError


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "has space"}, "1-32 letters"),
        ({"allowed_tools": "weather"}, "expected a list of tool names"),
        ({"blocked_tools": [""]}, "expected a list of tool names"),
        ({"timeout_s": 0}, "seconds > 0 or None"),
        ({"needs_approval": "yes"}, "a mapping of tool names"),
        ({"input_guardrails": [print]}, "tool input guardrail"),
        ({"command": ""}, "command must be text"),
    ],
)
def test_a_bad_stdio_declaration_is_refused_at_once(options: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"name": "shop", "command": "python"} | options
    with pytest.raises(ConfigurationError, match=message):
        MCPServerStdio(**arguments)


def test_a_bad_http_declaration_and_duplicate_server_names_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="expected http"):
        MCPServerHTTP(name="shop", url="ftp://example.test")
    server = MCPServerStdio(name="shop", command="python")
    with pytest.raises(ConfigurationError, match="two MCP servers named 'shop'"):
        RealtimeAgent(name="agent", mcp_servers=[server, MCPServerStdio(name="shop", command="x")])
    with pytest.raises(ConfigurationError, match="expected an MCPServerStdio"):
        RealtimeAgent(name="agent", mcp_servers=["python server.py"])  # type: ignore[list-item]
    assert "secret" not in repr(
        MCPServerHTTP(
            name="shop", url="http://127.0.0.1:1/mcp", headers={"Authorization": "secret"}
        )
    )


def test_allow_deny_and_approval_per_server_and_per_tool() -> None:
    server = MCPServerStdio(
        name="shop", command="python", allowed_tools=["a", "b"], blocked_tools=["b"]
    )
    assert [t for t in "abc" if server.offers(t)] == ["a"]
    assert MCPServerStdio(name="s", command="python", needs_approval=True).approval_for("x")
    per_tool = MCPServerStdio(name="s", command="python", needs_approval={"reserve": True})
    assert (per_tool.approval_for("reserve"), per_tool.approval_for("stock")) == (True, False)


def test_names_keep_their_own_unless_taken_then_every_one_is_prefixed() -> None:
    listings = [("local", ["weather", "add", "a.b"]), ("remote", ["weather", "search"])]
    assert exposed_names({"add", "transfer_to_billing"}, listings) == {
        ("local", "weather"): "local__weather",
        ("local", "add"): "local__add",  # a function tool has "add": it keeps it
        ("local", "a.b"): "a_b",  # characters a function name cannot hold
        ("remote", "weather"): "remote__weather",
        ("remote", "search"): "search",
    }
    # A prefixed name that is taken too: that tool is left out.
    assert exposed_names({"x", "s__x"}, [("s", ["x"])]) == {}
    assert exposed_names(set(), [("s", ["t" * 80])]) == {("s", "t" * 80): "t" * 64}
