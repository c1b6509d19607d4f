"""Endpoint health: which of a session's endpoints (``url`` + ``fallback_urls``) answer.

A session with several endpoints tries them in their configured order. Once one fails to open
(refused, timed out, a handshake error), it is marked *unhealthy*: later connections (a
reconnection, a renewal) try the healthy endpoints first, in their configured order, and the
unhealthy ones only after them. An unhealthy endpoint is probed in the background — one owned
task per endpoint, waiting ``PROBE_FIRST_S`` and doubling up to ``PROBE_MAX_S`` between probes —
and is preferred again (back in its configured place) as soon as a probe opens a connection to
it. A probe opens a connection the way the session does (same connector, key and headers) and
closes it at once: on the hosted service that is a Realtime session opened and closed, with
no audio and no response.

Each change is an ``endpoint_health`` event; ``session.endpoints`` lists every endpoint's
:class:`EndpointStatus`. With a single endpoint there are no events and nothing is probed
(there is nothing to prefer instead; a reconnect policy retries it); its status still counts
the failures. The probes stop when the session closes
(:meth:`EndpointHealth.aclose`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final

import voxwire.asyncio.events as ev
from voxwire.asyncio.supervisor import OwnedTasks

__all__ = ["PROBE_FIRST_S", "PROBE_MAX_S", "EndpointHealth", "EndpointStatus"]

log = logging.getLogger("voxwire.session")

#: Seconds before the first probe of an endpoint that failed; each failed probe doubles the wait.
PROBE_FIRST_S: Final = 0.5
#: The longest wait between two probes of one endpoint.
PROBE_MAX_S: Final = 30.0


@dataclass(frozen=True, kw_only=True, slots=True)
class EndpointStatus:
    """One endpoint as the session sees it now. ``failures``: consecutive failed connections
    and probes (0 once it answers); ``last_error``: the latest one's message; ``probing``: a
    background probe is scheduled or running."""

    url: str
    healthy: bool
    failures: int = 0
    last_error: str | None = None
    probing: bool = False


class EndpointHealth:
    """The health of ``urls`` (in configured order). ``probe(url)`` opens and closes one
    connection, raising if it cannot; ``emit`` gets the ``endpoint_health`` events."""

    def __init__(
        self,
        urls: Sequence[str],
        probe: Callable[[str], Awaitable[None]],
        emit: Callable[[ev.SessionEvent], None],
    ) -> None:
        self._urls = tuple(urls)
        self._probe = probe
        self._emit = emit
        self._status = {url: EndpointStatus(url=url, healthy=True) for url in self._urls}
        self._probes: dict[str, asyncio.Task[None]] = {}
        self._tasks = OwnedTasks(self._probe_crashed)

    def statuses(self) -> tuple[EndpointStatus, ...]:
        return tuple(self._status[url] for url in self._urls)

    def order(self) -> tuple[str, ...]:
        """The order to try: the healthy endpoints, then the unhealthy ones (each group in the
        configured order)."""
        healthy = tuple(url for url in self._urls if self._status[url].healthy)
        return healthy + tuple(url for url in self._urls if not self._status[url].healthy)

    def succeeded(self, url: str) -> None:
        """A connection to ``url`` opened."""
        was = self._status[url]
        self._status[url] = EndpointStatus(url=url, healthy=True)
        probe = self._probes.pop(url, None)
        if probe is not None and probe is not asyncio.current_task():
            probe.cancel()
        if not was.healthy and len(self._urls) > 1:
            log.info("endpoint %s answers again", url)
            self._emit(ev.EndpointHealthEvent(url=url, healthy=True))

    def failed(self, url: str, error: BaseException) -> None:
        """A connection to ``url`` failed to open: unhealthy, probed in the background (when
        there are other endpoints to prefer meanwhile)."""
        was = self._status[url]
        several = len(self._urls) > 1
        probing = several and not self._tasks.closed
        self._note_failure(url, error, probing=probing)
        if was.healthy and several:
            log.info("endpoint %s marked unhealthy: %s", url, error)
            self._emit(ev.EndpointHealthEvent(url=url, healthy=False, error=error))
        if probing and url not in self._probes:
            self._probes[url] = self._tasks.spawn(
                self._probing(url), name="voxwire-client-probe", kind="endpoint probe"
            )

    async def _probing(self, url: str) -> None:
        delay_s = PROBE_FIRST_S
        while True:
            await asyncio.sleep(delay_s)
            try:
                await self._probe(url)
            except Exception as exc:  # still down: wait longer
                log.debug("probing %s failed: %s", url, exc)
                self._note_failure(url, exc, probing=True)
                delay_s = min(delay_s * 2, PROBE_MAX_S)
                continue
            self._probes.pop(url, None)
            self.succeeded(url)
            return

    def _note_failure(self, url: str, error: BaseException, *, probing: bool) -> None:
        failures = self._status[url].failures + 1
        self._status[url] = EndpointStatus(
            url=url, healthy=False, failures=failures, last_error=str(error), probing=probing
        )

    def _probe_crashed(self, kind: str, exc: BaseException) -> None:
        self._emit(ev.failure(f"a background {kind}", exc, "session"))

    async def aclose(self) -> None:
        """Stop every probe and wait for it (idempotent)."""
        self._probes.clear()
        await self._tasks.aclose()
