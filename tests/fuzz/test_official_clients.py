"""(e) Clients nobody here wrote survive the local server, and every frame they get is valid:
the official ``openai`` client (``client.realtime.connect()``, ``client.live.connect()``) and
openai-agents' ``RealtimeRunner``, each in a normal flow (tool call and output, text turns),
then sending seeded mutations of client events through its own raw-send API, then a clean turn.

Every frame received validates strictly against the official types (the concrete class of its
``type``, no field the class does not define, at any depth: ``check_official`` for Realtime, the
same for ``openai.types.live.ServerEvent``), the client's own parser reads it, errors are
``invalid_request_error``, the connection stays open and nothing is logged as an error.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
from typing import Any

import pydantic
from openai import AsyncOpenAI
from openai.types.live import ServerEvent as LiveServerEvent

from tests.live.mutations import mutate
from tests.live.samples import CLIENT as LIVE_CLIENT
from voxwire.server import RealtimeServer

from ..server.helpers import FAST, WEATHER, _extras, check_official
from .conftest import CASES
from .mutations import client_script, mutate_frame, mutate_value
from .test_http_fuzz import ErrorLog

BASE_SEED = int(os.environ.get("VOXWIRE_FUZZ_SEED", "19"))
FRAMES = int(os.environ.get("VOXWIRE_FUZZ_OFFICIAL", "150"))
TEXT = {
    "type": "realtime",
    "output_modalities": ["text"],
    "audio": {"input": {"turn_detection": None}},
}
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
_LIVE = pydantic.TypeAdapter(LiveServerEvent)


def run_logged(body: Any, timeout_s: float = 90.0) -> None:
    """Run ``body``; nothing of voxwire or websockets logged as an error (the clients' own
    complaints about the input they were given to send are theirs)."""
    errors = ErrorLog()
    logging.getLogger().addHandler(errors)
    try:
        asyncio.run(asyncio.wait_for(body, timeout_s))
    finally:
        logging.getLogger().removeHandler(errors)
    ours = [r for r in errors.records if r.name.startswith(("voxwire", "websockets"))]
    assert not ours, [(r.name, r.getMessage()[:200], r.exc_info) for r in ours]


class Official:
    """The official client's Realtime connection, every frame checked before it is parsed."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    async def recv(self) -> Any:
        raw = await asyncio.wait_for(self.connection.recv_bytes(), 20)
        check_official(json.loads(raw))
        event = self.connection.parse_event(raw)  # the client's own parser
        CASES["official client frames validated: realtime"] += 1
        return event

    async def until(self, kind: str, event_id: str | None = None) -> list[Any]:
        seen = []
        while True:
            event = await self.recv()
            seen.append(event)
            if event.type == "error":
                assert event.error.type == "invalid_request_error", event
            if event.type == kind and (event_id is None or event.error.event_id == event_id):
                return seen

    async def turn(self, text: str) -> list[Any]:
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        await self.connection.conversation.item.create(item=item)
        await self.until("conversation.item.done")
        await self.connection.response.create()
        return await self.until("response.done")


def test_the_official_realtime_client_gets_valid_frames_through_hostile_input() -> None:
    rng = random.Random(BASE_SEED * 1000 + 400)

    async def body() -> None:
        async with RealtimeServer(
            tts=None, transcriber=None, pacing=FAST, scenario=WEATHER
        ) as server:
            client = AsyncOpenAI(api_key="sk-x", websocket_base_url=server.base_url)
            async with client.realtime.connect(model="gpt-realtime") as connection:
                live = Official(connection)
                await live.until("session.created")
                await connection.session.update(session={**TEXT, "tools": [WEATHER_TOOL]})
                await live.until("session.updated")
                done = (await live.turn("what is the weather"))[-1]
                (call,) = [o for o in done.response.output if o.type == "function_call"]
                output = {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": json.dumps({"temperature": 21}),
                }
                await connection.conversation.item.create(item=output)
                await connection.response.create()
                events = await live.until("response.done")
                text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
                assert text == "It is 21 degrees in Paris."
                for case in range(FRAMES):
                    kind, frame = mutate_frame(rng.choice(client_script()), rng)
                    await connection.send_raw(frame)
                    probe = f"probe_{case}"
                    await connection.conversation.item.retrieve(item_id="none", event_id=probe)
                    await live.until("error", probe)
                    CASES[f"official realtime client, mutated events sent: {kind}"] += 1
                await connection.session.update(session=TEXT)
                await live.until("session.updated")
                done = (await live.turn("hello"))[-1]
                assert done.response.status == "completed"
                assert len(server.connections) == 1
            await client.close()

    run_logged(body())


