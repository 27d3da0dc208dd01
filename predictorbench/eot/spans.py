"""The eot-bench span set and the causal inputs a predictor sees inside each span.

Span set: every silence span of a row that lasts at least `min_silence_span` (0.1 s); the final
span of `silence_spans` is the true end of the turn (`eot`), every earlier one a mid-turn pause
(`hold`). `span_index` is the span's index in the row's `silence_spans` (so a skipped short span
leaves a gap in the numbering; the final span keeps its index and its `eot` label).

Scoring grid: inside a span starting at s, predictions are made at s + k * inference_interval
for k = 1, 2, ... while silence_dur = k * inference_interval <= the span's duration. At timestamp
t the predictor receives only the audio before t and the words whose end <= t - transcript_lag
(appended as a current-turn user message after the row's `messages`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from predictorbench.eot.data import SAMPLE_RATE, EotRow

MIN_SILENCE_SPAN = 0.1
INFERENCE_INTERVAL = 0.1
TRANSCRIPT_LAG = 0.5
GRID_EPSILON = 1e-6  # float steps: a grid point at exactly the span's end stays in


@dataclass(frozen=True)
class Span:
    id: str
    language: str
    span_index: int
    start: float
    end: float
    label: str  # "eot" or "hold"

    @property
    def duration(self) -> float:
        return self.end - self.start

    def as_dict(self) -> dict:
        return {**asdict(self), "duration": self.duration}


def row_spans(row: EotRow, min_silence_span: float = MIN_SILENCE_SPAN) -> list[Span]:
    last = len(row.silence_spans) - 1
    return [
        Span(row.id, row.language, k, start, end, "eot" if k == last else "hold")
        for k, (start, end) in enumerate(row.silence_spans)
        if end - start >= min_silence_span - GRID_EPSILON
    ]


def span_grid(span: Span, inference_interval: float = INFERENCE_INTERVAL) -> np.ndarray:
    """Silence durations (s since the span's start) at which the span is scored."""
    n = int(np.floor(span.duration / inference_interval + GRID_EPSILON))
    return np.round(np.arange(1, n + 1) * inference_interval, 6)


def current_turn_message(row: EotRow, timestamp: float, transcript_lag: float = TRANSCRIPT_LAG) -> dict | None:
    if not row.words:
        return None
    heard = [w["word"] for w in row.words if w["end"] <= timestamp - transcript_lag + GRID_EPSILON]
    return {"role": "user", "content": " ".join(heard)} if heard else None


def causal_messages(row: EotRow, timestamp: float, transcript_lag: float = TRANSCRIPT_LAG) -> list[dict]:
    """The row's messages plus the current turn's words heard by `timestamp` (eot-bench rule)."""
    messages = [dict(m) for m in row.messages]
    current = current_turn_message(row, timestamp, transcript_lag)
    if current is not None:
        messages.append(current)
    return messages


def causal_item(row: EotRow, timestamp: float, transcript_lag: float = TRANSCRIPT_LAG) -> dict:
    """A batch adapter's input at `timestamp`: the audio prefix and the causal messages."""
    n = int(round(timestamp * SAMPLE_RATE))
    return {"audio": row.audio[:n], "sample_rate": SAMPLE_RATE,
            "messages": causal_messages(row, timestamp, transcript_lag), "language": row.language}


def grid_points(row: EotRow, min_silence_span: float = MIN_SILENCE_SPAN,
                inference_interval: float = INFERENCE_INTERVAL):
    """(span, silence_dur, timestamp) for every scored point of a row, in time order."""
    for span in row_spans(row, min_silence_span):
        for silence_dur in span_grid(span, inference_interval):
            yield span, float(silence_dur), round(span.start + float(silence_dur), 6)
