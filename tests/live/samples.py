"""One valid frame of every Live server and client event, checked against the official
``openai.types.live`` types by the tests (tests/live/test_codec.py)."""

from __future__ import annotations

from typing import Any

SESSION: dict[str, Any] = {
    "id": "sess_1",
    "expires_at": 1_900_000_000,
    "model": "gpt-live-1",
    "status": "active",
    "instructions": "Be brief.",
    "audio": {
        "format": {"type": "audio/pcm", "rate": 24000},
        "output": {"voice": "marin"},
    },
    "delegation": {
        "type": "responses",
        "responses": {
            "model": "gpt-5.5",
            "instructions": "Use tools.",
            "tools": [{"type": "function", "name": "weather", "parameters": {"type": "object"}}],
        },
    },
}

SERVER: dict[str, dict[str, Any]] = {
    "session.started": {"type": "session.started", "event_id": "e1", "session": SESSION},
    "session.updated": {"type": "session.updated", "event_id": "e2", "session": SESSION},
    "session.input_audio.muted": {"type": "session.input_audio.muted", "event_id": "e3"},
    "session.input_audio.unmuted": {"type": "session.input_audio.unmuted", "event_id": "e4"},
    "session.output_audio.fixture.playing": {
        "type": "session.output_audio.fixture.playing",
        "event_id": "e5",
    },
    "session.output_audio.fixture.played": {
        "type": "session.output_audio.fixture.played",
        "event_id": "e6",
    },
    "session.instructions.appended": {
        "type": "session.instructions.appended",
        "event_id": "e7",
        "start_ms": 10,
        "end_ms": 10,
    },
    "session.thinking.appended": {
        "type": "session.thinking.appended",
        "event_id": "e8",
        "start_ms": 10,
        "end_ms": 20,
        "client_event_id": "c1",
    },
    "session.commentary.appended": {
        "type": "session.commentary.appended",
        "event_id": "e9",
        "start_ms": 10,
        "end_ms": 20,
    },
    "session.input_audio.append": {"type": "session.input_audio.append", "audio": "AAAA"},
    "session.output_audio.delta": {
        "type": "session.output_audio.delta",
        "delta": "AAAAAA==",
        "start_ms": 0,
        "end_ms": 40,
    },
    "session.input_transcript.delta": {
        "type": "session.input_transcript.delta",
        "event_id": "e10",
        "delta": "hello",
        "start_ms": 0,
        "end_ms": 300,
    },
    "session.output_transcript.delta": {
        "type": "session.output_transcript.delta",
        "event_id": "e11",
        "delta": "Hi",
        "start_ms": 400,
        "end_ms": 600,
    },
    "session.delegation.created": {
        "type": "session.delegation.created",
        "event_id": "e12",
        "offset_ms": 1200,
        "delegation": {"id": "del_1", "type": "delegation", "target": "client"},
    },
    "decision.event": {
        "type": "decision.event",
        "event_id": "e13",
        "event": {
            "type": "decision.completed",
            "decision": {
                "answers": [{"type": "predicate", "probability": 0.9}],
                "model": "gpt-5.5",
                "usage": {
                    "input_tokens": 5,
                    "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
                    "output_tokens": 1,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 6,
                },
            },
        },
    },
    "decision.item.created": {
        "type": "decision.item.created",
        "event_id": "e14",
        "item": {
            "id": "i1",
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hi"}],
        },
    },
    "decision.item.deleted": {"type": "decision.item.deleted", "event_id": "e15", "item_id": "i1"},
    "response.event": {
        "type": "response.event",
        "event_id": "e16",
        "delegation_id": "del_2",
        "event": {"type": "response.created", "response": {"id": "resp_1"}},
    },
    "session.usage.updated": {
        "type": "session.usage.updated",
        "event_id": "e17",
        "usage": {"seconds": 3.5},
        "context_window": {"usage_ratio": 0.1},
    },
    "session.closed": {
        "type": "session.closed",
        "event_id": "e18",
        "reason": "close_requested",
        "session": SESSION,
        "usage": {"seconds": 9.0, "active_seconds": 8, "paused_seconds": 1},
    },
    "error": {
        "type": "error",
        "event_id": "e19",
        "error": {
            "type": "invalid_request_error",
            "code": "invalid_value",
            "message": "no",
            "client_event_id": "c2",
            "param": "session.model",
        },
    },
    "info": {"type": "info", "event_id": "e20", "code": "notice", "message": "fyi"},
    "transport.dtmf.received": {"type": "transport.dtmf.received", "event_id": "e21", "event": "5"},
    "transport.dtmf.send": {"type": "transport.dtmf.send", "event_id": "e22", "event": "5"},
    "transport.dtmf.sent": {"type": "transport.dtmf.sent", "event_id": "e23", "event": "5"},
    "transport.ringing": {"type": "transport.ringing", "event_id": "e24", "session_id": "s"},
    "transport.answered": {"type": "transport.answered", "event_id": "e25", "session_id": "s"},
    "transport.failed": {
        "type": "transport.failed",
        "event_id": "e26",
        "session_id": "s",
        "error": {"type": "call_error", "code": "busy", "message": "busy"},
    },
}

CLIENT: dict[str, dict[str, Any]] = {
    "session.start": {
        "type": "session.start",
        "event_id": "c1",
        "session": {k: v for k, v in SESSION.items() if k not in ("id", "expires_at", "status")},
    },
    "session.update": {
        "type": "session.update",
        "session": {"delegation": {"type": "responses", "responses": {"model": "gpt-5.5"}}},
    },
    "session.input_audio.append": {"type": "session.input_audio.append", "audio": "AAAA"},
    "session.input_audio.mute": {"type": "session.input_audio.mute"},
    "session.input_audio.unmute": {"type": "session.input_audio.unmute"},
    "session.output_audio.fixture.play": {
        "type": "session.output_audio.fixture.play",
        "audio": "AAAA",
    },
    "session.instructions.append": {
        "type": "session.instructions.append",
        "content": "Be warm.",
        "delegation_id": None,
    },
    "session.thinking.append": {
        "type": "session.thinking.append",
        "content": "Looking it up.",
        "delegation_id": "del_1",
    },
    "session.commentary.append": {
        "type": "session.commentary.append",
        "content": "It is sunny.",
        "delegation_id": "del_1",
    },
    "decision.create": {"type": "decision.create", "event_id": "c3"},
    "decision.item.create": {
        "type": "decision.item.create",
        "item": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "x"}],
        },
    },
    "decision.item.delete": {"type": "decision.item.delete", "item_id": "i1"},
    "response.item.create": {
        "type": "response.item.create",
        "item": {"type": "function_call_output", "call_id": "call_1", "output": "{}"},
    },
    "response.create": {"type": "response.create"},
    "session.close": {"type": "session.close"},
}
