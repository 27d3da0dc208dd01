"""A call's network as both ends measured it: the rows of the session's `network.jsonl`, and the
summary stored with the session (`ConversationSession.network`) that the quality rule
(studies.call_quality), the session view and the dataset export read.

Each row says what one side received, once a second:

    side "page"    the browser's `getStats()`, sent over the call's data channel: the system's audio
                   as the page received it (jitter, packets lost and received, concealed and total
                   samples, playout delay), the round trip of the selected candidate pair, the
                   candidate type, and the page's microphone stream as the server reported it back
                   over RTCP (remote_*)
    side "server"  aiortc's `getStats()`: the microphone's audio as the server received it, the
                   system's stream as the page reported it back (remote_*, whose round trip is the
                   server's rtt_ms), and the recorder's count of lost microphone samples and of
                   system audio blocks sent late

Every row carries `t_s` (server seconds since the call's recorder started) and `mic_s` (the
microphone-clock position when it was written, the recording's timeline). Loss is cumulative
counters, lost / (lost + received) of the last row: the per-interval `fraction_lost` of RTCP says
nothing about a whole call.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

NETWORK_FILE = "network.jsonl"
CANDIDATE_TYPES = ("host", "srflx", "prflx", "relay")
RELAY_PROTOCOLS = ("udp", "tcp", "tls")
MAX_MESSAGE_CHARS = 2048  # a page sample is about 400 characters
# A page that sends more than its one row a second (a loop gone wrong, or a hostile page) cannot
# fill the disk: past this many rows (an hour at 2 a second) its samples are dropped.
MAX_PAGE_ROWS = 7200
# The numbers a page row may carry, with their bounds (packetsLost may go below 0 with duplicates).
PAGE_NUMBERS = {
    "t": (0.0, 1e8),  # ms since the page's connection
    "rtt_ms": (0.0, 1e5),
    "jitter_ms": (0.0, 1e5),
    "packets_lost": (-1e9, 1e9),
    "packets_received": (0.0, 1e9),
    "concealed_samples": (0.0, 1e12),
    "total_samples_received": (0.0, 1e12),
    "playout_delay_ms": (0.0, 1e6),
    "remote_rtt_ms": (0.0, 1e5),
    "remote_fraction_lost": (0.0, 1.0),
    "remote_packets_lost": (-1e9, 1e9),
}
PAGE_CHOICES = {"candidate_type": CANDIDATE_TYPES, "relay_protocol": RELAY_PROTOCOLS}


def page_sample(message) -> dict | None:
    """The page's network sample in a data-channel message, checked; None for anything else (not
    JSON, not a network sample, a field of the wrong type or out of bounds, too long). Fields the
    page may send later are dropped, missing ones are None.

    >>> sample = page_sample('{"kind": "network", "t": 1000, "rtt_ms": 81.5, "candidate_type": "relay", "x": 1}')
    >>> {name: value for name, value in sample.items() if value is not None}
    {'rtt_ms': 81.5, 'candidate_type': 'relay', 'page_t_ms': 1000.0}
    >>> sample["jitter_ms"] is None and "x" not in sample
    True
    >>> [page_sample(m) for m in ('end', '[1]', '{"kind": "network", "rtt_ms": "fast"}',
    ...                          '{"kind": "network", "rtt_ms": 1e300}', '{"kind": "other"}')]
    [None, None, None, None, None]
    """
    if not isinstance(message, str) or len(message) > MAX_MESSAGE_CHARS or not message.startswith("{"):
        return None
    try:
        data = json.loads(message)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("kind") != "network":
        return None
    sample = {}
    for name, (low, high) in PAGE_NUMBERS.items():
        value = data.get(name)
        if value is None:
            sample[name] = None
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            return None  # NaN fails the bounds too
        else:
            sample[name] = float(value)
    for name, allowed in PAGE_CHOICES.items():
        value = data.get(name)
        if value is not None and value not in allowed:
            return None
        sample[name] = value
    sample["page_t_ms"] = sample.pop("t")  # the row's own t_s is the server's
    return sample


class NetworkLog:
    """The session's network.jsonl, written as the call runs (a line a second from each side,
    flushed: a killed process keeps what was measured)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")
        self.page_rows = 0

    def write(self, side: str, t_s: float, mic_s: float, fields: dict) -> bool:
        """Append one row; False when it was not written (closed, or the page's rows are capped)."""
        if self._file.closed or (side == "page" and self.page_rows >= MAX_PAGE_ROWS):
            return False
        if side == "page":
            self.page_rows += 1
        row = {"side": side, "t_s": round(t_s, 3), "mic_s": round(mic_s, 3), **fields}
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()
        return True

    def close(self) -> None:
        self._file.close()


