"""What the "model" says: the pluggable responder and the built-in rules responder.

A :class:`Responder` gets a :class:`Turn` — the context items (the conversation, or the
``input`` of an out-of-band response), the instructions and the tools the client declared — and
returns the outputs of the response in order: :class:`Say` (an assistant message) and
:class:`CallTool` (a function call). The server turns them into the GA event stream; a responder
never sees the wire.

:class:`RulesResponder` is deterministic and driven by a :class:`Scenario`, a JSON object::

    {
      "rules": [
        {"match": "weather", "call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"after_tool": "get_weather", "say": "It is {output.temperature} degrees in Paris."},
        {"match": "hello|hi", "say": "Hello! How can I help?"}
      ],
      "fallback": "You said: {text}"
    }

Rules are tried in order. ``match`` is a case-insensitive regular expression searched in the
user's last message (its text, or the transcript of its audio); ``after_tool`` matches when the
last item is the output of that tool. ``say`` is a template (``{text}``: the user's text,
``{output}``: the tool's output, ``{output.key}``: a field of a JSON output); ``call`` is one tool
call or a list of them (``arguments`` an object or a JSON string). A rule may both say and call.
A call rule applies only if the tool is declared (session or response ``tools``) and
``tool_choice`` is not ``"none"`` — a real model cannot call anything else either.
``"mcp": {"server_label", "name", "arguments"}`` calls a tool of a hosted MCP server the
scenario declares under ``mcp_servers`` (:mod:`voxwire.server.core.mcp`); it applies while that
server is configured.

Handoffs. In the Realtime protocol a handoff is a function call the client declared as a tool
named ``transfer_to_<agent>`` (the agents SDKs' convention); the client then switches agent:
it sends the call's output and a ``session.update`` with the new agent's instructions and tools.
``"handoff": "Billing"`` makes that call (``transfer_to_billing``, arguments ``{}``: the agent's
name in lower case, other characters made ``_``: :func:`handoff_tool_name`). Rules can be
scoped to an agent so that the new agent answers after the switch: ``instructions`` is a
case-insensitive regular expression searched in the response's instructions, ``tools`` a list
of tool names that must all be declared; ``after_handoff`` (an agent name, or ``true`` for any)
matches the output of a handoff call, like ``after_tool``::

    {"rules": [
      {"instructions": "triage", "match": "invoice|refund", "handoff": "Billing"},
      {"instructions": "billing", "after_handoff": true, "say": "Billing here. {text}?"},
      {"instructions": "billing", "match": "refund", "say": "Refunds take five days."}
    ]}

``after_system`` (a regular expression) matches when the conversation ends with a system
message whose text it finds — e.g. a tool's progress note (``"after_system": "Progress of the
get_weather"``). Other rules see such a turn as before, except that rules calling a tool do not
apply after a system note unless they have ``after_system``.

A reply that came between a tool's output and the answer to it (a progress reply created
before the output arrived) is set aside: the next response still answers the output
(``after_tool``), as a model would.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from voxwire.exceptions import ConfigurationError
from voxwire.protocol import FunctionCallOutputItem, MessageItem, parse_say_instructions
from voxwire.protocol.limits import read_json
from voxwire.server.core.mcp import McpServers
from voxwire.server.core.turn import CallMcp, CallTool, Output, Say, Turn
from voxwire.server.live.core.decisions import DecisionRule, decision_rules

__all__ = [
    "CallMcp",
    "CallTool",
    "Output",
    "Responder",
    "Rule",
    "RulesResponder",
    "Say",
    "Scenario",
    "Turn",
    "handoff_tool_name",
]  # Say, CallTool, Output and Turn live in voxwire.server.core.turn (the pure core).

_PLACEHOLDER: Final = re.compile(r"\{([A-Za-z_][\w.]*)\}")
_NOT_NAME: Final = re.compile(r"[^a-z0-9_]+")
HANDOFF_PREFIX: Final = "transfer_to_"


def handoff_tool_name(agent: str) -> str:
    """The tool a handoff to ``agent`` calls: ``transfer_to_`` and the name in lower case, runs
    of other characters than letters, digits and ``_`` made one ``_`` ("Billing desk" →
    ``transfer_to_billing_desk``), at most 64 characters — the convention of
    ``voxwire.agents.transfer_tool_name``, which the server may not import."""
    slug = _NOT_NAME.sub("_", agent.lower()).strip("_") or "agent"
    return (HANDOFF_PREFIX + slug)[:64]


class Responder(Protocol):
    """Decides a response's outputs. May await (a responder backed by a model server)."""

    async def respond(self, turn: Turn) -> list[Output]: ...


