"""The session's audio parts: assistant audio into the attached output and the one watcher of
its clock (``playback``), cutting what the listener has not heard (``interruption``), the
microphone the session runs (``microphone``, ``inputs``), and speech handles settled by what
was heard (``speech_tracker``). The audio itself is processed by :mod:`voxwire.audio`."""
