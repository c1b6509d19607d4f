"""The agent's parts over Live: the two delegation modes that run its function tools
(``delegation``), handoffs where the API allows them (``handoffs``), the Decisions API
(``decisions``) and input guardrails on the user's transcript (``guarding``)."""
