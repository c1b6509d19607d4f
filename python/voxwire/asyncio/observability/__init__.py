"""What a session tells about itself: latency, usage and interruption metrics (``metrics``)
and OpenTelemetry spans (``tracing``)."""
