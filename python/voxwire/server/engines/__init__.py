"""The server's engines: the parts that make content, each behind a small interface.

``tts`` (hibari or espeak-ng voices, off the event loop), ``vad`` (webrtcvad turn detection and
the prosody of semantic VAD), ``transcribe`` (Whisper tiny.en through faster-whisper),
``responder`` (the ``Responder`` interface and the scenario rules responder), ``chat`` (a
responder over an OpenAI-compatible chat-completions endpoint). Engines may import the pure core
(``voxwire.server.core``) for its data types; the core never imports an engine.
"""
