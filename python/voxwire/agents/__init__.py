"""voxwire.agents: what an agent is, declared as data; nothing here awaits a network.

* :class:`RealtimeAgent` — name, instructions, voice, tools, handoffs and output guardrails of
  the agent a session runs; :func:`resolve_agent` settles what is dynamic about it.
* :func:`function_tool` / :class:`FunctionTool` — a Python function the model may call
  (schema from type hints, argument checking, output formatting, approval policy).
* :func:`handoff` / :class:`Handoff` — a transfer of the conversation to another agent.
* :class:`HostedMCPTool` — a remote MCP server the Realtime API calls for the agent.
* :class:`MCPServerStdio`, :class:`MCPServerHTTP` — local MCP servers the session connects
  (``RealtimeAgent(mcp_servers=[...])``); their tools run as function tools.
* :func:`output_guardrail` / :class:`OutputGuardrail` — a check over what the assistant says.
* :func:`input_guardrail` / :class:`InputGuardrail` — a check over what the user says, before
  the agent answers (the session holds ``create_response`` for it: :class:`ResponseHold`).
* :func:`tool_input_guardrail` / :func:`tool_output_guardrail` — checks around one tool call;
  :class:`ToolErrorInfo` — what a session's ``tool_error_formatter`` sees; :func:`progress` —
  an interim output of a generator tool.
* :func:`agent_session_config` / :func:`agent_update_config` — the ``session`` objects an agent
  asks for (pure: the session sends them).

Running tools and guardrails belongs to the session (:mod:`voxwire.asyncio.agents.tools`,
:mod:`voxwire.asyncio.agents.guardrails`); the decisions they follow live here. See docs/agents.md.
"""

from voxwire.agents.agent import (
    Handoff,
    Instructions,
    RealtimeAgent,
    ResolvedAgent,
    ResolvedHandoff,
    agent_session_config,
    agent_update_config,
    handoff,
    resolve_agent,
    resolve_instructions,
    transfer_tool_name,
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
from voxwire.agents.input_guardrail import (
    DEFAULT_REFUSAL,
    InputGuardrail,
    ResponseHold,
    input_guardrail,
)
from voxwire.agents.mcp import HostedMCPTool
from voxwire.agents.mcp_local import MCPServer, MCPServerHTTP, MCPServerStdio
from voxwire.agents.tool import (
    BackgroundResult,
    FunctionTool,
    OnTimeout,
    ToolArgumentsError,
    ToolCall,
    ToolContext,
    ToolProgress,
    ToolTimeoutError,
    background_result,
    format_output,
    function_tool,
    progress,
)
from voxwire.agents.tool_guardrail import (
    ToolErrorFormatter,
    ToolErrorInfo,
    ToolErrorKind,
    ToolInputGuardrail,
    ToolOutputGuardrail,
    tool_input_guardrail,
    tool_output_guardrail,
)

__all__ = [
    "DEFAULT_DEBOUNCE_CHARS",
    "DEFAULT_REFUSAL",
    "BackgroundResult",
    "CallOutcome",
    "FunctionTool",
    "GuardrailResult",
    "Handoff",
    "HostedMCPTool",
    "InputGuardrail",
    "Instructions",
    "MCPServer",
    "MCPServerHTTP",
    "MCPServerStdio",
    "OnTimeout",
    "OutputGuardrail",
    "ReadyBatch",
    "RealtimeAgent",
    "ResolvedAgent",
    "ResolvedHandoff",
    "ResponseHold",
    "ToolArgumentsError",
    "ToolBatches",
    "ToolCall",
    "ToolContext",
    "ToolErrorFormatter",
    "ToolErrorInfo",
    "ToolErrorKind",
    "ToolInputGuardrail",
    "ToolOutputGuardrail",
    "ToolProgress",
    "ToolTimeoutError",
    "TranscriptWatch",
    "TripLatch",
    "agent_session_config",
    "agent_update_config",
    "background_result",
    "format_output",
    "function_tool",
    "handoff",
    "input_guardrail",
    "output_guardrail",
    "progress",
    "resolve_agent",
    "resolve_instructions",
    "tool_input_guardrail",
    "tool_output_guardrail",
    "transfer_tool_name",
]
