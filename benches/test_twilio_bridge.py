"""The Twilio bridge's benchmark pieces.

* the stream core on the hot path (one caller frame in; one chunk of agent audio out with its
  mark; the mark back), timed with pytest-benchmark::

      pytest benches/test_twilio_bridge.py --benchmark-only

* ``benches/twilio_bridge.py`` itself, run for two calls over two seconds, so that the load
  benchmark keeps working (it checks the figures are there, it does not judge them).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from voxwire.audio import RemoteOutput, g711
from voxwire.telephony.twilio import Played, TwilioStream

SID = "MZ" + "0" * 32
START = json.dumps(
    {
        "event": "start",
        "streamSid": SID,
        "start": {"streamSid": SID, "callSid": "CA1", "accountSid": "AC1", "tracks": ["inbound"]},
    }
)
MEDIA = json.dumps(
    {
        "event": "media",
        "streamSid": SID,
        "sequenceNumber": "7",
        "media": {"track": "inbound", "chunk": "6", "timestamp": "120", "payload": ""},
    }
).replace('"payload": ""', '"payload": "' + base64.b64encode(b"\xff" * 160).decode() + '"')


def test_a_caller_frame_in(benchmark: Any) -> None:
    stream = TwilioStream()
    stream.receive_text(START)
    stream.events_received()

    def frame() -> object:
        stream.receive_text(MEDIA)
        return stream.events_received()

    (event,) = benchmark(frame)
    assert len(event.payload) == 160


def test_a_chunk_of_agent_audio_out_and_its_mark_back(benchmark: Any) -> None:
    stream = TwilioStream()
    stream.receive_text(START)
    stream.events_received()
    output = RemoteOutput(8000)
    delta = g711.ulaw_encode(b"\x10\x00" * 320)  # 40 ms

    def chunk() -> list[object]:
        output.push("item", 0, delta, "audio/pcmu", 8000)
        pcm = output.take(320)
        stream.send_audio(g711.ulaw_encode(pcm), output.sent_samples)
        _, mark = stream.data_to_send()
        name = json.loads(mark)["mark"]["name"]
        stream.receive_text(f'{{"event":"mark","streamSid":"{SID}","mark":{{"name":"{name}"}}}}')
        events = stream.events_received()
        for event in events:
            if isinstance(event, Played):
                output.acknowledge(event.position)
        return events

    events = benchmark(chunk)
    assert [type(e) for e in events] == [Played]
    assert output.unheard_samples == 0


@pytest.mark.slow
def test_the_load_benchmark_runs() -> None:
    script = Path(__file__).with_name("twilio_bridge.py")
    p = subprocess.run(
        [sys.executable, str(script), "--calls", "2", "--seconds", "2"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    (row,) = [line for line in p.stdout.splitlines() if line.startswith("| 2 |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[1]) > 0  # CPU s per call-minute
    assert int(cells[3]) > 100  # caller frames read by the bridge
