"""Handoffs in scenarios: a rule hands off (a ``transfer_to_<agent>`` call with ``{}``), rules
scoped by instructions or tools answer as the agent the client switched to, over the wire and in
plain decisions; the scenario errors name the rule and the key."""

from __future__ import annotations

import json
from typing import Any

import pytest

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import FunctionCallItem, FunctionCallOutputItem, InputText, MessageItem
from voxwire.server import CallTool, RulesResponder, Say, Scenario, Turn
from voxwire.server.engines.responder import handoff_tool_name

from .helpers import client_of, run, serving

SCENARIO = Scenario.from_mapping(
    {
        "rules": [
            {"instructions": "triage", "match": "invoice|refund", "handoff": "Billing"},
            {
                "instructions": "billing",
                "after_handoff": "Billing",
                "say": "Billing here. You asked: {text}",
            },
            {"instructions": "billing", "match": "refund", "say": "Refunds take five days."},
            {"tools": ["lookup_order"], "match": "order", "say": "Orders desk."},
        ],
        "fallback": "Sorry, I cannot help with that.",
    }
)


def function(name: str) -> dict[str, Any]:
    return {"type": "function", "name": name, "description": name, "parameters": {}}


TRIAGE = {"instructions": "You are the triage agent.", "tools": [function("transfer_to_billing")]}
BILLING = {"instructions": "You are the Billing agent.", "tools": [function("lookup_invoice")]}


def test_handoff_then_the_new_agent_answers_over_the_wire() -> None:
    async def body() -> None:
        async with serving(scenario=SCENARIO) as server, client_of(server) as client:
            assert (await client.update(**TRIAGE))["type"] == "session.updated"
            await client.say("I have a question about my invoice")
            done = (await client.respond())[-1]["response"]
            (call,) = done["output"]
            assert call["type"] == "function_call"
            assert call["name"] == "transfer_to_billing"
            assert call["arguments"] == "{}"
            # The client switches agent, as the agents SDKs do on a handoff.
            await client.send(
                {
                    "type": "conversation.item.create",
                    "item": {
                        "type": "function_call_output",
                        "call_id": call["call_id"],
                        "output": json.dumps({"assistant": "Billing"}),
                    },
                }
            )
            await client.until("conversation.item.done")
            assert (await client.update(**BILLING))["type"] == "session.updated"
            done = (await client.respond())[-1]["response"]
            text = done["output"][0]["content"][0]["text"]
            assert text == "Billing here. You asked: I have a question about my invoice"
            # The billing agent answers its own questions; the triage rule (same words) is out
            # of scope now, so there is no second handoff.
            await client.say("and a refund?")
            done = (await client.respond())[-1]["response"]
            assert done["output"][0]["content"][0]["text"] == "Refunds take five days."

    run(body())


def turn(text: str, instructions: str, tools: list[str], *extra: Any) -> Turn:
    user = MessageItem(id="u1", role="user", content=[InputText(text=text)])
    return Turn(items=[user, *extra], instructions=instructions, tools=tools, tool_choice="auto")


def test_scopes_decide_which_agent_answers() -> None:
    responder = RulesResponder(SCENARIO)
    # Triage without the transfer tool declared cannot hand off: the fallback answers.
    assert responder.decide(turn("my invoice", "triage", [])) == [
        Say("Sorry, I cannot help with that.")
    ]
    assert responder.decide(turn("my invoice", "Triage agent", ["transfer_to_billing"])) == [
        CallTool("transfer_to_billing", "{}")
    ]
    # Billing's instructions, same words: billing's rules, not the handoff.
    assert responder.decide(turn("a refund", "BILLING", ["transfer_to_billing"])) == [
        Say("Refunds take five days.")
    ]
    # Scoped by tools: only an agent declaring lookup_order gets the orders rule.
    assert responder.decide(turn("my order", "x", ["lookup_order"])) == [Say("Orders desk.")]
    assert responder.decide(turn("my order", "x", [])) == [Say("Sorry, I cannot help with that.")]
    # after_handoff: true matches any handoff's output, not another tool's.
    any_handoff = RulesResponder(
        Scenario.from_mapping({"rules": [{"after_handoff": True, "say": "New agent."}]})
    )
    call = FunctionCallItem(id="c", call_id="call_1", name="transfer_to_sales", arguments="{}")
    output = FunctionCallOutputItem(id="o", call_id="call_1", output="{}")
    assert any_handoff.decide(turn("hi", "", [], call, output)) == [Say("New agent.")]
    other = FunctionCallItem(id="c", call_id="call_1", name="get_weather", arguments="{}")
    assert any_handoff.decide(turn("hi", "", [], other, output)) == [Say("You said: hi")]


def test_a_rule_may_say_and_hand_off_and_names_follow_the_convention() -> None:
    scenario = Scenario.from_mapping(
        {"rules": [{"match": "human", "say": "Transferring you.", "handoff": "Support Desk #2"}]}
    )
    decided = RulesResponder(scenario).decide(
        turn("a human please", "", ["transfer_to_support_desk_2"])
    )
    assert decided == [Say("Transferring you."), CallTool("transfer_to_support_desk_2", "{}")]
    assert handoff_tool_name("  ") == "transfer_to_agent"
    assert len(handoff_tool_name("x" * 100)) == 64


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"handoff": ""}, "'handoff' must be the name of an agent"),
        ({"handoff": 3}, "'handoff' must be the name of an agent"),
        ({"after_handoff": 1, "say": "x"}, "'after_handoff' must be an agent name or true"),
        ({"after_handoff": True, "after_tool": "t", "say": "x"}, "not both"),
        ({"instructions": "(", "say": "x"}, "'instructions' is not a regular expression"),
        ({"instructions": 5, "say": "x"}, "'instructions' must be a regular expression"),
        ({"tools": "t", "say": "x"}, "'tools' must be a list of tool names"),
        ({"match": "x"}, "needs 'say', 'call', 'handoff' or 'mcp'"),
        ({"say": "x", "agent": "y"}, "unknown keys \\['agent'\\]"),
    ],
)
def test_scenario_errors_name_the_rule_and_the_key(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match="scenario rule 0.*" + message):
        Scenario.from_mapping({"rules": [rule]})
