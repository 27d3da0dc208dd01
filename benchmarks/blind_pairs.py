"""Moved: the blind pair generator is `python -m annotation.blind_pairs` (annotation/blind_pairs.py)."""

import sys

sys.exit("benchmarks/blind_pairs.py moved: run `python -m annotation.blind_pairs --swb DIR ...` (same options)")
