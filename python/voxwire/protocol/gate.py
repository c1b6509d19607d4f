"""When may a ``response.create`` go out? The rules first, then the bookkeeping.

The GA server runs one response at a time in a conversation: a ``response.create`` sent while
one is in progress fails with ``conversation_already_has_active_response``. A response can also
start without a request (server VAD with ``create_response: true``). The gate keeps the
client's view of this:

==============  =======================================  ==============
state           trigger                                  next state
==============  =======================================  ==============
IDLE            client sends ``response.create``         REQUESTED
IDLE            ``response.created`` (server-initiated)  ACTIVE
REQUESTED       ``response.created``                     ACTIVE
REQUESTED       ``error`` naming the create's event_id   IDLE
ACTIVE          ``response.created`` (another one)       ACTIVE
ACTIVE          ``response.done`` of the last one        IDLE
==============  =======================================  ==============

Every other (state, trigger) pair leaves the state unchanged: a ``response.done`` for a
response the gate never saw start, or an error for some other event, does not open the gate.

A create requested while the gate is not IDLE is held. Held requests coalesce — asking twice
for the same response is one request — and the oldest is released when the gate becomes IDLE
again (on ``response.done``, or on the error that names the create in flight).

Out-of-band responses (``response.create`` with ``conversation="none"``) do not pass the gate:
GA runs them beside the conversation's response, and their ``response.created`` is told apart
by its ``conversation_id`` being null. ``RealtimeProtocol`` keeps them away from the gate.

Every request carries its *source* (:data:`ResponseSource`: why it was asked for). The gate
resolves each ``response.created`` to the request it answers and returns that source
(:meth:`ResponseGate.response_created`), so the caller never has to guess from the state which
response is whose; a response nobody asked for (server VAD) has source ``None``.

``response.created`` does not echo the client's ``event_id``, so the first one after a create
is taken as its answer. If server VAD wins that race, the server rejects the create with
``conversation_already_has_active_response`` naming its ``event_id``: the gate remembers which
create it presumed answered (:meth:`ResponseGate.lost_race`) so that ``RealtimeProtocol`` can
ask again once the winning response is done (:meth:`ResponseGate.requeue`) — or not, when the
winner answers what the create was for.

A request may also carry *tags*: names the caller chose (a speech handle's id). Requests that
coalesce keep every tag, and the response that answers them carries them all
(:meth:`ResponseGate.answer`), so each caller learns which response is its own.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Final, Literal

from voxwire.protocol.client_events import ResponseCreateParams

__all__ = [
    "TRANSITIONS",
    "GateState",
    "GateTrigger",
    "LostRace",
    "ResponseGate",
    "ResponseRequest",
    "ResponseSource",
    "next_state",
]

ResponseSource = Literal["response", "tool_response", "guardrail", "say"]
"""Why a response was asked for: ``response`` (the application: a message, ``create_response``,
a raw ``response.create``), ``tool_response`` (the follow-up after tool outputs), ``guardrail``
(the retry after an output guardrail tripped), ``say`` (speak a given text)."""


class GateState(enum.Enum):
    IDLE = "idle"
    """No response in progress and none requested: a ``response.create`` may go now."""
    REQUESTED = "requested"
    """A ``response.create`` is on its way; its ``response.created`` has not arrived."""
    ACTIVE = "active"
    """At least one response is in progress."""


class GateTrigger(enum.Enum):
    CREATE_SENT = "create_sent"
    RESPONSE_CREATED = "response_created"
    LAST_RESPONSE_DONE = "last_response_done"
    CREATE_FAILED = "create_failed"


IDLE, REQUESTED, ACTIVE = GateState.IDLE, GateState.REQUESTED, GateState.ACTIVE

#: The transitions, as data. A pair not listed here leaves the state as it is.
TRANSITIONS: Final[dict[tuple[GateState, GateTrigger], GateState]] = {
    (IDLE, GateTrigger.CREATE_SENT): REQUESTED,
    (IDLE, GateTrigger.RESPONSE_CREATED): ACTIVE,
    (REQUESTED, GateTrigger.RESPONSE_CREATED): ACTIVE,
    (REQUESTED, GateTrigger.CREATE_FAILED): IDLE,
    (ACTIVE, GateTrigger.RESPONSE_CREATED): ACTIVE,
    (ACTIVE, GateTrigger.LAST_RESPONSE_DONE): IDLE,
}


def next_state(state: GateState, trigger: GateTrigger) -> GateState:
    """The state after ``trigger``: the table's answer, or ``state`` for an unlisted pair."""
    return TRANSITIONS.get((state, trigger), state)


@dataclass(frozen=True, slots=True)
class ResponseRequest:
    """One ``response.create`` asked for: its parameters (``None``: the session's defaults), its
    source, and the caller's tags (every request it absorbed adds its own)."""

    params: ResponseCreateParams | None
    source: ResponseSource = "response"
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LostRace:
    """A create rejected after a ``response.created`` (started by server VAD) had been taken as
    its answer: its parameters, and whether that response saw every item the create was for
    (none of the items unanswered when the create went out was still unanswered when the
    response started)."""

    request: ResponseRequest
    winner_saw_items: bool
    response_id: str = ""
    """The response that was taken as the create's answer (the winner)."""

    @property
    def params(self) -> ResponseCreateParams | None:
        return self.request.params


