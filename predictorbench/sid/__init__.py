"""Semantic interruption detection benchmark in SID-bench's layout and metrics (kxxia/SID-bench)."""
