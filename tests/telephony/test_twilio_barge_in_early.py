"""A caller who barges in before the answer's first audio (issue 30), through the Twilio bridge.

A simulated Twilio call (real loopback websockets) through ``PhoneServer`` to the local server,
whose voice is held (tests/voices.py): the answer is announced and has no audio when the caller
speaks again. Server VAD hears the caller (``speech_started``: the bridge clears the line, the
server cancels); the voice is then let go. Nothing of that answer was heard, so the session
deletes it: the model does not keep words the caller never heard.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from tests.voices import HeldEngine
from voxwire.asyncio import RealtimeSession
from voxwire.asyncio import events as ev
from voxwire.protocol import items
from voxwire.protocol import server_events as se
from voxwire.server import Pacing, RealtimeServer
from voxwire.telephony.twilio import CallInfo, PhoneServer, TwilioBridge
from voxwire.testing import TwilioCallSimulator

from .twilio_helpers import _CALLS, AGENT, CONFIG, SCENARIO, SHORT_ANSWER, run, spoken


@dataclass
class Seen:
    """What the bridge's session reported (raw server events)."""

    answers: list[str] = field(default_factory=list)  # assistant messages announced, in order
    speech_started: int = 0
    deleted: list[str] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)
    audio_done: list[str] = field(default_factory=list)
    errors: list[ev.ErrorEvent] = field(default_factory=list)

    async def on_event(
        self, call: CallInfo, session: RealtimeSession, event: ev.SessionEvent
    ) -> None:
        if isinstance(event, ev.ErrorEvent):
            self.errors.append(event)
        if not isinstance(event, ev.RawServerEvent):
            return
        raw = event.event
        if isinstance(raw, se.ResponseOutputItemAdded) and _is_answer(raw.item):
            self.answers.append(str(raw.item.id))
        elif isinstance(raw, se.InputAudioBufferSpeechStarted):
            self.speech_started += 1
        elif isinstance(raw, se.ConversationItemDeleted):
            self.deleted.append(raw.item_id)
        elif isinstance(raw, se.ConversationItemTruncated):
            self.truncated.append(raw.item_id)
        elif isinstance(raw, se.ResponseOutputAudioDone):
            self.audio_done.append(raw.item_id)


def _is_answer(item: items.Item) -> bool:
    return isinstance(item, items.MessageItem) and item.role == "assistant"


async def early_barge_in() -> tuple[Seen, TwilioCallSimulator, bool]:
    _CALLS.clear()
    first, second = spoken("Hello, where is my order?"), spoken("Sorry, when exactly?")
    seen, engine = Seen(), HeldEngine()
    fast = Pacing(audio_pace=0, text_tokens_per_s=0)
    async with RealtimeServer(scenario=SCENARIO, pacing=fast, tts=engine, transcriber=None) as srv:
        bridge = TwilioBridge(
            AGENT,
            url=srv.url(),
            config=CONFIG,
            on_event=seen.on_event,
            session_options={"raw_server_events": True},
        )
        async with PhoneServer(bridge) as phone:
            call = TwilioCallSimulator(phone.url("/media", scheme="ws"))
            async with call:
                await call.listen(200)
                await call.say(first, 8000)
                await call.until(lambda: len(seen.answers) == 1)  # announced; its voice is held
                saying = asyncio.create_task(call.say(second, 8000))
                await call.until(lambda: seen.speech_started >= 2)
                engine.release.set()
                await saying
                await call.until(
                    lambda: (
                        len(seen.answers) == 2
                        and seen.answers[1] in seen.audio_done
                        and call.line_idle
                    )
                )
                await call.listen(300)
                server_keeps_first = any(
                    seen.answers[0] in connection.session.conversation
                    for connection in srv.connections
                )
    return seen, call, server_keeps_first


def test_an_answer_the_caller_cut_before_hearing_it_is_deleted() -> None:
    seen, call, server_keeps_first = run(early_barge_in())
    cut = seen.answers[0]
    assert seen.deleted == [cut]
    assert cut not in seen.truncated
    assert not server_keeps_first
    assert not seen.errors
    assert len(call.clears) == 1  # the bridge cleared the line when the caller spoke
    # What the caller heard of the agent is the next answer alone (within a 20 ms frame: the
    # bridge sends whole frames), nothing of the cut one.
    assert 0 < call.agent_samples_heard <= len(spoken(SHORT_ANSWER, "alloy")) + 160
