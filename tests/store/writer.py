"""A writer process for the concurrency and crash tests (``python -m tests.store.writer``).

Arguments: BACKEND TARGET SCHEMA CONVERSATION COUNT [SHARED]. Writes COUNT user items to
CONVERSATION through the recorder, one apply per item, and prints ``ok ITEM_ID`` (flushed)
after each apply returned — the item is then confirmed stored. With SHARED, each item also
puts an undelivered output into the conversation SHARED, which every writer writes to.
"""

from __future__ import annotations

import asyncio
import sys

from tests.store.conftest import Backend
from tests.store.frames import added, user
from voxwire.store import ConversationRecorder, PutOutput


async def main(argv: list[str]) -> None:
    name, target, schema, conversation_id, count = argv[:5]
    shared = argv[5] if len(argv) > 5 else None
    store = await Backend(name, target, "" if schema == "-" else schema).open()
    try:
        info = await store.open_conversation(conversation_id)
        if shared is not None:
            await store.open_conversation(shared)
        recorder = ConversationRecorder(conversation_id, info.created_at)
        previous = None
        for index in range(int(count)):
            item_id = f"{conversation_id}-{index}"
            await store.apply(
                conversation_id, recorder.receive(added(user(item_id, "x"), previous))
            )
            if shared is not None:
                await store.apply(shared, [PutOutput(call_id=item_id, output={"n": index})])
            print(f"ok {item_id}", flush=True)
            previous = item_id
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