def read_network(path: Path | str) -> list[dict]:
    """The rows of a network.jsonl; a line that is not a JSON object (the half-written last line
    of a killed process) is skipped."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("side") in ("page", "server"):
            rows.append(row)
    return rows


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation between ranks; None without values.

    >>> percentile([10, 20, 30, 40], 50), percentile([10, 20, 30, 40], 90), percentile([5], 90)
    (25.0, 37.0, 5.0)
    >>> percentile([], 50) is None
    True
    """
    ordered = sorted(float(v) for v in values)
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def _numbers(rows: list[dict], name: str) -> list[float]:
    return [float(r[name]) for r in rows
            if isinstance(r.get(name), (int, float)) and not isinstance(r.get(name), bool) and math.isfinite(r[name])]


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def loss_fraction(rows: list[dict], lost: str = "packets_lost", received: str = "packets_received") -> float | None:
    """lost / (lost + received) from the last row that has both cumulative counters (a negative
    count, duplicates, is no loss); None without such a row or packets.

    >>> loss_fraction([{"packets_lost": 1, "packets_received": 99}, {"packets_lost": 2, "packets_received": 198}])
    0.01
    >>> loss_fraction([{"packets_lost": -3, "packets_received": 50}]), loss_fraction([{"packets_lost": 4}]) is None
    (0.0, True)
    """
    for row in reversed(rows):
        if _numbers([row], lost) and _numbers([row], received):
            gone, got = max(float(row[lost]), 0.0), float(row[received])
            return None if gone + got <= 0 else gone / (gone + got)
    return None


def _last(rows: list[dict], name: str):
    return next((r[name] for r in reversed(rows) if r.get(name) is not None), None)


def summarise(rows: list[dict], sample_rate: int = 16000) -> dict:
    """A call's network in one dict (what `ConversationSession.network` stores):

        rtt_ms_p50, rtt_ms_p90   the page's round trip (selected candidate pair; RTCP's where the
                                 pair gave none); the server's RTCP round trip where the page sent
                                 no samples
        server_rtt_ms_p50        the server's RTCP round trip (the system's stream)
        jitter_ms_p50            the system's audio as the page received it
        server_jitter_ms_p50     the microphone's audio as the server received it
        loss_to_page             lost fraction of the system's audio packets (page's counters)
        loss_to_server           lost fraction of the microphone's packets (server's counters)
        concealed_fraction       the page's concealed / total samples of the system's audio
        playout_delay_ms_p50     the page's jitter buffer delay per emitted sample
        candidate_type, relay_protocol   of the selected pair, on the page (last said)
        late_blocks              system audio blocks the server sent late (studies.webrtc)
        loop_lag_ms_p90          how late the server's event loop woke each second (studies.server_load)
        cpu_wait_p90             the share of each second the server's loop thread waited for a CPU
        lost_mic_s               seconds of microphone audio the recording filled with zeros
        page_samples, server_samples     how many rows each side wrote

    A figure no row measured is None.

    >>> page = [{"side": "page", "rtt_ms": r, "jitter_ms": 4.0, "packets_lost": 2 * i, "packets_received": 50 * i,
    ...          "concealed_samples": 960 * i, "total_samples_received": 48000 * i, "playout_delay_ms": 60.0,
    ...          "candidate_type": "relay", "relay_protocol": "udp"} for i, r in enumerate([80, 82, 90, 160], 1)]
    >>> server = [{"side": "server", "rtt_ms": 84.0, "jitter_ms": 2.0, "packets_lost": 1, "packets_received": 199,
    ...            "lost_mic_samples": 320, "late_blocks": 3}]
    >>> figures = summarise(page + server)
    >>> figures["rtt_ms_p50"], figures["rtt_ms_p90"], figures["server_rtt_ms_p50"]
    (86.0, 139.0, 84.0)
    >>> figures["loss_to_page"], figures["loss_to_server"], figures["concealed_fraction"]
    (0.0385, 0.005, 0.02)
    >>> figures["candidate_type"], figures["late_blocks"], figures["lost_mic_s"], figures["page_samples"]
    ('relay', 3, 0.02, 4)
    >>> summarise([])["rtt_ms_p50"] is None
    True
    """
    page = [r for r in rows if r.get("side") == "page"]
    server = [r for r in rows if r.get("side") == "server"]
    page_rtt = _numbers(page, "rtt_ms") or _numbers(page, "remote_rtt_ms")
    server_rtt = _numbers(server, "rtt_ms")
    rtt = page_rtt or server_rtt
    concealed = None
    for row in reversed(page):
        if _numbers([row], "concealed_samples") and _numbers([row], "total_samples_received"):
            if row["total_samples_received"] > 0:
                concealed = min(float(row["concealed_samples"]) / float(row["total_samples_received"]), 1.0)
            break
    late = _last(server, "late_blocks")
    lost_mic = _last(server, "lost_mic_samples")
    return {
        "rtt_ms_p50": _rounded(percentile(rtt, 50), 1),
        "rtt_ms_p90": _rounded(percentile(rtt, 90), 1),
        "server_rtt_ms_p50": _rounded(percentile(server_rtt, 50), 1),
        "jitter_ms_p50": _rounded(percentile(_numbers(page, "jitter_ms"), 50), 1),
        "server_jitter_ms_p50": _rounded(percentile(_numbers(server, "jitter_ms"), 50), 1),
        "loss_to_page": _rounded(loss_fraction(page), 4),
        "loss_to_server": _rounded(loss_fraction(server), 4),
        "concealed_fraction": _rounded(concealed, 4),
        "playout_delay_ms_p50": _rounded(percentile(_numbers(page, "playout_delay_ms"), 50), 1),
        "candidate_type": _last(page, "candidate_type"),
        "relay_protocol": _last(page, "relay_protocol"),
        "late_blocks": int(late) if isinstance(late, (int, float)) else None,
        "loop_lag_ms_p90": _rounded(percentile(_numbers(server, "loop_lag_ms"), 90), 1),
        "cpu_wait_p90": _rounded(percentile(_numbers(server, "cpu_wait"), 90), 3),
        "lost_mic_s": round(float(lost_mic) / sample_rate, 3) if isinstance(lost_mic, (int, float)) else None,
        "page_samples": len(page),
        "server_samples": len(server),
    }


