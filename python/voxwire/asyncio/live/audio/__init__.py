"""The listener's side of a Live session: the microphone (``microphone``), the model's audio into
the output with what was heard and the metrics (``playback``), and the assistant's transcript
released in step with what was heard (``transcripts``)."""
