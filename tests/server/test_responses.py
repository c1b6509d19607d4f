"""response.create / response.cancel: GA ordering, tools, one active response, out of band."""

from __future__ import annotations

import asyncio
import json

from voxwire.server.engines.responder import Output, Turn

from .helpers import SLOW, client_of, run, serving

TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]


def types(events: list[dict]) -> list[str]:
    return [event["type"] for event in events]


def test_text_turn_follows_ga_ordering_with_usage_and_one_rate_limits() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await client.say("hello there")
            events = await client.respond()
            kinds = [k for k in types(events) if k != "response.output_text.delta"]
            assert kinds == [
                "response.created",
                "response.output_item.added",
                "conversation.item.added",
                "response.content_part.added",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "conversation.item.done",
                "rate_limits.updated",
                "response.done",
            ]
            deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
            assert "".join(deltas) == "Hello! How can I help you today?"
            assert len(deltas) > 1
            done = events[-1]["response"]
            assert done["status"] == "completed"
            assert done["usage"]["total_tokens"] == (
                done["usage"]["input_tokens"] + done["usage"]["output_tokens"]
            )
            assert done["output"][0]["content"] == [
                {"type": "output_text", "text": "Hello! How can I help you today?"}
            ]
            created = events[0]["response"]
            assert created["status"] == "in_progress"
            assert created["output"] == []
            assert created["conversation_id"].startswith("conv_")
            # The assistant item chains after the user item.
            user_id = client.received[-len(events) - 1]["item"]["id"]
            assert events[2]["previous_item_id"] == user_id

    run(body())


def test_tool_call_round_trip_uses_the_output_in_the_reply() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await client.update(tools=TOOLS)
            await client.say("what is the weather?")
            events = await client.respond()
            assert "response.function_call_arguments.delta" in types(events)
            done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
            assert done["name"] == "get_weather"
            assert json.loads(done["arguments"]) == {"city": "Paris"}
            await client.send(
                {
                    "type": "conversation.item.create",
                    "item": {
                        "type": "function_call_output",
                        "call_id": done["call_id"],
                        "output": json.dumps({"temperature": 21}),
                    },
                }
            )
            await client.until("conversation.item.done")
            events = await client.respond()
            text = next(e for e in events if e["type"] == "response.output_text.done")["text"]
            assert text == "It is 21 degrees in Paris."

    run(body())


def test_undeclared_tool_is_not_called_and_unknown_call_id_is_an_error() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await client.say("weather")
            events = await client.respond()
            assert "response.function_call_arguments.done" not in types(events)
            await client.send(
                {
                    "type": "conversation.item.create",
                    "item": {"type": "function_call_output", "call_id": "call_x", "output": "{}"},
                }
            )
            error = (await client.until("error"))[-1]["error"]
            assert error["code"] == "invalid_tool_call_id"

    run(body())


def test_second_response_while_active_is_rejected_and_cancel_ends_it() -> None:
    async def body() -> None:
        async with serving(pacing=SLOW) as server, client_of(server) as client:
            await client.say("tell me a story")
            await client.send({"type": "response.create"})
            created = (await client.until("response.created"))[-1]["response"]
            await client.send({"type": "response.create", "event_id": "second"})
            error = (await client.until("error"))[-1]["error"]
            assert error["code"] == "conversation_already_has_active_response"
            assert created["id"] in error["message"]
            assert error["event_id"] == "second"
            await client.send({"type": "response.cancel"})
            events = await client.until("response.done")
            done = events[-1]["response"]
            assert done["status"] == "cancelled"
            assert done["status_details"] == {"type": "cancelled", "reason": "client_cancelled"}
            assert done["output"][0]["status"] == "incomplete"
            assert "response.output_item.done" in types(events)
            # The gate is open again at once.
            again = await client.respond(output_modalities=["text"], instructions="x")
            assert again[-1]["response"]["status"] in ("completed", "cancelled")

    run(body())


def test_cancel_without_active_response_is_an_error() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await client.send({"type": "response.cancel", "event_id": "c1"})
            error = (await client.until("error"))[-1]["error"]
            assert error["code"] == "response_cancel_not_active"
            assert error["event_id"] == "c1"

    run(body())