def check_live(raw: bytes) -> Any:
    """A Live frame: the official union's class for its type, no field it does not define."""
    event = _LIVE.validate_json(raw)
    extras = _extras(event)
    assert not extras, f"{event.type} has fields the official types do not define: {extras}"
    CASES["official client frames validated: live"] += 1
    return event


def test_the_official_live_client_gets_valid_frames_through_hostile_input() -> None:
    rng = random.Random(BASE_SEED * 1000 + 410)
    kinds = sorted(k for k in LIVE_CLIENT if k != "session.close")

    async def body() -> None:
        async with RealtimeServer(tts=None, transcriber=None, pacing=FAST) as server:
            http = server.base_url.replace("ws://", "http://")
            client = AsyncOpenAI(api_key="sk-x", base_url=http, websocket_base_url=server.base_url)
            async with client.live.connect() as connection:

                async def until(kind: str, client_event_id: str | None = None) -> Any:
                    while True:
                        event = check_live(await asyncio.wait_for(connection.recv_bytes(), 20))
                        if event.type == "error":
                            assert event.error.type == "invalid_request_error", event
                        if event.type == kind and (
                            client_event_id is None or event.client_event_id == client_event_id
                        ):
                            return event

                await connection.session.start(session={"model": "gpt-live-1"})
                await until("session.started")
                for case in range(FRAMES):
                    await connection.send_raw(mutate(rng, LIVE_CLIENT[rng.choice(kinds)]))
                    probe = f"probe_{case}"
                    await connection.decision.create(event_id=probe)
                    await until("error", probe)
                    CASES["official live client, mutated events sent"] += 1
                await connection.session.commentary.append(
                    content="Still here.", delegation_id=None
                )
                delta = await until("session.output_transcript.delta")
                assert delta.delta == "Still here."
            await client.close()

    run_logged(body())


def test_openai_agents_realtime_runner_survives_hostile_input_sent_through_it() -> None:
    from agents.realtime import RealtimeAgent as AgentsAgent
    from agents.realtime import RealtimeRunner
    from agents.realtime.model_inputs import RealtimeModelSendRawMessage

    rng = random.Random(BASE_SEED * 1000 + 420)

    async def body() -> None:
        async with RealtimeServer(
            tts=None, transcriber=None, pacing=FAST, scenario=WEATHER
        ) as server:
            runner = RealtimeRunner(AgentsAgent(name="assistant", instructions="Be brief."))
            config = {
                "url": server.url(),
                "api_key": "sk-x",
                "initial_model_settings": {"modalities": ["text"], "turn_detection": None},
            }
            session = await runner.run(model_config=config)  # type: ignore[arg-type]
            async with session:
                raw: list[dict[str, Any]] = []

                async def until_greeted() -> None:
                    async for event in session:
                        assert event.type != "error" or "invalid_request_error" in repr(event.error)
                        if (
                            event.type == "raw_model_event"
                            and event.data.type == "raw_server_event"
                        ):
                            check_official(event.data.data)
                            raw.append(event.data.data)
                            CASES["official client frames validated: openai-agents"] += 1
                            done = event.data.data
                            if done["type"] == "response.done":
                                texts = json.dumps(done["response"]["output"])
                                if "How can I help" in texts:
                                    return

                for _ in range(FRAMES // 3):
                    base = rng.choice(client_script())
                    kind, mutated = mutate_value(base, rng)
                    message = RealtimeModelSendRawMessage(message=mutated)  # type: ignore[arg-type]
                    await session.model.send_event(message)
                    CASES[f"openai-agents, mutated events sent: {kind}"] += 1
                await session.send_message("hello")
                await asyncio.wait_for(until_greeted(), 30)
                assert len(server.connections) == 1

    run_logged(body())