class ResponseGate:
    """The gate's state, the responses in progress, the create in flight and the held requests.

    Pure bookkeeping: it decides, the caller (``RealtimeProtocol``) sends.
    """

    def __init__(self) -> None:
        self._state = IDLE
        self._in_progress: list[str] = []
        self._create_event_id: str | None = None
        self._create: ResponseRequest = ResponseRequest(None)
        self._create_waits_for: frozenset[str] = frozenset()
        self._held: list[ResponseRequest] = []
        # The create the last response.created was taken to answer, by its event_id.
        self._presumed: tuple[str, LostRace] | None = None

    @property
    def state(self) -> GateState:
        return self._state

    @property
    def in_progress(self) -> tuple[str, ...]:
        """Ids of the responses in progress, oldest first."""
        return tuple(self._in_progress)

    @property
    def create_event_id(self) -> str | None:
        """``event_id`` of the ``response.create`` in flight, if any."""
        return self._create_event_id

    @property
    def held(self) -> tuple[ResponseRequest, ...]:
        """Requests waiting for the gate, oldest first."""
        return tuple(self._held)

    @property
    def unanswered(self) -> tuple[ResponseRequest, ...]:
        """Every request no response has answered yet: the one in flight, then the held ones."""
        in_flight = (self._create,) if self._create_event_id is not None else ()
        return (*in_flight, *self._held)

    def _fire(self, trigger: GateTrigger) -> None:
        self._state = next_state(self._state, trigger)

    def hold(self, request: ResponseRequest) -> bool:
        """Keep a request for later; ``False`` when a held request with equal parameters
        absorbs it (asking twice for the same response is one request; the first source
        stays, the tags join)."""
        for index, held in enumerate(self._held):
            if held.params == request.params:
                self._held[index] = replace(held, tags=held.tags + request.tags)
                return False
        self._held.append(request)
        return True

    def release(self) -> ResponseRequest | None:
        """The oldest held request if the gate is IDLE, else ``None``."""
        if self._state is not IDLE or not self._held:
            return None
        return self._held.pop(0)

    def create_sent(
        self,
        event_id: str,
        request: ResponseRequest | None = None,
        *,
        waits_for: frozenset[str] = frozenset(),
    ) -> None:
        """A create went out; ``waits_for``: the items whose creates were still unanswered."""
        self._create_event_id = event_id
        self._create = request if request is not None else ResponseRequest(None)
        self._create_waits_for = waits_for
        self._fire(GateTrigger.CREATE_SENT)

    def response_created(
        self, response_id: str, *, unanswered_items: frozenset[str] = frozenset()
    ) -> ResponseSource | None:
        """:meth:`answer`, for the source only."""
        request = self.answer(response_id, unanswered_items=unanswered_items)
        return request.source if request is not None else None

    def answer(
        self, response_id: str, *, unanswered_items: frozenset[str] = frozenset()
    ) -> ResponseRequest | None:
        """A response started; ``unanswered_items``: items whose creates the server has not
        answered yet (it cannot have seen them). Returns the request it answers (the create in
        flight), or ``None`` for a response nobody here asked for."""
        if response_id not in self._in_progress:
            self._in_progress.append(response_id)
        request: ResponseRequest | None = None
        if self._create_event_id is not None:
            seen = not self._create_waits_for & unanswered_items
            lost = LostRace(self._create, seen, response_id)
            self._presumed = (self._create_event_id, lost)
            request = self._create
        self._create_event_id = None
        self._fire(GateTrigger.RESPONSE_CREATED)
        return request

    def response_done(self, response_id: str) -> None:
        if response_id not in self._in_progress:
            return
        self._in_progress.remove(response_id)
        if not self._in_progress:
            self._fire(GateTrigger.LAST_RESPONSE_DONE)

    def error(self, event_id: str | None) -> ResponseRequest | None:
        """An ``error`` event; the request whose create it names (then failed), if any."""
        if event_id is not None and event_id == self._create_event_id:
            self._create_event_id = None
            self._fire(GateTrigger.CREATE_FAILED)
            return self._create
        return None

    def lost_race(self, event_id: str | None) -> LostRace | None:
        """The create named by ``event_id`` was rejected after a ``response.created`` had been
        taken as its answer (server VAD started that response first): what is known of it,
        once; ``None`` for any other event id."""
        if self._presumed is None or event_id != self._presumed[0]:
            return None
        lost = self._presumed[1]
        self._presumed = None
        return lost

    def requeue(self, request: ResponseRequest) -> None:
        """Ask again, before the held requests (it was asked for first); a held request with
        equal parameters merges into it (its tags join)."""
        merged = [held for held in self._held if held.params == request.params]
        self._held = [held for held in self._held if held.params != request.params]
        tags = request.tags + tuple(tag for held in merged for tag in held.tags)
        self._held.insert(0, replace(request, tags=tags))
