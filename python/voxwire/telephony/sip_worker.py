"""A SIP worker: one of N processes answering Realtime SIP calls from one shared store, taking
over the calls of a worker that died.

Each worker serves the ``realtime.call.incoming`` webhook (:attr:`SipWorker.webhook`, an ASGI
app: put any HTTP load balancer in front of the workers). A worker that gets a call accepts it
with the agent, lists it in the calls table (:class:`~voxwire.telephony.calls_table.CallsTable`)
and attaches a session to it by ``call_id`` that records the conversation in the store under
the call's id — the session holds the conversation's lease (fenced, renewed every third of
``lease_ttl_s``), which is what *owning the call* means.

Every worker also scans the table (:meth:`SipWorker.run`): for each active call it does not
own, it tries ``RealtimeSession.resume(store, call_id, call_id=call_id, ...)``, which takes the
lease first — refused at once while the owner lives; granted when the owner's lease ran out
(another machine: after at most ``lease_ttl_s``) or at once when the owner was a process of this
host that no longer runs. The resumed session attaches a new sideband to the call (the hosted
session kept the call, its media and its conversation: nothing is replayed) and takes up what
the store says was pending: approvals are asked again, an output computed but not delivered is
delivered (the tool does not run again). A function call with neither output nor approval — its
tool was running when the owner died, it may or may not have done its work — is **not** run
again: it is answered with :data:`LOST_OUTPUT`, and the model goes on (a tool runs at most once;
write tools whose effect must happen exactly once to be idempotent by ``call_id``).

A session that ends normally (the call hung up or transferred) marks its call ended; a worker
that dies does not, and its calls are taken over. A worker that finds its lease taken over (it
stalled past ``lease_ttl_s``) leaves the call; a call that refuses
:data:`MAX_ATTACH_FAILURES` attachments in a row (hung up while nobody owned it) is marked
ended. See docs/telephony.md, "Failover between
workers".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from voxwire.agents.agent import RealtimeAgent
from voxwire.asyncio import RealtimeSession, SessionEvent
from voxwire.exceptions import (
    CallControlError,
    ConversationHeld,
    ConversationNotFound,
    LeaseLost,
    StoreError,
)
from voxwire.protocol.sip import RealtimeCallIncoming
from voxwire.store import ConversationStore, orphaned_call_ids
from voxwire.store.lease import DEFAULT_LEASE_TTL_S
from voxwire.telephony.calls_table import CallsTable
from voxwire.telephony.sip import SipCalls
from voxwire.telephony.webhooks import Receive, Scope, Send, WebhookApp, respond_json

__all__ = ["LOST_OUTPUT", "SipWorker"]

log = logging.getLogger("voxwire.telephony.worker")

#: Attachments to a call that may fail in a row (the lease taken, the sideband refused) before
#: the call is marked ended: a call hung up while no worker owned it.
MAX_ATTACH_FAILURES: Final = 5

#: The output a taken-over call's interrupted tool call gets (its tool is not run again).
LOST_OUTPUT: Final = {
    "error": "interrupted: the worker running this tool stopped before it returned; it was not "
    "run again, so it may or may not have done its work"
}


class SipWorker:
    """One worker of a pool (module docstring). ``url``: the Realtime websocket URL the
    sidebands attach to (``wss://api.openai.com/v1/realtime``; a local server's
    ``server.base_url + "/realtime"``); ``new_call_grace_s`` (default ``lease_ttl_s``): how
    long a call just accepted is left to the worker that accepted it (its session takes the
    lease in that time; were it to die before, the call is taken over after this);
    ``session_options``: more ``RealtimeSession`` options
    (not ``store``, ``conversation_id``, ``call_id``); ``on_event``: called with the call id and
    each event of the call's session (to watch a call: its tools, its transcript)."""

    def __init__(
        self,
        agent: RealtimeAgent,
        *,
        store: ConversationStore,
        calls_table: CallsTable,
        calls: SipCalls,
        secret: str,
        url: str,
        lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
        scan_every_s: float = 0.5,
        new_call_grace_s: float | None = None,
        session_options: Mapping[str, Any] | None = None,
        on_event: Callable[[str, SessionEvent], None] | None = None,
    ) -> None:
        self.agent, self.store, self.table, self.calls = agent, store, calls_table, calls
        self._url, self._ttl_s, self._scan_s = url, lease_ttl_s, scan_every_s
        # A call just listed is its accepting worker's until its session holds the lease.
        self._grace_s = lease_ttl_s if new_call_grace_s is None else new_call_grace_s
        self._options = dict(session_options or {})
        self._on_event = on_event
        self.webhook = WebhookApp(secret, self._incoming)
        self.owned: dict[str, asyncio.Task[None]] = {}  # call id -> the task serving it
        self.taken_over: list[str] = []  # calls this worker took over from another
        self._failed: dict[str, int] = {}  # call id -> attachments failed in a row
        self.draining = False

    # --- the HTTP face: the webhook, the health endpoint ------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The worker as an ASGI app: ``GET /health`` (200 with the calls it owns; 503 once
        draining, so a load balancer stops sending it calls), every other request to the
        webhook (:attr:`webhook`) — refused with 503 while draining (the service retries a
        webhook it did not get a 2xx for: through the load balancer, on a live worker)."""
        if scope["type"] == "http" and scope.get("path") == "/health":
            state = "draining" if self.draining else "ok"
            status = 503 if self.draining else 200
            await respond_json(send, status, {"status": state, "calls": sorted(self.owned)})
            return
        if scope["type"] == "http" and self.draining:
            await respond_json(send, 503, {"error": "draining: this worker takes no new calls"})
            return
        await self.webhook(scope, receive, send)

    async def drain(self, finish_within_s: float = 0.0) -> None:
        """Stop taking calls (new ones and taken-over ones), give the calls it owns
        ``finish_within_s`` to end, then hand the rest over: their sessions close and release
        their leases (the calls stay up), and the other workers' next scan takes them."""
        self.draining = True
        tasks = list(self.owned.values())
        if tasks and finish_within_s > 0:
            await asyncio.wait(tasks, timeout=finish_within_s)
        await self.aclose()

    def _session(self, call_id: str, *, resume: bool) -> RealtimeSession:
        options: dict[str, Any] = dict(
            self._options,
            url=self._url,
            call_id=call_id,
            call_control=self.calls,
            lease_ttl_s=self._ttl_s,
        )
        if resume:
            return RealtimeSession.resume(self.store, call_id, agent=self.agent, **options)
        return RealtimeSession(self.agent, store=self.store, conversation_id=call_id, **options)

    # --- a new call -------------------------------------------------------------------------------

    async def _incoming(self, event: RealtimeCallIncoming) -> None:
        call_id = event.call_id
        try:
            await self.calls.accept(call_id, self.agent)
        except CallControlError as exc:
            log.warning("accepting call %s failed: %s", call_id, exc)
            return
        # Stored and listed before anything else: if this worker dies from here on, the call is
        # found and taken over.
        with contextlib.suppress(StoreError):
            await self.store.create(call_id, agent=self.agent.name)
        await self.table.add(call_id)
        session = self._session(call_id, resume=False)
        try:
            await session.connect()
        except ConversationHeld:
            return  # another worker's scan took it first: it is theirs
        self._serve(call_id, session)

    # --- taking calls over ------------------------------------------------------------------------

    async def run(self) -> None:
        """Scan for calls to take over every ``scan_every_s`` until cancelled or draining."""
        while not self.draining:
            try:
                await self.scan()
            except (StoreError, OSError) as exc:
                log.warning("scanning for calls to take over failed: %s", exc)
            await asyncio.sleep(self._scan_s)

    async def scan(self) -> list[str]:
        """One scan: take over every active call whose owner is gone; the calls taken (none
        while draining)."""
        taken: list[str] = []
        if self.draining:
            return taken
        for call_id in await self.table.active(listed_for_s=self._grace_s):
            if call_id in self.owned:
                continue
            if await self._take_over(call_id):
                taken.append(call_id)
        return taken

    async def _take_over(self, call_id: str) -> bool:
        session = self._session(call_id, resume=True)
        try:
            await session.connect()  # the lease first: refused at once while the owner lives
        except (ConversationHeld, ConversationNotFound):
            await session.close()
            return False
        except Exception as exc:  # the call is gone (hung up meanwhile), the server refused…
            await session.close()
            failures = self._failed[call_id] = self._failed.get(call_id, 0) + 1
            log.warning("taking over call %s failed (%d): %s", call_id, failures, exc)
            if failures >= MAX_ATTACH_FAILURES:
                # Hung up while nobody owned it (the service refuses a sideband on an ended
                # call): nobody will ever attach again.
                await self.table.end(call_id)
            return False
        self._failed.pop(call_id, None)
        self.taken_over.append(call_id)
        log.info("took over call %s", call_id)
        await self._answer_lost_calls(session, call_id)
        self._serve(call_id, session)
        return True

    async def _answer_lost_calls(self, session: RealtimeSession, call_id: str) -> None:
        """Answer the function calls whose tool was running when the owner died (module
        docstring): not run again; the model goes on."""
        snapshot = await self.store.load(call_id)
        lost = orphaned_call_ids(snapshot)
        if not lost:
            return
        for lost_id in sorted(lost):
            await session.send_raw(
                {
                    "type": "conversation.item.create",
                    "item": {
                        "type": "function_call_output",
                        "call_id": lost_id,
                        "output": json.dumps(LOST_OUTPUT),
                    },
                }
            )
        await session.create_response()

    # --- serving a call ---------------------------------------------------------------------------

    def _serve(self, call_id: str, session: RealtimeSession) -> None:
        task = asyncio.create_task(self._until_over(call_id, session), name=f"voxwire-{call_id}")
        self.owned[call_id] = task
        task.add_done_callback(lambda _: self.owned.pop(call_id, None))

    async def _until_over(self, call_id: str, session: RealtimeSession) -> None:
        try:
            async for event in session:
                if self._on_event is not None:
                    self._on_event(call_id, event)
                if event.type == "error" and isinstance(event.exception, LeaseLost):
                    # Taken over (this worker stalled past its lease): the call is another
                    # worker's now; this one stops acting on it.
                    log.error("call %s was taken over by another worker: leaving it", call_id)
                    return
                if event.type == "close":
                    if event.error is None:  # the call ended (not a lost lease, not a failure)
                        await self.table.end(call_id)
                    return
        finally:
            await session.close()

    async def aclose(self) -> None:
        """Stop serving: the sessions close (their calls stay up; another worker takes them
        over once their leases are released or run out) and the webhook's handlers end."""
        await self.webhook.aclose()
        tasks = list(self.owned.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
