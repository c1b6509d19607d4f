"""Server events to the session's parts: each event to every part that takes its type, in order.

Every part has one method, ``on_server_event(event)``. A part may declare the event types it
reacts to as ``server_event_types`` (a frozenset of classes); it then sees only those, which
keeps the hot path — the audio deltas that are most of a conversation's frames — to the parts
that need them. The route for each event type is worked out once, the first time the type is
seen. A part that fails on an event is reported (``on_error``) and the other parts, and the
session, go on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from voxwire.asyncio.events import ServerEventConsumer
from voxwire.protocol.server_events import ReceivedEvent

__all__ = ["Dispatcher"]


class Dispatcher:
    """Hands server events to ``consumers`` (see the module docstring)."""

    def __init__(
        self,
        consumers: Sequence[ServerEventConsumer],
        on_error: Callable[[ReceivedEvent, Exception], None],
    ) -> None:
        self._consumers = tuple(consumers)
        self._on_error = on_error
        self._routes: dict[type, tuple[ServerEventConsumer, ...]] = {}

    def __call__(self, events: Iterable[ReceivedEvent]) -> None:
        routes = self._routes
        for event in events:
            route = routes.get(type(event))
            if route is None:
                route = routes[type(event)] = self._route(type(event))
            for consumer in route:
                try:
                    consumer.on_server_event(event)
                except Exception as exc:
                    self._on_error(event, exc)

    def _route(self, event_type: type) -> tuple[ServerEventConsumer, ...]:
        return tuple(c for c in self._consumers if _takes(c, event_type))


def _takes(consumer: ServerEventConsumer, event_type: type) -> bool:
    types: frozenset[type] | None = getattr(consumer, "server_event_types", None)
    return types is None or any(issubclass(event_type, t) for t in types)
