"""What the local server's side listeners share (the SIP trunk's REST routes, the client
secrets endpoint): ``async with`` starts and closes them."""

from __future__ import annotations

from types import TracebackType
from typing import TypeVar

__all__ = ["StartsAndCloses"]

_L = TypeVar("_L", bound="StartsAndCloses")


class StartsAndCloses:
    """``async with listener:`` is ``await listener.start()`` … ``await listener.close()``."""

    async def start(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self: _L) -> _L:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
