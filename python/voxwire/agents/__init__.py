"""voxwire.agents: what an agent is, declared as data; nothing here awaits a network.

* :class:`RealtimeAgent` — name, instructions, voice and tools of the agent a session runs.
* :func:`agent_session_config` — the ``session`` object an agent asks for, merged over a base
  configuration (pure: the session sends it).

Tool execution, handoffs and guardrails are declared and decided here too, in later modules.
"""

from voxwire.agents.agent import (
    Instructions,
    RealtimeAgent,
    agent_session_config,
    resolve_instructions,
)

__all__ = ["Instructions", "RealtimeAgent", "agent_session_config", "resolve_instructions"]
