"""CPU time one wake-up costs on this machine: the price of a real-time pace.

    python benches/wakeup_cost.py [--count 500]

A client streaming 20 ms microphone chunks wakes up at least 50 times a second whatever it does
with them. This measures the CPU time (``/proc/self/schedstat`` where there is one, else
``time.process_time``) of ``count`` 20 ms sleeps three ways — a blocking ``time.sleep`` (the
least any thread pays), an ``asyncio.sleep`` in a running event loop (what an asyncio client
pays), and an ``asyncio.sleep`` that also sends one small frame on a loopback socket — and
prints microseconds per wake-up and the CPU seconds per minute that 50 wake-ups a second cost.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import threading
import time
from pathlib import Path

PERIOD_S = 0.02


def cpu_s() -> float:
    """This thread's CPU time: schedstat is exact on Linux; process_time elsewhere."""
    stat = Path("/proc/thread-self/schedstat")
    if stat.exists():
        return int(stat.read_text().split()[0]) / 1e9
    return time.process_time()


def blocking(count: int) -> float:
    start = cpu_s()
    deadline = time.monotonic()
    for _ in range(count):
        deadline += PERIOD_S
        time.sleep(max(0.0, deadline - time.monotonic()))
    return cpu_s() - start


async def paced(count: int, sock: socket.socket | None) -> float:
    frame = b"x" * 1300  # about one input_audio_buffer.append frame of 20 ms
    start = cpu_s()
    deadline = time.monotonic()
    for _ in range(count):
        deadline += PERIOD_S
        await asyncio.sleep(max(0.0, deadline - time.monotonic()))
        if sock is not None:
            sock.send(frame)
    return cpu_s() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=500, help="wake-ups per measurement")
    args = parser.parse_args()
    sender, receiver = socket.socketpair()

    def drain() -> None:
        while receiver.recv(1 << 16):
            pass

    threading.Thread(target=drain, daemon=True).start()
    rows = [
        ("time.sleep", blocking(args.count)),
        ("asyncio.sleep", asyncio.run(paced(args.count, None))),
        ("asyncio.sleep + socket send", asyncio.run(paced(args.count, sender))),
    ]
    sender.close()
    print("| wake-up | CPU µs each | CPU s / min at 50 a second |")
    print("|---|---:|---:|")
    for name, total in rows:
        each = total / args.count
        print(f"| {name} | {each * 1e6:.0f} | {each * 50 * 60:.3f} |")


if __name__ == "__main__":
    main()
