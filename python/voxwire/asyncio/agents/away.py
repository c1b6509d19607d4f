"""The user's ``away`` state: the silence counted on the session's clock, and the agent's
``on_user_away`` hook (check in, or hang up).

The state machine is the translator's (``EventTranslator.check_away``): ``away`` once the
user has been listening and the agent waiting for them for ``user_away_timeout_s`` on the
session's clock (``clock=``: a virtual clock moves it as it moves everything else). Nothing
on the wire says "time passed", so this part asks: at every server event, and on a short
wall-clock tick while the session is open (a clock has no callback). The user's next speech
ends ``away`` (``user_state_changed`` to ``speaking``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Callable
from typing import Any, Final

import voxwire.asyncio.events as ev
from voxwire.agents.agent import RealtimeAgent
from voxwire.asyncio.errors import SessionClosed
from voxwire.asyncio.events.translate import EventTranslator
from voxwire.asyncio.supervisor import OwnedTasks
from voxwire.protocol import server_events as se

__all__ = ["UserAwayWatch"]

log = logging.getLogger("voxwire.session")

#: The longest wall-clock wait between two checks.
MAX_TICK_S: Final = 0.25


class UserAwayWatch:
    """Checks the translator's away state and runs ``agent.on_user_away(session)`` (as an
    owned task) each time the user goes away. ``session``: what the hook is given."""

    def __init__(
        self,
        translator: EventTranslator,
        timeout_s: float,
        emit: Callable[[ev.SessionEvent], None],
        tasks: OwnedTasks,
        agent: Callable[[], RealtimeAgent | None],
        session: Any,
    ) -> None:
        self._translator = translator
        self._tick_s = min(MAX_TICK_S, timeout_s / 4)
        self._emit = emit
        self._tasks = tasks
        self._agent = agent
        self._session = session
        self._ticking = False

    def on_server_event(self, event: se.ReceivedEvent) -> None:
        if not self._ticking and not self._tasks.closed:
            self._ticking = True  # the session is open: count silence between events too
            self._tasks.spawn(self._tick(), name="voxwire-user-away", kind="agent")
        self.check()

    def check(self) -> None:
        for out in self._translator.check_away():
            self._emit(out)
            if isinstance(out, ev.UserStateChangedEvent) and out.new_state == "away":
                self._run_hook()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self._tick_s)
            self.check()

    def _run_hook(self) -> None:
        agent = self._agent()
        hook = agent.on_user_away if agent is not None else None
        if hook is None:
            return
        with contextlib.suppress(SessionClosed):  # closing: nobody to check on
            self._tasks.spawn(self._call(hook), name="voxwire-on-user-away", kind="agent")

    async def _call(self, hook: Callable[[Any], Any]) -> None:
        try:
            result = hook(self._session)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:  # the application's hook: reported, the session goes on
            log.error("the agent's on_user_away failed", exc_info=exc)
            self._emit(ev.failure("the agent's on_user_away", exc, "agent"))