def test_out_of_band_response_runs_beside_the_active_one_and_stays_out() -> None:
    async def body() -> None:
        async with serving(pacing=SLOW) as server, client_of(server) as client:
            await client.say("tell me a story")
            await client.send({"type": "response.create"})
            await client.until("response.created")
            await client.send(
                {
                    "type": "response.create",
                    "response": {
                        "conversation": "none",
                        "metadata": {"purpose": "classify"},
                        "input": [
                            {
                                "type": "message",
                                "role": "user",
                                "content": [{"type": "input_text", "text": "hello"}],
                            }
                        ],
                    },
                }
            )
            done_events = []
            while len(done_events) < 2:
                event = await client.recv()
                if event["type"] == "response.done":
                    done_events.append(event["response"])
                    if event["response"]["conversation_id"] is not None:
                        continue
                assert not (
                    event["type"] == "conversation.item.added"
                    and event["item"].get("role") == "assistant"
                    and "hello" in json.dumps(event)
                )
            oob = next(r for r in done_events if r["conversation_id"] is None)
            assert oob["metadata"] == {"purpose": "classify"}
            assert oob["output"][0]["content"][0]["text"].startswith("Hello!")
            # Only the in-conversation assistant item joined the conversation.
            oob_item = oob["output"][0]["id"]
            await client.send({"type": "conversation.item.retrieve", "item_id": oob_item})
            error = (await client.until("error"))[-1]["error"]
            assert error["code"] == "item_not_found"

    run(body())


def test_max_output_tokens_ends_the_response_incomplete() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await client.say("tell me a story")
            events = await client.respond(max_output_tokens=5)
            done = events[-1]["response"]
            assert done["status"] == "incomplete"
            assert done["status_details"]["reason"] == "max_output_tokens"
            assert done["usage"]["output_tokens"] <= 7

    run(body())


def test_response_instructions_and_input_override_the_context() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await client.say("hello")
            user = client.received[-1]["item"]["id"]
            events = await client.respond(input=[{"type": "item_reference", "id": user}])
            assert events[-1]["response"]["output"][0]["content"][0]["text"].startswith("Hello")
            await client.send({"type": "response.create", "response": {"conversation": "x"}})
            error = (await client.until("error"))[-1]["error"]
            assert error["param"] == "response.conversation"

    run(body())


def test_malformed_events_get_errors_and_the_session_survives() -> None:
    frames = [
        "{not json",
        "[1, 2]",
        json.dumps({"event_id": "e1"}),
        json.dumps({"type": "nope", "event_id": "e2"}),
        json.dumps({"type": "conversation.item.delete", "item_id": 5, "event_id": "e3"}),
        json.dumps({"type": "conversation.item.retrieve", "event_id": "e4"}),
        json.dumps({"type": "input_audio_buffer.append", "audio": "***", "event_id": "e5"}),
        json.dumps({"type": "output_audio_buffer.clear", "event_id": "e6"}),
    ]
    expected = [
        "invalid_json",
        "invalid_json",
        "invalid_event",
        "invalid_value",
        "invalid_type",
        "missing_required_parameter",
        "invalid_value",
        "invalid_value",
    ]

    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            for frame in frames:
                await client.ws.send(frame)
            codes = []
            for _ in frames:
                error = (await client.until("error"))[-1]["error"]
                codes.append(error["code"])
            assert codes == expected
            await client.say("hello")
            events = await client.respond()
            assert events[-1]["response"]["status"] == "completed"

    run(body())


def test_a_failing_responder_fails_its_response_not_the_session() -> None:
    class Broken:
        async def respond(self, turn: object) -> list:
            raise RuntimeError("model server down")

    async def body() -> None:
        async with serving(scenario=None, responder=Broken()) as server, client_of(server) as c:
            events = await c.respond()
            done = events[-1]["response"]
            assert done["status"] == "failed"
            assert "model server down" in done["status_details"]["error"]["message"]
            await asyncio.sleep(0)
            await c.update(instructions="still here")

    run(body())


class _Thinking:
    """A responder that never makes up its mind (a chat endpoint that hangs)."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.abandoned = asyncio.Event()

    async def respond(self, turn: Turn) -> list[Output]:
        self.asked.set()
        try:
            await asyncio.Event().wait()
        finally:
            self.abandoned.set()
        raise AssertionError("unreachable")


def test_cancel_does_not_wait_for_a_responder_still_deciding() -> None:
    thinking = _Thinking()

    async def body() -> None:
        async with serving(responder=thinking) as server, client_of(server) as client:
            await client.send({"type": "response.create"})
            await client.until("response.created")
            await asyncio.wait_for(thinking.asked.wait(), 5)
            await client.send({"type": "response.cancel"})
            done = (await client.until("response.done"))[-1]["response"]
            assert done["status"] == "cancelled"
            assert thinking.abandoned.is_set()
            # The connection is free: the next request is answered.
            await client.send({"type": "response.cancel", "event_id": "again"})
            error = (await client.until("error"))[-1]["error"]
            assert error["code"] == "response_cancel_not_active"

    run(body())
