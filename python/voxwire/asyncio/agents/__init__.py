"""The agent's parts at run time: function tools (``tools``, ``tool_execution``), output and
input guardrails (``guardrails``, ``input_guardrails``), agent switches and handoffs
(``switching``) and hosted MCP (``mcp``). What they run is declared in :mod:`voxwire.agents`."""
