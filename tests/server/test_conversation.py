"""conversation.item.create / retrieve / delete / truncate and the input audio buffer."""

from __future__ import annotations

import base64

from .helpers import client_of, pcm_b64, run, serving


def user(text: str, **extra: object) -> dict:
    return {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": text}],
        **extra,
    }


def test_create_chains_after_previous_item_root_and_end() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await client.send({"type": "conversation.item.create", "item": user("a", id="a")})
            added = (await client.until("conversation.item.added"))[-1]
            assert added["previous_item_id"] is None
            assert added["item"]["status"] == "completed"
            await client.until("conversation.item.done")
            await client.send({"type": "conversation.item.create", "item": user("b", id="b")})
            assert (await client.until("conversation.item.added"))[-1]["previous_item_id"] == "a"
            await client.send(
                {"type": "conversation.item.create", "previous_item_id": "root", "item": user("z")}
            )
            added = (await client.until("conversation.item.added"))[-1]
            assert added["previous_item_id"] is None
            assert added["item"]["id"].startswith("item_")
            await client.send(
                {"type": "conversation.item.create", "previous_item_id": "a", "item": user("c")}
            )
            assert (await client.until("conversation.item.added"))[-1]["previous_item_id"] == "a"
            for item, previous, code in (
                (user("x", id="a"), None, "item_already_exists"),
                (user("x"), "missing", "previous_item_not_found"),
                (user("x", id="x" * 33), None, "string_above_max_length"),
            ):
                event = {"type": "conversation.item.create", "item": item, "event_id": "ev"}
                if previous:
                    event["previous_item_id"] = previous
                await client.send(event)
                error = (await client.until("error"))[-1]["error"]
                assert (error["code"], error["event_id"]) == (code, "ev")

    run(body())


def test_assistant_audio_and_bad_parts_cannot_be_created() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            item = {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_audio", "transcript": "hi"}],
            }
            await client.send({"type": "conversation.item.create", "item": item})
            error = (await client.until("error"))[-1]["error"]
            assert (error["code"], error["param"]) == (
                "missing_required_parameter",
                "item.content[0].text",
            )
            item = {"type": "message", "role": "user", "content": [{"type": "output_text"}]}
            await client.send({"type": "conversation.item.create", "item": item})
            assert (await client.until("error"))[-1]["error"]["code"] == "invalid_value"

    run(body())


def test_retrieve_delete_and_their_errors() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            audio = base64.b64encode(b"\x01\x00" * 2400).decode()
            item = {
                "type": "message",
                "role": "user",
                "id": "u1",
                "content": [{"type": "input_audio", "audio": audio}],
            }
            await client.send({"type": "conversation.item.create", "item": item})
            added = (await client.until("conversation.item.added"))[-1]
            assert "audio" not in added["item"]["content"][0]  # announced without audio
            await client.send({"type": "conversation.item.retrieve", "item_id": "u1"})
            retrieved = (await client.until("conversation.item.retrieved"))[-1]
            assert retrieved["item"]["content"][0]["audio"] == audio
            await client.send({"type": "conversation.item.delete", "item_id": "u1"})
            assert (await client.until("conversation.item.deleted"))[-1]["item_id"] == "u1"
            for kind in ("conversation.item.delete", "conversation.item.retrieve"):
                await client.send({"type": kind, "item_id": "u1"})
                assert (await client.until("error"))[-1]["error"]["code"] == "item_not_found"

    run(body())


def test_truncate_cuts_assistant_audio_and_drops_the_transcript() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await client.say("hello")
            events = await client.respond(output_modalities=["audio"])
            item_id = events[-1]["response"]["output"][0]["id"]
            audio = b"".join(
                base64.b64decode(e["delta"])
                for e in events
                if e["type"] == "response.output_audio.delta"
            )
            duration_ms = len(audio) // 2 * 1000 // 24000
            await client.send(
                {
                    "type": "conversation.item.truncate",
                    "item_id": item_id,
                    "content_index": 0,
                    "audio_end_ms": duration_ms + 1,
                }
            )
            error = (await client.until("error"))[-1]["error"]
            assert error["code"] == "invalid_value"
            assert (
                f"{duration_ms}ms is already shorter than {duration_ms + 1}ms" in error["message"]
            )
            await client.send(
                {
                    "type": "conversation.item.truncate",
                    "item_id": item_id,
                    "content_index": 0,
                    "audio_end_ms": 500,
                }
            )
            truncated = (await client.until("conversation.item.truncated"))[-1]
            assert truncated["audio_end_ms"] == 500
            await client.send({"type": "conversation.item.retrieve", "item_id": item_id})
            part = (await client.until("conversation.item.retrieved"))[-1]["item"]["content"][0]
            assert len(base64.b64decode(part["audio"])) == 24_000 * 2 // 2
            assert part.get("transcript") is None
            # Only assistant audio can be truncated.
            await client.say("hello")
            user_id = client.received[-1]["item"]["id"]
            await client.send(
                {
                    "type": "conversation.item.truncate",
                    "item_id": user_id,
                    "content_index": 0,
                    "audio_end_ms": 0,
                }
            )
            assert (await client.until("error"))[-1]["error"]["code"] == "unsupported_content_type"

    run(body())


def test_input_buffer_commit_clear_and_limits() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await client.send({"type": "input_audio_buffer.append", "audio": pcm_b64(2000)})
            await client.send({"type": "input_audio_buffer.commit", "event_id": "c1"})
            error = (await client.until("error"))[-1]["error"]
            assert (error["code"], error["event_id"]) == ("input_audio_buffer_commit_empty", "c1")
            assert "83.33ms" in error["message"]
            await client.send({"type": "input_audio_buffer.append", "audio": pcm_b64(2400)})
            await client.send({"type": "input_audio_buffer.commit"})
            events = await client.until("conversation.item.done")
            assert [e["type"] for e in events] == [
                "input_audio_buffer.committed",
                "conversation.item.added",
                "conversation.item.done",
            ]
            assert events[1]["item"]["content"] == [{"type": "input_audio", "transcript": None}]
            await client.send({"type": "input_audio_buffer.append", "audio": pcm_b64(4800)})
            await client.send({"type": "input_audio_buffer.clear"})
            await client.until("input_audio_buffer.cleared")
            await client.send({"type": "input_audio_buffer.commit"})
            assert "0.00ms" in (await client.until("error"))[-1]["error"]["message"]
            # An append over 15 MiB is refused; the session goes on.
            big = base64.b64encode(b"\x00" * (15 * 1024 * 1024 + 2)).decode()
            await client.send({"type": "input_audio_buffer.append", "audio": big})
            error = (await client.until("error"))[-1]["error"]
            assert (error["code"], error["param"]) == ("invalid_value", "audio")
            await client.say("still alive")

    run(body())


def test_g711_input_counts_8khz_bytes() -> None:
    async def body() -> None:
        async with serving() as server, client_of(server) as client:
            await client.update(audio={"input": {"format": {"type": "audio/pcmu"}}})
            audio = base64.b64encode(b"\xff" * 800).decode()  # 100 ms at 8 kHz
            await client.send({"type": "input_audio_buffer.append", "audio": audio})
            await client.send({"type": "input_audio_buffer.commit"})
            item_id = (await client.until("input_audio_buffer.committed"))[-1]["item_id"]
            await client.send({"type": "conversation.item.retrieve", "item_id": item_id})
            part = (await client.until("conversation.item.retrieved"))[-1]["item"]["content"][0]
            assert part["audio"] == audio

    run(body())
