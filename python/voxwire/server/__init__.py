"""voxwire.server: a local, protocol-faithful OpenAI Realtime (GA) server.

The embedded default backend of the demo, the peer of the integration tests and a product of
its own (``voxwire serve``). It speaks the GA protocol over websockets with the protocol core's
typed events and answers with local components: a pluggable responder (built in: rules from a
scenario, or a chat-completions endpoint such as a local LLM server), hibari or espeak-ng speech
through the Rust resampler and G.711 codecs, webrtcvad turn detection (semantic VAD from
prosody) and Whisper tiny.en input transcription (faster-whisper).
Fault injection makes it misbehave on purpose for tests. See docs/server.md.

Modules: ``server`` (handshake, lifecycle), ``connection`` (the pump), ``session`` (client events
to answers, sans I/O), ``config`` (session defaults, validation, merging), ``conversation``,
``input_buffer``, ``vad``, ``responder``, ``response`` (one response's events, sans I/O),
``responses`` (running, pacing and cancelling them), ``chat`` (a responder over an
OpenAI-compatible chat-completions endpoint), ``faults`` (fault injection for tests), ``tts``,
``transcribe`` (input audio transcription), ``wire``, ``errors``, ``ids``.
"""

from voxwire.server.client_secrets import ClientSecrets
from voxwire.server.connection import RealtimeConnection
from voxwire.server.engines.chat import ChatCompletionsResponder, ChatEndpointError
from voxwire.server.engines.responder import (
    CallTool,
    Output,
    Responder,
    RulesResponder,
    Say,
    Scenario,
    Turn,
)
from voxwire.server.engines.transcribe import Transcriber, Transcript, WhisperTranscriber
from voxwire.server.engines.tts import NoVoiceError
from voxwire.server.faults import (
    Delay,
    Drop,
    Expire,
    Fault,
    RejectResponse,
    SendMalformed,
    SendUnknown,
    faults_from_data,
    faults_from_file,
)
from voxwire.server.responses import PaceClock, Pacing
from voxwire.server.server import RealtimeServer

__all__ = [
    "CallTool",
    "ChatCompletionsResponder",
    "ChatEndpointError",
    "ClientSecrets",
    "Delay",
    "Drop",
    "Expire",
    "Fault",
    "NoVoiceError",
    "Output",
    "PaceClock",
    "Pacing",
    "RealtimeConnection",
    "RealtimeServer",
    "RejectResponse",
    "Responder",
    "RulesResponder",
    "Say",
    "Scenario",
    "SendMalformed",
    "SendUnknown",
    "Transcriber",
    "Transcript",
    "Turn",
    "WhisperTranscriber",
    "faults_from_data",
    "faults_from_file",
]
