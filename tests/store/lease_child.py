"""Another process on the same store, for the lease tests (``python -m tests.store.lease_child``).

Arguments: BACKEND TARGET SCHEMA CONVERSATION MODE TTL_S [HOLDER: the default holder if not given].

* ``hold``: hold the conversation (acquire + background renewal), print ``held TOKEN HOLDER``,
  then write one item with the lease every 50 ms, printing ``wrote ITEM_ID`` after each, until
  killed;
* ``take``: try to acquire the conversation once and print ``acquired TOKEN`` or
  ``refused ERROR_TYPE MESSAGE``; then try a write without a lease, printing the same way.
"""

from __future__ import annotations

import asyncio
import sys

from tests.store.conftest import Backend
from tests.store.frames import user
from voxwire.exceptions import StoreError
from voxwire.store import PutItem, StoredItem


async def main(argv: list[str]) -> None:
    name, target, schema, conversation_id, mode, ttl = argv[:6]
    holder = argv[6] if len(argv) > 6 else None
    store = await Backend(name, target, "" if schema == "-" else schema).open()
    try:
        if mode == "hold":
            held = await store.hold(conversation_id, ttl_s=float(ttl), holder=holder)
            print(f"held {held.lease.token} {held.lease.holder}", flush=True)
            for n in range(1_000_000):
                item = StoredItem(
                    id=f"child-{n}", position=10_000 + n, wire=user(f"child-{n}", "x")
                )
                await store.apply(conversation_id, [PutItem(item=item)], lease=held.lease)
                print(f"wrote child-{n}", flush=True)
                await asyncio.sleep(0.05)
            return
        try:
            lease = await store.acquire(conversation_id, ttl_s=float(ttl))
            print(f"acquired {lease.token}", flush=True)
        except StoreError as exc:
            print(f"refused {type(exc).__name__} {exc}", flush=True)
        try:
            item = StoredItem(id="intruder", position=99_999, wire=user("intruder", "x"))
            await store.apply(conversation_id, [PutItem(item=item)])
            print("wrote intruder", flush=True)
        except StoreError as exc:
            print(f"refused {type(exc).__name__} {exc}", flush=True)
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
