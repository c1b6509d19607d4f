"""voxwire.agents: what an agent is, declared as data; nothing here awaits a network.

* :class:`RealtimeAgent` — name, instructions, voice, tools, handoffs and output guardrails of
  the agent a session runs; :func:`resolve_agent` settles what is dynamic about it.
* :func:`function_tool` / :class:`FunctionTool` — a Python function the model may call
  (schema from type hints, argument checking, output formatting, approval policy).
* :func:`handoff` / :class:`Handoff` — a transfer of the conversation to another agent.
* :class:`HostedMCPTool` — a remote MCP server the Realtime API calls for the agent.
* :func:`output_guardrail` / :class:`OutputGuardrail` — a check over what the assistant says.
* :func:`agent_session_config` / :func:`agent_update_config` — the ``session`` objects an agent
  asks for (pure: the session sends them).

Running tools and guardrails belongs to the session (:mod:`voxwire.asyncio.tools`,
:mod:`voxwire.asyncio.guardrails`); the decisions they follow live here. See docs/agents.md.
"""

from voxwire.agents.agent import (
    Instructions,
    RealtimeAgent,
    ResolvedAgent,
    ResolvedHandoff,
    agent_session_config,
    agent_update_config,
    resolve_agent,
    resolve_instructions,
)
from voxwire.agents.batch import CallOutcome, ReadyBatch, ToolBatches
from voxwire.agents.guardrail import (
    DEFAULT_DEBOUNCE_CHARS,
    GuardrailResult,
    OutputGuardrail,
    TranscriptWatch,
    TripLatch,
    output_guardrail,
)
from voxwire.agents.handoff import Handoff, handoff, transfer_tool_name
from voxwire.agents.mcp import HostedMCPTool
from voxwire.agents.tool import (
    BackgroundResult,
    FunctionTool,
    ToolArgumentsError,
    ToolCall,
    ToolContext,
    ToolTimeoutError,
    background_result,
    format_output,
    function_tool,
)

__all__ = [
    "DEFAULT_DEBOUNCE_CHARS",
    "BackgroundResult",
    "CallOutcome",
    "FunctionTool",
    "GuardrailResult",
    "Handoff",
    "HostedMCPTool",
    "Instructions",
    "OutputGuardrail",
    "ReadyBatch",
    "RealtimeAgent",
    "ResolvedAgent",
    "ResolvedHandoff",
    "ToolArgumentsError",
    "ToolBatches",
    "ToolCall",
    "ToolContext",
    "ToolTimeoutError",
    "TranscriptWatch",
    "TripLatch",
    "agent_session_config",
    "agent_update_config",
    "background_result",
    "format_output",
    "function_tool",
    "handoff",
    "output_guardrail",
    "resolve_agent",
    "resolve_instructions",
    "transfer_tool_name",
]
