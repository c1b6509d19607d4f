"""Tracing: the service's trace settings, and optional OpenTelemetry spans on the client.

Two independent things share the session's tracing options (``tracing_disabled``,
``workflow_name``, ``group_id``, ``metadata``):

* **The service's tracing** (GA ``session.tracing``): :func:`tracing_setting` turns the options
  into ``"auto"``, a :class:`~voxwire.protocol.TracingConfig` or ``None`` (off). The session
  sends it once, in its first ``session.update``, and never again: the service does not let
  tracing change once it is on, so later updates (``update_session`` from the session's own
  code, agent changes) leave it out.
* **Client spans**, when ``opentelemetry-api`` is installed and tracing is not disabled:
  :class:`SessionTracer` makes a ``voxwire.realtime.session`` span for the session's life, a
  child ``voxwire.realtime.response`` span per response (usage and latencies as attributes),
  and offers :meth:`SessionTracer.tool_span` and :meth:`SessionTracer.handoff_span` to the code
  that runs tools and handoffs. A GPT-Live session (``kind="live"``) has ``voxwire.live.*``
  spans instead, and opens and ends its own children (turns, delegations) with
  :meth:`SessionTracer.begin` / :meth:`SessionTracer.end`; a child or a tool span may name an
  open one as its parent. Spans go to the given ``tracer_provider`` or OpenTelemetry's
  global one. Without the package (or with tracing disabled) ``enabled`` is false and every
  method returns at once — the session does not even call the per-event hook.

Using the span API (for code that runs tools and handoffs inside the session)::

    with session_tracer.tool_span(tool.name, call_id):
        output = await tool.run(arguments)        # an exception is recorded on the span

    with session_tracer.handoff_span(from_agent.name, to_agent.name):
        await apply_the_new_agent()

Both are context managers that make their span current, so spans the tool makes itself (an
instrumented HTTP client, say) become its children.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

from msgspec import UNSET, UnsetType

from voxwire.asyncio.observability.metrics import ResponseMetrics
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import server_events as se
from voxwire.protocol.config import TracingConfig

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider

try:
    from opentelemetry import trace as _otel
except ImportError:  # the optional dependency is absent: spans are off
    _otel = None  # type: ignore[assignment]

__all__ = [
    "OPENTELEMETRY_AVAILABLE",
    "SessionTracer",
    "TracingSetting",
    "tracing_setting",
]

OPENTELEMETRY_AVAILABLE: Final = _otel is not None
"""Whether ``opentelemetry-api`` could be imported (client spans are possible)."""

TracingSetting = Literal["auto"] | TracingConfig | UnsetType | None
"""GA ``session.tracing``: ``"auto"``, explicit settings, ``None`` (off), or unset."""

_NULL: Final = contextlib.nullcontext()
_ATTRIBUTE_TYPES: Final = (str, bool, int, float)


def tracing_setting(
    configured: TracingSetting,
    *,
    tracing_disabled: bool = False,
    workflow_name: str | None = None,
    group_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> TracingSetting:
    """The ``session.tracing`` to send at start: ``None`` when disabled; the explicit settings
    when any is given; else what the configuration said; else ``"auto"`` (the service picks the
    workflow name and groups nothing)."""
    explicit = workflow_name is not None or group_id is not None or metadata is not None
    if tracing_disabled:
        if explicit:
            raise ConfigurationError(
                "tracing_disabled=True contradicts workflow_name/group_id/metadata: "
                "give one or the other"
            )
        return None
    for name, value in (("workflow_name", workflow_name), ("group_id", group_id)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigurationError(f"{name}={value!r} is invalid: expected non-empty text")
    if metadata is not None and (
        not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata)
    ):
        raise ConfigurationError(
            f"metadata={metadata!r} is invalid: expected a mapping with text keys"
        )
    if explicit:
        return TracingConfig(
            workflow_name=workflow_name if workflow_name is not None else UNSET,
            group_id=group_id if group_id is not None else UNSET,
            metadata=dict(metadata) if metadata is not None else UNSET,
        )
    if configured is not UNSET:
        return configured
    return "auto"


class SessionTracer:
    """The session's OpenTelemetry spans (see the module docstring). ``enabled`` is false when
    ``opentelemetry-api`` is missing or ``disabled`` is set; then nothing is recorded."""

    server_event_types: Final = frozenset({se.ResponseCreated, se.ResponseDone})

    def __init__(
        self,
        *,
        disabled: bool = False,
        tracer_provider: TracerProvider | None = None,
        attributes: Mapping[str, Any] | None = None,
        kind: Literal["realtime", "live"] = "realtime",
    ) -> None:
        self.enabled = _otel is not None and not disabled
        self._prefix = f"voxwire.{kind}"
        self._open: dict[str, Span] = {}  # begin() .. end(), by key
        self._tracer: Tracer | None = None
        if self.enabled:
            assert _otel is not None
            self._tracer = _otel.get_tracer("voxwire", tracer_provider=tracer_provider)
        self._attributes = _attributes(attributes or {})
        self._session: Span | None = None
        self._context: Context | None = None
        self._responses: dict[str, Span] = {}
        self._response_ends_ns: dict[str, int] = {}

    # --- the session span ---------------------------------------------------------------------

    def session_started(self, **attributes: Any) -> None:
        if self._tracer is None or self._session is not None:
            return
        assert _otel is not None
        self._session = self._tracer.start_span(
            f"{self._prefix}.session",
            attributes={**self._attributes, **_attributes(attributes)},
        )
        self._context = _otel.set_span_in_context(self._session)

    def session_ended(self, reason: str, error: BaseException | None = None) -> None:
        """End every open span; the session span last (with an error status for ``error``)."""
        session = self._session
        if session is None:
            return
        assert _otel is not None
        for response_id in list(self._responses):
            self._end_response(response_id)
        for key in reversed(list(self._open)):  # children before their parents
            self.end(key)
        session.set_attribute("voxwire.close_reason", reason)
        if error is not None:
            session.record_exception(error)
            session.set_status(_otel.Status(_otel.StatusCode.ERROR, f"{reason}: {error}"))
        session.end()
        self._session = None

    # --- response spans ---------------------------------------------------------------------------

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        """Start and finish response spans from the wire events (nothing when disabled)."""
        if self._tracer is None:
            return
        if isinstance(event, se.ResponseCreated) and event.response.id is not None:
            self._responses[event.response.id] = self._tracer.start_span(
                "voxwire.realtime.response",
                context=self._context,
                attributes={"voxwire.response.id": event.response.id},
            )
        elif isinstance(event, se.ResponseDone) and event.response.id in self._responses:
            response = event.response
            span = self._responses[event.response.id]
            if response.status is not None:
                span.set_attribute("voxwire.response.status", response.status)
            # The metrics of a response with audio may come after its first sample played:
            # the span stays open for them but ends at response.done.
            self._response_ends_ns[event.response.id] = time.time_ns()

    def response_metrics(self, metrics: ResponseMetrics) -> None:
        """The response's metrics are complete: record them and end its span."""
        span = self._responses.get(metrics.response_id)
        if span is None:
            return
        usage = metrics.usage
        values: dict[str, Any] = {
            "gen_ai.usage.input_tokens": usage.input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "voxwire.usage.input_audio_tokens": usage.input_audio_tokens,
            "voxwire.usage.output_audio_tokens": usage.output_audio_tokens,
            "voxwire.usage.input_cached_tokens": usage.input_cached_tokens,
            "voxwire.response.interrupted": metrics.interrupted,
            "voxwire.response.speech_end_to_first_audio_s": metrics.speech_end_to_first_audio_s,
            "voxwire.response.speech_end_to_first_played_s": metrics.speech_end_to_first_played_s,
            "voxwire.response.time_to_first_audio_s": metrics.time_to_first_audio_s,
        }
        span.set_attributes(_attributes(values))
        self._end_response(metrics.response_id)

    def _end_response(self, response_id: str) -> None:
        span = self._responses.pop(response_id)
        span.end(end_time=self._response_ends_ns.pop(response_id, None))

    # --- children the session opens and ends (GPT-Live turns and delegations) ------------------

    def begin(
        self,
        name: str,
        key: str,
        parent: str | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> None:
        """Open a ``voxwire.<kind>.<name>`` span, a child of the open span ``parent`` (else of
        the session), until :meth:`end` with the same ``key`` (or the session's end)."""
        if self._tracer is None or key in self._open:
            return
        self._open[key] = self._tracer.start_span(
            f"{self._prefix}.{name}",
            context=self._context_of(parent),
            attributes=_attributes(attributes or {}),
        )

    def end(
        self, key: str, error: str | None = None, attributes: Mapping[str, Any] | None = None
    ) -> None:
        """End the span ``key`` with ``attributes`` (an error status with ``error``)."""
        span = self._open.pop(key, None)
        if span is None:
            return
        assert _otel is not None
        span.set_attributes(_attributes(attributes or {}))
        if error is not None:
            span.set_status(_otel.Status(_otel.StatusCode.ERROR, error))
        span.end()

    def _context_of(self, parent: str | None) -> Context | None:
        span = self._open.get(parent) if parent is not None else None
        if span is None:
            return self._context
        assert _otel is not None
        return _otel.set_span_in_context(span)

    # --- spans for the code that runs tools and handoffs -----------------------------------------

    def tool_span(
        self, name: str, call_id: str, parent: str | None = None
    ) -> contextlib.AbstractContextManager[Any]:
        """A ``voxwire.<kind>.tool`` span around one tool call (current while it runs; an
        exception leaving it is recorded and marks it as an error); a child of the open span
        ``parent`` when given."""
        if self._tracer is None:
            return _NULL
        return self._child(
            f"{self._prefix}.tool",
            {"voxwire.tool.name": name, "voxwire.tool.call_id": call_id},
            parent,
        )

    def handoff_span(
        self, from_agent: str, to_agent: str
    ) -> contextlib.AbstractContextManager[Any]:
        """A ``voxwire.realtime.handoff`` span around one agent transition."""
        if self._tracer is None:
            return _NULL
        return self._child(
            f"{self._prefix}.handoff",
            {"voxwire.handoff.from_agent": from_agent, "voxwire.handoff.to_agent": to_agent},
        )

    @contextlib.contextmanager
    def _child(
        self, name: str, attributes: dict[str, Any], parent: str | None = None
    ) -> Iterator[Span]:
        assert self._tracer is not None
        with self._tracer.start_as_current_span(
            name, context=self._context_of(parent), attributes=attributes
        ) as span:
            yield span


def _attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    """OpenTelemetry takes text, booleans and numbers: drop ``None``, flatten one mapping level
    (``metadata``) into ``name.key``, show anything else as text."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, Mapping):
            for key, inner in value.items():
                if inner is not None:
                    out[f"{name}.{key}"] = (
                        inner if isinstance(inner, _ATTRIBUTE_TYPES) else str(inner)
                    )
        else:
            out[name] = value if isinstance(value, _ATTRIBUTE_TYPES) else str(value)
    return out
