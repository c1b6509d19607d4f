"""How closely ``voxwire serve --pace 1`` keeps real time over one long spoken answer.

    python benches/server_pace.py [--rounds 3]

The server runs in its own process; one client asks it to repeat a long text (the default
scenario answers "You said: ..."), about 20 s of speech, and times each audio delta's arrival.
It reports the wall time from the first delta to the last against the audio sent before the last
(the pace's drift: 0 % is exact) and the deltas a client with a 40 ms prebuffer would find late
(each one an underrun that is the server's, not the client's).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import re
import subprocess
import sys
import time

from websockets.asyncio.client import connect

BYTES_PER_S = 24_000 * 2
PREBUFFER_S = 0.04
TEXT = " ".join(
    ["The parcel left the depot this morning, travelled along the coast road, and will reach"] * 6
)


async def _answer(url: str) -> tuple[float, float, int, int]:
    """(wall s first..last delta, audio s before the last delta, deltas, late deltas)."""
    async with connect(url, max_size=None) as ws:
        await ws.recv()  # session.created
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": TEXT}],
        }
        await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
        await ws.send(json.dumps({"type": "response.create"}))
        first: float | None = None
        last = audio_before_last = audio_s = 0.0
        deltas = late = 0
        while True:
            event = json.loads(await ws.recv())
            if event["type"] == "response.output_audio.delta":
                now = time.perf_counter()
                first = now if first is None else first
                if now > first + PREBUFFER_S + audio_s:
                    late += 1
                last, audio_before_last = now, audio_s
                deltas += 1
                audio_s += len(base64.b64decode(event["delta"])) / BYTES_PER_S
            elif event["type"] == "response.done":
                assert first is not None
                return last - first, audio_before_last, deltas, late


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    command = [sys.executable, "-m", "voxwire.cli", "serve", "--port", "0", "--pace", "1"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        match = re.search(r"(ws://\S+/v1/realtime)", server.stdout.readline())
        assert match
        for n in range(args.rounds):
            wall, audio, deltas, late = asyncio.run(_answer(match.group(1) + "?model=gpt-realtime"))
            drift = (wall - audio) / audio
            print(
                f"round {n + 1}: {audio:.2f} s of audio over {wall:.3f} s "
                f"(drift {drift:+.3%}), {deltas} deltas, {late} late for a 40 ms prebuffer"
            )
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
