"""Whether a session's system replies answered what the participant said: each exchange of the
call's timing log (what the system heard, what it said) with studies.reply_quality's measures,
and the call's figures in a line. Systems whose log holds no text of theirs (a remote server
that sends audio only) have no rows.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from storage.files import resolve
from studies.reply_quality import ReplyLikelihood, exchanges_from_log, packaged_scorer, reply_qualities, summarize
from studies.sessions import timing_relpath
from studies.timing import read_timing_log

REPLY_COLUMNS = ["heard", "reply", "relevance", "echo", "apology", "disclaimer", "sentences"]


def reply_table(events: list[dict], scorer: Callable[[], ReplyLikelihood] = packaged_scorer) -> tuple[pd.DataFrame, str]:
    """(one row per answered turn, a line of the call's figures; "" without exchanges). The
    scorer's model is loaded only for a call with exchanges."""
    exchanges = exchanges_from_log(events)
    if not exchanges:
        return pd.DataFrame(columns=REPLY_COLUMNS), ""
    qualities = reply_qualities(scorer(), [t for t, _ in exchanges], [r for _, r in exchanges])
    table = pd.DataFrame([{"heard": q.turn, "reply": q.reply,
                           "relevance": None if q.relevance is None else round(q.relevance, 2),
                           "echo": "yes" if q.echo else "", "apology": "yes" if q.apology else "",
                           "disclaimer": "yes" if q.disclaimer else "", "sentences": q.sentences}
                          for q in qualities], columns=REPLY_COLUMNS)
    s = summarize(qualities)
    relevance = "not measurable (one turn)" if s.relevance_mean is None else f"{s.relevance_mean:.2f} nats/token"
    note = (f"Replies: {s.replies}; relevance to their turns {relevance} (above 0: likelier after their own turn "
            f"than after the call's others; a reply that says its turn back counts 0); echoes {s.echoes}, "
            f"apologies {s.apologies}, assistant disclaimers {s.disclaimers}, over two sentences {s.long_replies}.")
    return table, note


def stored_reply_table(session_id: int, data_root=None) -> tuple[pd.DataFrame, str]:
    """`reply_table` of a stored session's timing log (none: no rows)."""
    path = resolve(timing_relpath(session_id), data_root)
    return reply_table(read_timing_log(path) if path.is_file() else [])