SUMMARY_KEYS = tuple(summarise([]))


def network_summary(path: Path | str) -> dict | None:
    """The summary of a session's network.jsonl; None when the call wrote none."""
    path = Path(path)
    return summarise(read_network(path)) if path.is_file() else None


def network_series(rows: list[dict]) -> dict[str, list[tuple[float, float]]]:
    """Over the call's microphone clock: each side's round trip (ms) and the loss of the audio it
    received in each interval between its rows (from the cumulative counters), for a figure.

    >>> series = network_series([
    ...     {"side": "page", "mic_s": 1.0, "rtt_ms": 80, "packets_lost": 0, "packets_received": 50},
    ...     {"side": "page", "mic_s": 2.0, "rtt_ms": 90, "packets_lost": 5, "packets_received": 95}])
    >>> series["page rtt_ms"], series["page loss"]
    ([(1.0, 80.0), (2.0, 90.0)], [(2.0, 0.1)])
    """
    series: dict[str, list[tuple[float, float]]] = {}
    for side in ("page", "server"):
        own = [r for r in rows if r.get("side") == side and _numbers([r], "mic_s")]
        series[f"{side} rtt_ms"] = [(float(r["mic_s"]), float(r["rtt_ms"])) for r in own if _numbers([r], "rtt_ms")]
        counted = [r for r in own if _numbers([r], "packets_lost") and _numbers([r], "packets_received")]
        loss = []
        for before, after in zip(counted, counted[1:]):
            lost = float(after["packets_lost"]) - float(before["packets_lost"])
            got = float(after["packets_received"]) - float(before["packets_received"])
            if lost + got > 0:
                loss.append((float(after["mic_s"]), round(max(lost, 0.0) / (max(lost, 0.0) + got), 4)))
        series[f"{side} loss"] = loss
    return series


def server_fields(stats, clock_rate: int, lost_mic_samples: int, late_blocks: int) -> dict:
    """A server row's figures from aiortc's `getStats()` values: the microphone's inbound-rtp
    (aiortc gives its jitter in RTP clock units) and the page's RTCP report on the system's
    stream (remote-inbound-rtp: aiortc gives RTCP's 8-bit fraction lost, and the round trip in s)."""
    fields = {name: None for name in ("rtt_ms", "jitter_ms", "packets_lost", "packets_received",
                                      "remote_fraction_lost", "remote_packets_lost")}
    for stat in stats:
        kind = getattr(stat, "type", None)
        if kind == "inbound-rtp" and getattr(stat, "kind", "audio") == "audio":
            fields["packets_lost"] = getattr(stat, "packetsLost", None)
            fields["packets_received"] = getattr(stat, "packetsReceived", None)
            jitter = getattr(stat, "jitter", None)
            fields["jitter_ms"] = None if jitter is None else round(1000.0 * jitter / clock_rate, 2)
        elif kind == "remote-inbound-rtp" and getattr(stat, "kind", "audio") == "audio":
            rtt = getattr(stat, "roundTripTime", None)
            fields["rtt_ms"] = None if rtt is None else round(1000.0 * rtt, 1)
            fraction = getattr(stat, "fractionLost", None)
            fields["remote_fraction_lost"] = None if fraction is None else round(fraction / 256, 4)
            fields["remote_packets_lost"] = getattr(stat, "packetsLost", None)
    return {**fields, "lost_mic_samples": int(lost_mic_samples), "late_blocks": int(late_blocks)}
