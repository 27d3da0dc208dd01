"""The examiner's row of a system (FDB's published columns and the overlap probes), how a system
is named, and FDB v1.0's published rows. Light: the researcher views import it."""

from __future__ import annotations

import json

# FDB v1.0's README (parakeet ASR), for orientation beside the examiner's rows: the columns of
# `table_row` it publishes (pause TOR on its synthetic set; on Candor it differs).
PUBLISHED_FDB_V1 = {
    "Moshi": {"pause_tor": 0.985, "backchannel_tor": 1.000, "backchannel_frequency_per_s": 0.001,
              "backchannel_jsd": 0.957, "smooth_tor": 0.941, "smooth_latency_s": 0.265, "interruption_tor": 1.000,
              "interruption_latency_s": 0.257},
    "Freeze-Omni": {"pause_tor": 0.642, "backchannel_tor": 0.636, "backchannel_frequency_per_s": 0.001,
                    "backchannel_jsd": 0.997, "smooth_tor": 0.336, "smooth_latency_s": 0.953,
                    "interruption_tor": 0.867, "interruption_latency_s": 1.409},
    "GPT-Realtime": {"pause_tor": 0.010, "backchannel_tor": 0.000, "backchannel_frequency_per_s": 0.007,
                     "backchannel_jsd": 0.980, "smooth_tor": 1.000, "smooth_latency_s": 1.470,
                     "interruption_tor": 0.970, "interruption_latency_s": 1.500},
}

# FDB's fourth interruption column: no offline equal, so it stays empty everywhere it is shown.
JUDGE_NOTE = ("FDB rates interruption answers with GPT-4-turbo (0-5); there is no offline equal, so the "
              "column is left empty")


def system_label(kind: str, config: dict) -> str:
    """How a system is named in a run's report and the database: its kind, with its config if any.

    >>> system_label("cascaded", {}), system_label("cascaded", {"voice": "af", "llm": "gemma"})
    ('cascaded', 'cascaded {"llm": "gemma", "voice": "af"}')
    """
    return f"{kind} {json.dumps(config, sort_keys=True)}" if config else kind


def table_row(scores: dict) -> dict:
    """The row FDB publishes (plus the overlap probes), from a run's scores; a column whose task
    was not run is None.

    >>> row = table_row({"pause_handling": {"fdb": {"tor": 0.25}}, "user_interruption": {"overlap": {"stopped": 0.9}}})
    >>> row["pause_tor"], row["barge_in_stopped"], row["smooth_tor"]
    (0.25, 0.9, None)
    """
    def fdb(task, key):
        return scores.get(task, {}).get("fdb", {}).get(key)

    def probe(task, key):
        return scores.get(task, {}).get("overlap", {}).get(key)

    def switchboard(key):
        return scores.get("backchannel", {}).get("switchboard", {}).get(key)

    def replies(key):
        return scores.get("smooth_turn_taking", {}).get("replies", {}).get(key)

    return {"pause_tor": fdb("pause_handling", "tor"),
            "backchannel_tor": fdb("backchannel", "tor"),
            "backchannel_frequency_per_s": fdb("backchannel", "frequency_per_s"),
            "backchannel_jsd": fdb("backchannel", "jsd"),
            "smooth_tor": fdb("smooth_turn_taking", "tor"), "smooth_latency_s": fdb("smooth_turn_taking", "latency_s"),
            "interruption_tor": fdb("user_interruption", "tor"),
            "interruption_latency_s": fdb("user_interruption", "latency_s"), "interruption_judge": None,
            "barge_in_stopped": probe("user_interruption", "stopped"),
            "barge_in_stop_time_s": probe("user_interruption", "stop_time_s"),
            "false_barge_in_backchannel": probe("user_backchannel", "stopped"),
            "false_barge_in_background": probe("background_speech", "stopped"),
            "false_barge_in_noise": probe("noise_burst", "stopped"),
            # the monologues' backchannels against Switchboard's listeners on the same speech
            "backchannel_rate_ratio_switchboard": switchboard("rate_ratio"),
            "backchannel_timing_jsd_switchboard": switchboard("timing_jsd"),
            # what a listener timed as Switchboard's would get with as many backchannels
            "backchannel_timing_jsd_listener": switchboard("listener_timing_jsd"),
            # whether the answers answer the questions (studies.reply_quality; nats per token)
            "reply_relevance": replies("relevance_mean"),
            "reply_apology_or_disclaimer_rate": replies("apology_or_disclaimer_rate"),
            # 95% bootstrap intervals over examples
            "pause_tor_ci95": fdb("pause_handling", "tor_ci95"), "backchannel_tor_ci95": fdb("backchannel", "tor_ci95"),
            "smooth_tor_ci95": fdb("smooth_turn_taking", "tor_ci95"),
            "smooth_latency_ci95": fdb("smooth_turn_taking", "latency_ci95"),
            "interruption_tor_ci95": fdb("user_interruption", "tor_ci95"),
            "interruption_latency_ci95": fdb("user_interruption", "latency_ci95"),
            "backchannel_rate_ratio_switchboard_ci95": switchboard("rate_ratio_ci95"),
            "backchannel_timing_jsd_switchboard_ci95": switchboard("timing_jsd_ci95")}
