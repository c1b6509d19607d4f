"""The application-facing side of issue 11: the session's send methods and SessionConfig take
``None`` for optional fields the way a user of the official types passes them — "not given",
or null's own meaning where the types give it one — against the local server, no error."""

from __future__ import annotations

import pytest

from voxwire.asyncio import RealtimeSession
from voxwire.exceptions import ConfigurationError
from voxwire.protocol import SessionConfig

from .helpers import assert_only_current_task, run, serving, until


def test_none_in_optional_parameters_is_not_given_and_the_server_accepts_it() -> None:
    async def body() -> None:
        async with (
            serving() as server,
            RealtimeSession(
                url=server.url(),
                config=SessionConfig(instructions=None, tools=None, max_output_tokens=None),
                wait_for_session_updated=True,
            ) as session,
        ):
            await session.update_session({"instructions": None, "tool_choice": None})
            await session.create_response(
                instructions=None, tools=None, metadata=None, max_output_tokens=None
            )
            events = await until(session, "response_done")
            assert [e for e in events if e.type == "error"] == []
            # Null where the types give it a meaning keeps it: turn detection off.
            await session.update_session({"audio": {"input": {"turn_detection": None}}})
            await session.send_message("hello")
            events = await until(session, "response_done")
            assert [e for e in events if e.type == "error"] == []
            input_config = session.protocol.session.audio.input  # type: ignore[union-attr]
            assert input_config.turn_detection is None  # type: ignore[union-attr]
        assert_only_current_task()

    run(body())


def test_a_wrong_type_is_still_refused_with_the_field_named() -> None:
    async def body() -> None:
        async with serving() as server, RealtimeSession(url=server.url()) as session:
            with pytest.raises(ConfigurationError, match="instructions"):
                await session.create_response(instructions=3)

    run(body())
