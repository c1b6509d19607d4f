"""SIP calls of the emulated phone line, without I/O: their states and the answers of the REST
endpoints ``POST /v1/realtime/calls/{call_id}/accept|reject|refer|hangup`` and, for a call
announced to GPT-Live, ``POST /v1/live/sessions/{session_id}/accept|reject|refer|hangup``.

A Live call's ``accept`` takes ``{"session": {...}}``, the session a ``session.start`` carries
plus ``"type": "live"`` (``openai.types.live.session_accept_params``): unknown fields refused,
a Live model, no ``audio.format`` (SIP negotiates the media format); ``reject`` needs its
``status_code`` (the Live reference marks it required).

What the hosted service documents, the emulation does: an empty ``200`` on success, ``reject``
defaults to ``603``, ``refer`` needs ``target_uri``, ``accept`` takes a session object (checked
as ``session.update`` checks one). Errors carry the service's JSON error body. What it does not
document (the status of a request in the wrong state, such as accepting a call twice) is this
emulation's choice: ``400`` with ``code`` ``call_not_pending`` / ``call_not_active``; an unknown
call is ``404`` ``call_not_found``.

A call: ``ringing`` (announced) → ``accepted`` (its session may be attached by ``call_id``) →
``referred`` or ``ended``; or ``ringing`` → ``rejected``.

What this server accepts of a Live session's configuration is the Live core's rule
(:func:`voxwire.server.live.core.config.start_problem`): the book is given it, so that this core
never imports the Live rooms (``tests/test_layering.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import msgspec

from voxwire.exceptions import ConfigurationError
from voxwire.live.objects import LiveSessionConfig
from voxwire.protocol.limits import read_json
from voxwire.protocol.sip import DEFAULT_REJECT_STATUS, check_status_code, check_target_uri
from voxwire.server.core.config import DEFAULT_MODEL, apply_update, default_session
from voxwire.server.core.errors import ServerError

__all__ = ["Call", "CallBook", "CallState", "LiveProblem", "RestAnswer", "unauthorized"]

CallState = Literal["ringing", "accepted", "rejected", "referred", "ended"]
CallApi = Literal["realtime", "live"]
#: What is wrong with a Live session's configuration for this server, as (param, message);
#: ``None``: nothing (:func:`voxwire.server.live.core.config.start_problem`).
LiveProblem = Callable[[LiveSessionConfig], tuple[str, str] | None]
ACTIONS: Final = ("accept", "reject", "refer", "hangup")
_ROUTE: Final = re.compile(
    r"^/v1/(realtime/calls|live/sessions)/([A-Za-z0-9_\-]{1,128})/([a-z]{1,16})$"
)
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
    api: CallApi = "realtime"  # announced to the Realtime API or to GPT-Live


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
    """The calls of one emulated trunk, by id; ``live_problem`` checks the session a Live call is
    accepted with."""

    def __init__(self, live_problem: LiveProblem) -> None:
        self.calls: dict[str, Call] = {}
        self._live_problem = live_problem

    def ring(
        self, call_id: str, sip_headers: list[dict[str, str]], api: CallApi = "realtime"
    ) -> Call:
        call = Call(call_id=call_id, sip_headers=sip_headers, api=api)
        self.calls[call_id] = call
        return call

    def attachable(self, call_id: str) -> Call | None:
        """The call a websocket with ``call_id`` attaches to (accepted only), else ``None``."""
        call = self.calls.get(call_id)
        return call if call is not None and call.state == "accepted" else None

    def handle(self, method: str, path: str, body: bytes) -> RestAnswer:
        """Answer one REST request. Never raises for anything a client sends."""
        match = _ROUTE.match(path)
        if match is None or match.group(3) not in ACTIONS:
            return _error(404, "not_found", f"Invalid URL ({method} {path[:200]}).")
        if method != "POST":
            return _error(405, "method_not_allowed", f"Invalid method {method[:20]}: use POST.")
        prefix, call_id, action = match.groups()
        api: CallApi = "live" if prefix == "live/sessions" else "realtime"
        call = self.calls.get(call_id)
        if call is None or call.api != api:
            # A call is controlled through the API it was announced to.
            what = "SIP session" if api == "live" else "call"
            return _error(
                404,
                f"{'session' if api == 'live' else 'call'}_not_found",
                f"No {what} found with id '{call_id}'.",
                _id_param(api),
            )
        raw = _json_object(body, required=action == "accept")
        if isinstance(raw, RestAnswer):
            return raw
        if action == "accept":
            return self._accept_live(call, raw) if api == "live" else self._accept(call, raw)
        if action == "reject":
            if api == "live" and "status_code" not in raw:
                return _missing("status_code")
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

    def _accept_live(self, call: Call, raw: dict[str, Any]) -> RestAnswer:
        if call.state != "ringing":
            return _not_pending(call)
        unknown = _unknown(raw, ("session",))
        if unknown is not None:
            return unknown
        session = raw.get("session")
        if not isinstance(session, dict):
            return _missing("session") if session is None else _invalid("session", "an object")
        if session.get("type") != "live":
            if "type" not in session:
                return _missing("session.type")
            return _invalid("session.type", "'live'")
        config = {key: value for key, value in session.items() if key != "type"}
        for key in config:
            if key not in LiveSessionConfig.__struct_fields__:
                return _error(
                    400,
                    "unknown_parameter",
                    f"Unknown parameter: 'session.{key}'.",
                    f"session.{key}",
                )
        audio = config.get("audio")
        if isinstance(audio, dict) and "format" in audio:
            return _error(
                400,
                "invalid_value",
                "SIP negotiates the media format: omit session.audio.format.",
                "session.audio.format",
            )
        if "model" not in config:
            return _missing("session.model")
        try:
            parsed = msgspec.convert(config, LiveSessionConfig)
        except msgspec.ValidationError as exc:
            return _error(400, "invalid_value", f"Invalid session: {exc}", "session")
        problem = self._live_problem(parsed)
        if problem is not None:
            return _error(400, "invalid_value", problem[1], problem[0])
        call.state, call.session, call.model = "accepted", config, parsed.model
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
            return _missing("target_uri")
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


def _id_param(api: CallApi) -> str:
    return "session_id" if api == "live" else "call_id"


def _missing(param: str) -> RestAnswer:
    return _error(
        400, "missing_required_parameter", f"Missing required parameter: '{param}'.", param
    )


def _invalid(param: str, expected: str) -> RestAnswer:
    return _error(400, "invalid_value", f"Invalid value for '{param}': expected {expected}.", param)


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
        _id_param(call.api),
    )


def _not_active(call: Call) -> RestAnswer:
    return _error(
        400,
        "call_not_active",
        f"Call '{call.call_id}' is {call.state}: only an accepted call can be referred or hung up.",
        _id_param(call.api),
    )