@dataclass(frozen=True)
class Rule:
    """One scenario rule (see the module docstring)."""

    match: re.Pattern[str] | None = None
    after_tool: str | None = None  # a tool name, or HANDOFF_PREFIX for any handoff
    say: str | None = None
    calls: tuple[CallTool | CallMcp, ...] = ()
    instructions: re.Pattern[str] | None = None
    tools: tuple[str, ...] = ()
    after_system: re.Pattern[str] | None = None

    def applies(self, turn: Turn) -> bool:
        note = turn.system_note
        if self.after_system is not None:
            if note is None or self.after_system.search(note) is None:
                return False
        elif note is not None and self.calls:
            # After a system note (a tool's progress, a guardrail's feedback) a model goes on
            # from the note; a rule calling a tool would see the same user text again and call
            # the same tool once per note, forever (a progress note with respond=True asks for
            # a response before the tool's result is in).
            return False
        if self.instructions is not None and not self.instructions.search(turn.instructions):
            return False
        if any(name not in turn.tools for name in self.tools):
            return False
        if self.calls and (
            turn.tool_choice == "none"
            or any(
                c.server_label not in turn.mcp_tools
                if isinstance(c, CallMcp)
                else c.name not in turn.tools
                for c in self.calls
            )
        ):
            return False
        # After a tool's output only ``after_tool`` rules apply: a ``match`` rule would see
        # the same user text again and call the same tool forever.
        tool_output = turn.tool_output
        if (self.after_tool is None) != (tool_output is None):
            return False
        if tool_output is not None and not (
            tool_output[0] == self.after_tool
            or (self.after_tool == HANDOFF_PREFIX and tool_output[0].startswith(HANDOFF_PREFIX))
        ):
            return False
        return self.match is None or self.match.search(turn.user_text) is not None


@dataclass(frozen=True)
class Scenario:
    """Rules and a fallback; build with :meth:`from_mapping` or :meth:`from_file`."""

    rules: tuple[Rule, ...] = ()
    fallback: str | None = "You said: {text}"
    #: Hosted MCP servers the scenario plays (:mod:`voxwire.server.core.mcp`).
    mcp_servers: McpServers = field(default_factory=McpServers)
    #: The scripted Decisions model of a Live session (:mod:`voxwire.server.live.core.decisions`).
    decisions: tuple[DecisionRule, ...] = ()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Scenario:
        unknown = set(data) - {"rules", "fallback", "mcp_servers", "decisions"}
        if unknown:
            raise ConfigurationError(
                f"scenario has unknown keys {sorted(unknown)}: expected 'rules', 'fallback', "
                "'mcp_servers' and 'decisions'"
            )
        raw_rules = data.get("rules", [])
        if not isinstance(raw_rules, list):
            raise ConfigurationError("scenario 'rules' must be a list of objects")
        rules = tuple(_rule(index, raw) for index, raw in enumerate(raw_rules))
        fallback = data.get("fallback", cls.fallback)
        if fallback is not None and not isinstance(fallback, str):
            raise ConfigurationError("scenario 'fallback' must be a string or null")
        mcp_servers = McpServers.from_mapping(data.get("mcp_servers", {}))
        decisions = decision_rules(data.get("decisions", []))
        return cls(rules=rules, fallback=fallback, mcp_servers=mcp_servers, decisions=decisions)

    @classmethod
    def from_file(cls, path: str | Path) -> Scenario:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"scenario file {path} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigurationError(f"scenario file {path} must hold a JSON object")
        return cls.from_mapping(data)


@dataclass
class RulesResponder:
    """The deterministic responder: the first rule that applies decides."""

    scenario: Scenario = field(default_factory=Scenario)

    async def respond(self, turn: Turn) -> list[Output]:
        return self.decide(turn)

    def decide(self, turn: Turn) -> list[Output]:
        """The outputs for ``turn`` (synchronous; :meth:`respond` is its async face)."""
        verbatim = parse_say_instructions(turn.instructions)
        if verbatim is not None:  # RealtimeSession.say(): a model would follow it, and so do we
            return [Say(verbatim)]
        turn = _owed_tool_answer(turn)
        for rule in self.scenario.rules:
            if rule.applies(turn):
                outputs: list[Output] = []
                if rule.say is not None:
                    outputs.append(Say(_fill(rule.say, turn)))
                outputs.extend(rule.calls)
                return outputs
        if self.scenario.fallback is None:
            return []
        return [Say(_fill(self.scenario.fallback, turn))]


def _owed_tool_answer(turn: Turn) -> Turn:
    """``turn`` without the assistant messages that follow a function call's output, if any.

    A reply can come between a tool's output and the answer to it: a progress note's reply
    (``respond=True``) asked for while the tool ran, created before the output arrived. The
    response after it still owes the answer to the output, so ``after_tool`` rules decide it —
    not the user's words again, which would call the same tool once more, forever.
    """
    end = len(turn.items)
    while end and _is_assistant_message(turn.items[end - 1]):
        end -= 1
    if end in (0, len(turn.items)) or not isinstance(turn.items[end - 1], FunctionCallOutputItem):
        return turn
    return dataclasses.replace(turn, items=turn.items[:end])


