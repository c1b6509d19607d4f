"""A stdio MCP peer that misbehaves on purpose (for tests/fuzz/test_mcp_fuzz.py): it answers
``initialize`` properly, then ``tools/list`` and ``tools/call`` with the JSON lines the
environment gives (``VOXWIRE_MCP_LIST`` / ``VOXWIRE_MCP_CALL``, ``{id}`` replaced by the
request's id): malformed results, wrong types, not JSON at all."""

from __future__ import annotations

import json
import os
import sys


def answer(request_id: object, result: object) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def main() -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue  # notifications
        method, request_id = message.get("method"), message["id"]
        if method == "initialize":
            version = message.get("params", {}).get("protocolVersion", "2025-06-18")
            reply = answer(
                request_id,
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "junk", "version": "0"},
                },
            )
        elif method in ("tools/list", "tools/call"):
            key = "VOXWIRE_MCP_LIST" if method == "tools/list" else "VOXWIRE_MCP_CALL"
            reply = os.environ[key].replace("{id}", json.dumps(request_id))
        else:
            reply = answer(request_id, {})
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
