"""session.created defaults and session.update: merge, errors, rules."""

from __future__ import annotations

import time

from .helpers import client_of, run, serving


def test_session_created_has_the_full_ga_session_with_defaults() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server, text_only=False) as client:
            session = client.received[0]["session"]
            assert session["object"] == "realtime.session"
            assert session["id"].startswith("sess_")
            assert session["expires_at"] > time.time() + 59 * 60
            assert session["output_modalities"] == ["audio"]
            assert session["audio"]["input"]["turn_detection"] == {
                "type": "server_vad",
                "threshold": 0.5,
                "prefix_padding_ms": 300,
                "silence_duration_ms": 200,
                "idle_timeout_ms": None,
                "create_response": True,
                "interrupt_response": True,
            }
            pcm = {"type": "audio/pcm", "rate": 24000}
            assert session["audio"]["input"]["format"] == pcm
            assert session["audio"]["output"]["format"] == pcm
            for key in ("tools", "tool_choice", "max_output_tokens", "tracing", "truncation"):
                assert key in session

    run(body())


def test_update_merges_and_answers_with_the_full_effective_session() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server, text_only=False) as client:
            updated = await client.update(
                instructions="Be brief.",
                audio={
                    "input": {"turn_detection": {"type": "server_vad", "silence_duration_ms": 500}},
                    "output": {"voice": "marin"},
                },
            )
            session = updated["session"]
            assert updated["type"] == "session.updated"
            assert session["instructions"] == "Be brief."
            assert session["audio"]["output"] == {
                "format": {"type": "audio/pcm", "rate": 24000},
                "voice": "marin",
                "speed": 1.0,
            }
            detection = session["audio"]["input"]["turn_detection"]
            assert detection["silence_duration_ms"] == 500
            assert detection["threshold"] == 0.5  # kept
            assert session["id"] == client.received[0]["session"]["id"]
            again = await client.update(audio={"input": {"turn_detection": None}})
            assert again["session"]["audio"]["input"]["turn_detection"] is None
            assert again["session"]["audio"]["output"]["voice"] == "marin"

    run(body())


def test_invalid_updates_get_errors_with_code_and_param_and_change_nothing() -> None:
    cases = [
        ({"instructions": 5}, "invalid_type", "session.instructions"),
        ({"audio": {"output": {"speed": 3.0}}}, "invalid_value", "session.audio.output.speed"),
        ({"audio": {"output": {"voice": "bob"}}}, "invalid_value", "session.audio.output.voice"),
        ({"voice": "alloy"}, "unknown_parameter", "session.voice"),
        ({"input_audio_format": "pcm16"}, "unknown_parameter", "session.input_audio_format"),
        ({"audio": {"output": {"bogus": 1}}}, "unknown_parameter", "session.audio.output.bogus"),
        ({"output_modalities": ["audio", "text"]}, "invalid_value", "session.output_modalities"),
        ({"model": "other-model"}, "invalid_value", "session.model"),
        (
            {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}},
            "invalid_value",
            "session.audio.input.format.rate",
        ),
    ]

    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            for session, code, param in cases:
                await client.send(
                    {
                        "type": "session.update",
                        "event_id": "upd_1",
                        "session": {"type": "realtime", **session},
                    }
                )
                error = (await client.until("error"))[-1]["error"]
                assert (error["type"], error["code"], error["param"]) == (
                    "invalid_request_error",
                    code,
                    param,
                ), (session, error)
                assert error["event_id"] == "upd_1"
            await client.send({"type": "session.update", "session": {"instructions": "x"}})
            error = (await client.until("error"))[-1]["error"]
            assert (error["code"], error["param"]) == ("missing_required_parameter", "session.type")
            unchanged = await client.update()
            assert unchanged["session"]["output_modalities"] == ["text"]

    run(body())


def test_voice_cannot_change_after_assistant_audio() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            assert (await client.update(audio={"output": {"voice": "ash"}}))["type"] == (
                "session.updated"
            )
            await client.say("hello")
            await client.respond(output_modalities=["audio"])
            error = await client.update(audio={"output": {"voice": "marin"}})
            assert error["error"]["code"] == "cannot_update_voice"
            same = await client.update(audio={"output": {"voice": "ash"}})
            assert same["type"] == "session.updated"

    run(body())
