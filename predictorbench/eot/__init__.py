"""End-of-turn detection benchmark in eot-bench's methodology (livekit/eot-bench)."""
