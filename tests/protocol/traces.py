"""Access to the recorded Realtime traces in ``tests/fixtures/realtime`` (sources in its README)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "realtime"

GA_DOCS_SERVER = "openai-openapi_docs_examples_ga_server.jsonl"
GA_DOCS_CLIENT = "openai-openapi_docs_examples_ga_client.jsonl"
GA_SIP_TURN = "real_ga_sip-gateway_turn_sequence.jsonl"
GA_SIP_FILEORDER = "real_ga_sip-gateway_server_events_fileorder.jsonl"
GA_ISSUES = "real_events_from_issue_threads.jsonl"
BETA_BANYAN_SERVER = "real_beta-webrtc_banyan_session_server.jsonl"
BETA_BANYAN_CLIENT = "real_beta-webrtc_banyan_session_client.jsonl"
BETA_LIUSIDA = "real_beta_liusida_text_response_server.jsonl"


def frames(name: str) -> list[str]:
    """The non-empty lines of a trace file, as received text frames."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def mappings(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in frames(name)]


def frame_of(name: str, event_type: str, nth: int = 0) -> str:
    """The ``nth`` frame of ``event_type`` in a trace."""
    found = [f for f in frames(name) if json.loads(f)["type"] == event_type]
    return found[nth]
