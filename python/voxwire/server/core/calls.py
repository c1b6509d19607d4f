"""SIP calls of the emulated phone line, without I/O: their states and the answers of the REST
endpoints ``POST /v1/realtime/calls/{call_id}/accept|reject|refer|hangup``.

What the hosted service documents, the emulation does: an empty ``200`` on success, ``reject``
defaults to ``603``, ``refer`` needs ``target_uri``, ``accept`` takes a session object (checked
as ``session.update`` checks one). Errors carry the service's JSON error body. What it does not
document (the status of a request in the wrong state, such as accepting a call twice) is this
emulation's choice: ``400`` with ``code`` ``call_not_pending`` / ``call_not_active``; an unknown
call is ``404`` ``call_not_found``.

A call: ``ringing`` (announced) → ``accepted`` (its session may be attached by ``call_id``) →
``referred`` or ``ended``; or ``ringing`` → ``rejected``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from voxwire.exceptions import ConfigurationError
from voxwire.protocol.limits import read_json
from voxwire.protocol.sip import DEFAULT_REJECT_STATUS, check_status_code, check_target_uri
from voxwire.server.core.config import DEFAULT_MODEL, apply_update, default_session
from voxwire.server.core.errors import ServerError

__all__ = ["Call", "CallBook", "CallState", "RestAnswer", "unauthorized"]

CallState = Literal["ringing", "accepted", "rejected", "referred", "ended"]
ACTIONS: Final = ("accept", "reject", "refer", "hangup")
_ROUTE: Final = re.compile(r"^/v1/realtime/calls/([A-Za-z0-9_\-]{1,128})/([a-z]{1,16})$")
MAX_BODY_BYTES: Final = 1024 * 1024


@dataclass
class Call:
    """One call as the line sees it."""

    call_id: str
    sip_headers: list[dict[str, str]]
    state: CallState = "ringing"
    session: dict[str, Any] = field(default_factory=dict)  # the accepted session object
    model: str = DEFAULT_MODEL
    status_code: int | None = None  # of a rejection
    refer_to: str | None = None  # of a transfer
    attached: int = 0  # websockets attached so far


@dataclass(frozen=True)
class RestAnswer:
    """What a REST request gets: an HTTP status and a JSON body (``None``: empty body)."""

    status: int
    body: dict[str, Any] | None = None
    call: Call | None = None  # the call whose state changed (None: nothing changed)


def _error(status: int, code: str, message: str, param: str | None = None) -> RestAnswer:
    body = {
        "error": {"message": message, "type": "invalid_request_error", "code": code, "param": param}
    }
    return RestAnswer(status, body)


def unauthorized() -> RestAnswer:
    return _error(
        401,
        "invalid_api_key",
        "Incorrect API key provided. Send 'Authorization: Bearer <token>' with the token this "
        "voxwire server was started with.",
    )


class CallBook:
    """The calls of one emulated trunk, by id."""

    def __init__(self) -> None:
        self.calls: dict[str, Call] = {}

    def ring(self, call_id: str, sip_headers: list[dict[str, str]]) -> Call:
        call = Call(call_id=call_id, sip_headers=sip_headers)
        self.calls[call_id] = call
        return call

    def attachable(self, call_id: str) -> Call | None:
        """The call a websocket with ``call_id`` attaches to (accepted only), else ``None``."""
        call = self.calls.get(call_id)
        return call if call is not None and call.state == "accepted" else None

    def handle(self, method: str, path: str, body: bytes) -> RestAnswer:
        """Answer one REST request. Never raises for anything a client sends."""
        match = _ROUTE.match(path)
        if match is None or match.group(2) not in ACTIONS:
            return _error(404, "not_found", f"Invalid URL ({method} {path[:200]}).")
        if method != "POST":
            return _error(405, "method_not_allowed", f"Invalid method {method[:20]}: use POST.")
        call_id, action = match.groups()
        call = self.calls.get(call_id)
        if call is None:
            return _error(404, "call_not_found", f"No call found with id '{call_id}'.", "call_id")
        raw = _json_object(body, required=action == "accept")
        if isinstance(raw, RestAnswer):
            return raw
        if action == "accept":
            return self._accept(call, raw)
        if action == "reject":
            return self._reject(call, raw)
        if action == "refer":
            return self._refer(call, raw)
        return self._hangup(call)

    def _accept(self, call: Call, raw: dict[str, Any]) -> RestAnswer:
        if call.state != "ringing":
            return _not_pending(call)
        model = raw.get("model", DEFAULT_MODEL)
        if not isinstance(model, str) or not model:
            return _error(400, "invalid_type", "Invalid type for 'model': expected text.", "model")
        base = default_session(
            session_id="", model=model, expires_at=0, output_modalities=["audio"]
        )
        try:
            apply_update(base, raw, assistant_audio_sent=False)
        except ServerError as exc:
            param = exc.param.removeprefix("session.") if exc.param else None
            message = exc.message.replace("'session.", "'")
            return _error(400, exc.code or "invalid_value", message, param)
        call.state, call.session, call.model = "accepted", raw, model
        return RestAnswer(200, None, call)

    def _reject(self, call: Call, raw: dict[str, Any]) -> RestAnswer:
        if call.state != "ringing":
            return _not_pending(call)
        unknown = _unknown(raw, ("status_code",))
        if unknown is not None:
            return unknown
        try:
            status = check_status_code(raw.get("status_code", DEFAULT_REJECT_STATUS))
        except ConfigurationError as exc:
            return _error(400, "invalid_value", str(exc), "status_code")
        call.state, call.status_code = "rejected", status
        return RestAnswer(200, None, call)

    def _refer(self, call: Call, raw: dict[str, Any]) -> RestAnswer:
        if call.state != "accepted":
            return _not_active(call)
        unknown = _unknown(raw, ("target_uri",))
        if unknown is not None:
            return unknown
        if "target_uri" not in raw:
            return _error(
                400,
                "missing_required_parameter",
                "Missing required parameter: 'target_uri'.",
                "target_uri",
            )
        try:
            call.refer_to = check_target_uri(raw["target_uri"])
        except ConfigurationError as exc:
            return _error(400, "invalid_value", str(exc), "target_uri")
        call.state = "referred"
        return RestAnswer(200, None, call)

    def _hangup(self, call: Call) -> RestAnswer:
        if call.state != "accepted":
            return _not_active(call)
        call.state = "ended"
        return RestAnswer(200, None, call)


def _json_object(body: bytes, *, required: bool) -> dict[str, Any] | RestAnswer:
    if len(body) > MAX_BODY_BYTES:
        return _error(413, "request_too_large", f"The body is over {MAX_BODY_BYTES} bytes.")
    if not body.strip():
        if required:
            return _error(400, "missing_required_parameter", "Missing required parameter: 'type'.")
        return {}
    raw, problem = read_json(body)  # bounded: no recursion into a hostile nesting
    if problem is not None:
        return _error(
            400, "invalid_json", f"The body of the request is not valid JSON ({problem})."
        )
    if not isinstance(raw, dict):
        return _error(400, "invalid_type", "The body of the request must be a JSON object.")
    return raw


def _unknown(raw: dict[str, Any], known: tuple[str, ...]) -> RestAnswer | None:
    for key in raw:
        if key not in known:
            return _error(400, "unknown_parameter", f"Unknown parameter: '{key}'.", str(key))
    return None


def _not_pending(call: Call) -> RestAnswer:
    return _error(
        400,
        "call_not_pending",
        f"Call '{call.call_id}' is {call.state}: only a ringing call can be accepted or rejected.",
        "call_id",
    )


def _not_active(call: Call) -> RestAnswer:
    return _error(
        400,
        "call_not_active",
        f"Call '{call.call_id}' is {call.state}: only an accepted call can be referred or hung up.",
        "call_id",
    )
