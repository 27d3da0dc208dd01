"""The automatic examiner: Full-Duplex-Bench's tasks and scoring, run against any dialogue system."""