def _is_assistant_message(item: object) -> bool:
    return isinstance(item, MessageItem) and item.role == "assistant"


def _rule(index: int, raw: object) -> Rule:
    where = f"scenario rule {index}"
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{where} must be an object")
    unknown = set(raw) - _RULE_KEYS
    if unknown:
        raise ConfigurationError(
            f"{where} has unknown keys {sorted(unknown)}: expected " + ", ".join(sorted(_RULE_KEYS))
        )
    if not {"say", "call", "handoff", "mcp"} & set(raw):
        raise ConfigurationError(f"{where} needs 'say', 'call', 'handoff' or 'mcp'")
    say = raw.get("say")
    if say is not None and not isinstance(say, str):
        raise ConfigurationError(f"{where}: 'say' must be a string")
    after_tool = raw.get("after_tool")
    if after_tool is not None and not isinstance(after_tool, str):
        raise ConfigurationError(f"{where}: 'after_tool' must be a tool name")
    after_handoff = raw.get("after_handoff")
    if after_handoff is not None:
        if after_tool is not None:
            raise ConfigurationError(f"{where}: give 'after_tool' or 'after_handoff', not both")
        if after_handoff is True:
            after_tool = HANDOFF_PREFIX
        elif isinstance(after_handoff, str) and after_handoff.strip():
            after_tool = handoff_tool_name(after_handoff)
        else:
            raise ConfigurationError(
                f"{where}: 'after_handoff' must be an agent name or true (any handoff)"
            )
    raw_calls = raw.get("call", [])
    raw_calls = raw_calls if isinstance(raw_calls, list) else [raw_calls]
    calls: list[CallTool | CallMcp] = [_call(where, c) for c in raw_calls]
    if "mcp" in raw:
        calls.append(_mcp_call(where, raw["mcp"]))
    handoff = raw.get("handoff")
    if handoff is not None:
        if not isinstance(handoff, str) or not handoff.strip():
            raise ConfigurationError(f"{where}: 'handoff' must be the name of an agent")
        calls.append(CallTool(name=handoff_tool_name(handoff), arguments="{}"))
    tools = raw.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise ConfigurationError(f"{where}: 'tools' must be a list of tool names")
    return Rule(
        match=_pattern(where, "match", raw.get("match")),
        after_tool=after_tool,
        say=say,
        calls=tuple(calls),
        instructions=_pattern(where, "instructions", raw.get("instructions")),
        tools=tuple(tools),
        after_system=_pattern(where, "after_system", raw.get("after_system")),
    )


_RULE_KEYS: Final = frozenset(
    {
        "match",
        "after_tool",
        "after_handoff",
        "after_system",
        "say",
        "call",
        "handoff",
        "mcp",
        "instructions",
        "tools",
    }
)


def _pattern(where: str, key: str, value: object) -> re.Pattern[str] | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigurationError(f"{where}: {key!r} must be a regular expression (a string)")
    try:
        return re.compile(value, re.IGNORECASE)
    except re.error as exc:
        raise ConfigurationError(f"{where}: {key!r} is not a regular expression: {exc}") from None


def _call(where: str, raw: object) -> CallTool:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ConfigurationError(f"{where}: 'call' needs a 'name' (and optional 'arguments')")
    return CallTool(name=raw["name"], arguments=_arguments(where, raw.get("arguments", {})))


def _mcp_call(where: str, raw: object) -> CallMcp:
    if (
        not isinstance(raw, dict)
        or not isinstance(raw.get("server_label"), str)
        or not isinstance(raw.get("name"), str)
    ):
        raise ConfigurationError(
            f"{where}: 'mcp' needs a 'server_label' and a 'name' (and optional 'arguments')"
        )
    arguments = _arguments(where, raw.get("arguments", {}))
    return CallMcp(server_label=raw["server_label"], name=raw["name"], arguments=arguments)


def _arguments(where: str, arguments: object) -> str:
    if isinstance(arguments, str):
        try:
            json.loads(arguments)
        except json.JSONDecodeError:
            raise ConfigurationError(f"{where}: 'arguments' is not JSON text") from None
        text = arguments
    else:
        text = json.dumps(arguments, separators=(",", ":"))
    return text


def _fill(template: str, turn: Turn) -> str:
    tool_output = turn.tool_output
    output = tool_output[1] if tool_output is not None else ""
    values: dict[str, Any] = {"text": turn.user_text, "output": output}
    # Bounded: a client's tool output nested thousands deep is not JSON to look into here.
    parsed: Any = read_json(output)[0] if output else None

    def lookup(match: re.Match[str]) -> str:
        name, *path = match.group(1).split(".")
        if name not in values:
            return match.group(0)
        value: Any = values[name] if not path else parsed
        for key in path:
            if not isinstance(value, dict) or key not in value:
                return match.group(0)
            value = value[key]
        return value if isinstance(value, str) else json.dumps(value)

    return _PLACEHOLDER.sub(lookup, template)
