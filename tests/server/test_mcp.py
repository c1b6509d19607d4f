"""Hosted MCP on the local server: the tools a scenario declares are listed when a session
configures the server, and rules call them — at once, after an approval, or failing. Every
frame is checked against the official types by the client helper."""

from __future__ import annotations

from typing import Any

import pytest

from voxwire.exceptions import ConfigurationError
from voxwire.server import Scenario

from .helpers import MCP_DOCS, Client, client_of, run, serving

SCENARIO = MCP_DOCS

LISTED = [
    "session.updated",
    "conversation.item.added",
    "mcp_list_tools.in_progress",
    "mcp_list_tools.completed",
    "conversation.item.done",
]


def mcp_tool(label: str = "docs", **options: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": label, "server_url": "https://mcp.test/x", **options}


async def answer(client: Client, request_id: str, approve: bool, **item: Any) -> None:
    """Send the ``mcp_approval_response`` item for ``request_id``."""
    await client.send(
        {
            "type": "conversation.item.create",
            "event_id": "evt_answer",
            "item": {
                "type": "mcp_approval_response",
                "id": "approval_1",
                "approval_request_id": request_id,
                "approve": approve,
                **item,
            },
        }
    )


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


async def configure(client: Client, *tools: dict[str, Any]) -> list[dict[str, Any]]:
    """Configure ``tools``; every event up to the last listing's ``conversation.item.done``."""
    await client.send(
        {"type": "session.update", "session": {"type": "realtime", "tools": list(tools)}}
    )
    events = await client.until("session.updated")
    for _ in tools:
        events += await client.until("conversation.item.done")
    return events


def test_configuring_an_mcp_server_lists_its_allowed_tools_once() -> None:
    async def body() -> None:
        async with serving(scenario=SCENARIO) as server, client_of(server) as client:
            events = await configure(client, mcp_tool(allowed_tools=["search"]))
            assert types(events) == LISTED
            assert events[1]["item"]["tools"] == []
            (tool,) = events[-1]["item"]["tools"]
            assert (tool["name"], tool["annotations"]) == ("search", {"readOnlyHint": True})
            assert events[-1]["item"]["server_label"] == "docs"
            # The same configuration again lists nothing; a new filter lists again.
            updated = await client.update(tools=[mcp_tool(allowed_tools=["search"])])
            assert updated["type"] == "session.updated"
            events = await configure(client, mcp_tool(allowed_tools={"read_only": False}))
            assert types(events) == LISTED
            assert [t["name"] for t in events[-1]["item"]["tools"]] == ["publish", "delete_page"]

    run(body())


def test_a_server_the_scenario_cannot_reach_fails_its_listing() -> None:
    async def body() -> None:
        async with serving(scenario=SCENARIO) as server, client_of(server) as client:
            events = await configure(client, mcp_tool("broken"), mcp_tool("nowhere"))
            assert types(events).count("mcp_list_tools.failed") == 2
            done = [e for e in events if e["type"] == "conversation.item.done"]
            assert [e["item"]["tools"] for e in done] == [[], []]

    run(body())


def test_a_call_that_needs_no_approval_runs_and_the_next_response_uses_its_output() -> None:
    async def body() -> None:
        async with serving(scenario=SCENARIO) as server, client_of(server) as client:
            await configure(client, mcp_tool(require_approval="never"))
            await client.say("search the docs")
            events = await client.respond()
            assert types(events)[1:] == [
                "response.output_item.added",
                "conversation.item.added",
                "response.mcp_call_arguments.delta",
                "response.mcp_call_arguments.done",
                "response.mcp_call.in_progress",
                "response.mcp_call.completed",
                "response.output_item.done",
                "conversation.item.done",
                "rate_limits.updated",
                "response.done",
            ]
            call = events[-1]["response"]["output"][0]
            assert (call["type"], call["output"], call["arguments"]) == (
                "mcp_call",
                "Three pages match.",
                '{"q":"x"}',
            )
            events = await client.respond()
            assert events[-1]["response"]["output"][0]["content"][0]["text"] == (
                "Found: Three pages match."
            )

    run(body())


def test_a_call_that_needs_approval_waits_for_it_and_then_runs() -> None:
    async def body() -> None:
        async with serving(scenario=SCENARIO) as server, client_of(server) as client:
            # require_approval left out: "always", as on the hosted service.
            await configure(client, mcp_tool())
            await client.say("search the docs")
            events = await client.respond()
            (request,) = events[-1]["response"]["output"]
            assert request["type"] == "mcp_approval_request"
            assert (request["name"], request["server_label"]) == ("search", "docs")
            assert "response.mcp_call.in_progress" not in types(events)
            await answer(client, request["id"], True)
            events = await client.until("response.done")  # the server goes on by itself
            call = events[-1]["response"]["output"][0]
            assert (call["approval_request_id"], call["output"]) == (
                request["id"],
                "Three pages match.",
            )

    run(body())


def test_a_declined_approval_lets_the_responder_answer() -> None:
    async def body() -> None:
        async with serving(scenario=SCENARIO) as server, client_of(server) as client:
            await configure(
                client, mcp_tool(require_approval={"always": {"tool_names": ["search"]}})
            )
            await client.say("search the docs")
            request = (await client.respond())[-1]["response"]["output"][0]
            await answer(client, request["id"], False, reason="not now")
            events = await client.until("response.done")
            text = events[-1]["response"]["output"][0]["content"][0]["text"]
            assert text == "Found: The user declined this tool call; it was not run."

    run(body())


def test_an_approval_response_for_no_request_is_an_error() -> None:
    async def body() -> None:
        async with serving(scenario=SCENARIO) as server, client_of(server) as client:
            await answer(client, "nope", True)
            (error,) = await client.until("error")
            assert error["error"]["param"] == "item.approval_request_id"
            assert error["error"]["event_id"] == "evt_answer"

    run(body())


def test_failing_and_unknown_tools_fail_their_calls() -> None:
    async def body() -> None:
        async with serving(scenario=SCENARIO) as server, client_of(server) as client:
            await configure(client, mcp_tool(require_approval="never"))
            await client.say("delete page one")
            events = await client.respond()
            assert "response.mcp_call.failed" in types(events)
            call = events[-1]["response"]["output"][0]
            assert call["error"] == {"type": "tool_execution_error", "message": "permission denied"}
            events = await client.respond()
            assert events[-1]["response"]["output"][0]["content"][0]["text"] == (
                "Sorry: permission denied"
            )
            await client.say("ghost")
            call = (await client.respond())[-1]["response"]["output"][0]
            assert "not found" in call["error"]["message"]

    run(body())


def test_an_mcp_rule_applies_only_while_its_server_is_configured() -> None:
    async def body() -> None:
        async with serving(scenario=SCENARIO) as server, client_of(server) as client:
            await client.say("search the docs")
            events = await client.respond()
            assert events[-1]["response"]["output"][0]["type"] == "message"

    run(body())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"mcp_servers": []}, "must be an object"),
        ({"mcp_servers": {"a": {"tools": [{"name": "x", "extra": 1}]}}}, "unknown keys"),
        ({"mcp_servers": {"a": {"tools": [{}]}}}, "needs a 'name'"),
        ({"mcp_servers": {"a": {"tools": "x"}}}, "must be a list"),
        ({"mcp_servers": {"a": {"list_error": 3}}}, "'list_error' must be a string"),
        ({"mcp_servers": {"a": {"url": "x"}}}, "'tools' and/or 'list_error'"),
        ({"mcp_servers": {"a": {"tools": [{"name": "x", "output": 3}]}}}, "strings"),
        ({"rules": [{"mcp": {"name": "x"}}]}, "'server_label' and a 'name'"),
    ],
)
def test_bad_mcp_scenarios_say_what_is_wrong(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Scenario.from_mapping(data)
