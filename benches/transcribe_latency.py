"""Input transcription and the hibari voice on this machine: load times and per-utterance latency.

    python benches/transcribe_latency.py [--rounds 5]

1. Whisper tiny.en (faster-whisper, int8 CPU): the SHA-256 check of the weights, the model load
   (import included) — each in a fresh process, so nothing is cached in the interpreter.
2. One utterance (espeak-ng speech, 1.5-3.5 s, the server's input formats) through
   ``WhisperTranscriber.transcribe_blocking``: median and worst of ``--rounds`` rounds, for 1 and
   2 CTranslate2 threads.
3. End to end over a loopback websocket: ``input_audio_buffer.commit`` sent ->
   ``conversation.item.input_audio_transcription.completed`` received.
4. hibari: load time (fresh process) and synthesis speed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import subprocess
import sys
import time

from websockets.asyncio.client import connect

from voxwire.server import RealtimeServer
from voxwire.server.engines.transcribe import WhisperTranscriber
from voxwire.server.engines.tts import Voice

UTTERANCES = [
    "What is the weather like in Paris today?",
    "Good morning, I need a taxi to the airport.",
    "What time does the museum open?",
    "Please call my mother and tell her that I will be late for dinner tonight.",
]

_FRESH_LOAD = """
import time
from voxwire.server.engines.transcribe import MODEL_FILES_SHA256, WhisperTranscriber, verify_model
from voxwire.server.engines.transcribe import _model_dir_of_package
t0 = time.perf_counter()
verify_model(_model_dir_of_package(), MODEL_FILES_SHA256)
t1 = time.perf_counter()
w = WhisperTranscriber(expected_sha256=None)
w.load_blocking()
t2 = time.perf_counter()
w.close()
print(t1 - t0, t2 - t1)
"""

_FRESH_HIBARI = """
import time
from voxwire.server.engines.tts import Voice
t0 = time.perf_counter()
v = Voice.load("hibari")
print(time.perf_counter() - t0)
v.close()
"""


def fresh(code: str) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return [float(x) for x in out.split()]


def row(label: str, samples: list[float]) -> str:
    return f"| {label} | {statistics.median(samples) * 1000:.0f} | {max(samples) * 1000:.0f} |"


async def end_to_end(rounds: int, speech: list[bytes]) -> list[float]:
    latencies = []
    async with RealtimeServer(tts=None) as server, connect(server.url()) as ws:
        await ws.recv()
        update = {
            "type": "session.update",
            "session": {
                "type": "realtime",
                "audio": {
                    "input": {"turn_detection": None, "transcription": {"model": "whisper-1"}}
                },
            },
        }
        await ws.send(json.dumps(update))
        await ws.recv()
        for _ in range(rounds + 1):  # the first one loads the model
            for audio in speech:
                await ws.send(
                    json.dumps(
                        {
                            "type": "input_audio_buffer.append",
                            "audio": base64.b64encode(audio).decode(),
                        }
                    )
                )
                started = time.perf_counter()
                await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
                while True:
                    event = json.loads(await ws.recv())
                    if event["type"].endswith("input_audio_transcription.completed"):
                        break
                latencies.append(time.perf_counter() - started)
    return latencies[len(speech) :]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    loads = [fresh(_FRESH_LOAD) for _ in range(3)]
    print("| step | median ms | worst ms |\n|---|---:|---:|")
    print(row("SHA-256 check of the weights (75 MB)", [h for h, _ in loads]))
    print(row("model load (faster-whisper import + CTranslate2 int8 load)", [m for _, m in loads]))

    espeak = Voice.load("espeak")
    inputs = {
        fmt: [espeak.speak_blocking(text, "alloy", 1.0, fmt).audio for text in UTTERANCES]
        for fmt in ("audio/pcm", "audio/pcmu")
    }
    espeak.close()
    seconds = [len(audio) / 48_000 for audio in inputs["audio/pcm"]]
    print(f"\nutterances: {', '.join(f'{s:.1f} s' for s in seconds)}\n")
    print("| engine call | threads | median ms | worst ms |\n|---|---:|---:|---:|")
    for threads in (1, 2):
        transcriber = WhisperTranscriber(cpu_threads=threads)
        transcriber.load_blocking()
        for fmt, audios in inputs.items():
            times = []
            for _ in range(args.rounds):
                for audio in audios:
                    started = time.perf_counter()
                    transcriber.transcribe_blocking(audio, fmt, None, None)
                    times.append(time.perf_counter() - started)
            print(
                f"| {fmt} | {threads} | {statistics.median(times) * 1000:.0f} | "
                f"{max(times) * 1000:.0f} |"
            )
        transcriber.close()

    e2e = asyncio.run(end_to_end(args.rounds, inputs["audio/pcm"]))
    print(
        f"\ncommit -> completed over a websocket (default: 1 thread): median "
        f"{statistics.median(e2e) * 1000:.0f} ms, worst {max(e2e) * 1000:.0f} ms"
    )

    hibari_loads = [fresh(_FRESH_HIBARI)[0] for _ in range(3)]
    voice = Voice.load("hibari")
    text = " ".join(UTTERANCES)
    voice.speak_blocking("Warm up.", "alloy", 1.0, "audio/pcm")
    started = time.perf_counter()
    spoken = voice.speak_blocking(text, "alloy", 1.0, "audio/pcm")
    elapsed = time.perf_counter() - started
    voice.close()
    audio_s = len(spoken.audio) / 48_000
    print(
        f"\nhibari: load (fresh process; onnxruntime import, model, G2P tables) median "
        f"{statistics.median(hibari_loads) * 1000:.0f} ms; {audio_s:.1f} s of speech in "
        f"{elapsed * 1000:.0f} ms ({audio_s / elapsed:.0f}x real time, one thread)"
    )


if __name__ == "__main__":
    main()
