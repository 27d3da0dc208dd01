"""The timing-hazard naturalness scorer (the default) and the duration baseline.

Context features and counts are checked on hand-made activity with exact expected values; the
packaged models are checked on a hand-built two-speaker timeline and its five perturbations.
"""

import json
import shutil

import numpy as np
import pytest
import soundfile

from turntaking.activity import Conversation, conversation_to_json
from naturalness.durations import DurationModel, event_durations, packaged_durations_path
from naturalness.score import UnscorableDialogue, reference_for
from naturalness.scorers import DEFAULT_SCORER, SCORERS, load_scorer
from naturalness.timing_hazard.context import FRAME_RATE, frame_context, last_speech_length, run_lengths
from naturalness.timing_hazard.hazards import HazardCounts, TimingHazardModel, TimingModelError, context_cells
from naturalness.timing_hazard.model_file import load_timing_model, packaged_model_path
from naturalness.timing_hazard.reference import human_reference
from naturalness.timing_hazard.scorer import TimingParams, score_timing
from tests.command_line import one_line_error, run_cli, run_cli_json


def test_run_lengths_and_last_speech():
    x = np.array([0, 0, 1, 1, 1, 0, 0, 1, 0])
    runs = run_lengths(x)
    assert runs.tolist() == [1, 2, 1, 2, 3, 1, 2, 1, 1]
    # while speaking: the current run; while silent: the last finished speech run (0 before any)
    assert last_speech_length(x, runs).tolist() == [0, 0, 1, 2, 3, 3, 3, 1, 1]


def test_frame_context_sees_only_the_past():
    va = np.array([[1, 1, 1, 0, 0, 0],
                   [0, 0, 0, 0, 1, 1]], dtype=np.int8)
    ctx = frame_context(va)
    assert ctx.flips.tolist() == [[0, 0, 1, 0, 0], [0, 0, 0, 1, 0]]
    # frame 3: A stopped one frame ago (after 3 frames of speech), B has never spoken
    assert ctx.own[:, 3].tolist() == [0, 0] and ctx.other_spoke_last[1, 3] == 1
    assert ctx.other_spoke_last[0, 3] == 0
    # B's context at frame 3 reports A's last utterance as 3 frames long: IPU bin 0 (< 0.5 s)
    assert ctx.other_ipu[1, 3] == 0
    # the context at t never depends on frame t + 1: changing the last frame changes only flips
    va2 = va.copy()
    va2[:, -1] = 1 - va2[:, -1]
    ctx2 = frame_context(va2)
    for name in ("own", "other", "own_run", "other_run", "other_spoke_last", "other_ipu"):
        assert np.array_equal(getattr(ctx, name), getattr(ctx2, name)), name


def test_hazard_counts_and_smoothing():
    va = np.array([[1, 1, 0, 0, 1, 1, 0, 0],
                   [0, 0, 0, 0, 0, 0, 0, 0]], dtype=np.int8)
    counts = HazardCounts.empty()
    counts.add(va)
    assert sum(c.sum() for c in counts.totals) == 3 * 2 * 7  # every level sees every transition
    assert counts.flips[0].sum() == 3  # A: stop, start, stop; B never flips
    model = TimingHazardModel.from_counts(counts, smoothing=10.0)
    # overlap (own 1, other 1) never occurs: its contexts fall back to the add-half prior, 0.5
    overlap = frame_context(np.ones((2, 3), dtype=np.int8))
    assert model.hazard[context_cells(overlap)[2]] == pytest.approx(0.5)
    # A speaking for 2 frames with B silent (frames 1 and 5) stopped both times; for 1 frame (0, 4) never
    cells = context_cells(frame_context(va))[0]
    assert cells[0, 1] == cells[0, 5] and (counts.totals[0][cells[0, 1]], counts.flips[0][cells[0, 1]]) == (2, 2)
    assert cells[0, 0] == cells[0, 4] and (counts.totals[0][cells[0, 0]], counts.flips[0][cells[0, 0]]) == (2, 0)
    ll, expected = model.frame_log_likelihood(va)
    assert ll.shape == expected.shape == (7,)
    assert np.all(ll <= 0) and np.all(expected <= 0)


def test_score_charges_every_frame_and_every_flip():
    model = load_timing_model()
    conv = Conversation(20.0, ([(1.0, 4.0), (9.0, 12.0)], [(4.3, 8.7)]))
    score = score_timing(conv, model)
    assert score.n_flips == 6 and score.duration_s == pytest.approx((20 * FRAME_RATE - 1) / FRAME_RATE)
    free = score_timing(conv, model, TimingParams(flip_cost_nats=0.0))
    assert free.total_nll == pytest.approx(score.total_nll)
    assert free.mean_rate - score.mean_rate == pytest.approx(3.5 * 6 / score.duration_s)
    assert score.naturalness == -score.dialog_nll == -score.nll_rate
    assert score.nll_rate == pytest.approx(score.mean_rate + 2.0 * score.peak_rate)


def test_peak_is_the_least_likely_window():
    model = load_timing_model()
    # Quick exchanges, then one answer that comes 2.5 s late: the worst 6 s hold that silence.
    conv = Conversation(27.2, ([(0.5, 3.0), (6.2, 9.0), (15.2, 18.0), (21.2, 24.0)],
                               [(3.3, 5.9), (11.5, 14.9), (18.3, 20.9), (24.3, 27.0)]))
    score = score_timing(conv, model)
    assert score.peak_start_s <= 9.0 and score.peak_start_s + 6.0 >= 11.0  # the silence 9.0-11.5
    assert score.peak_rate > score.mean_rate
    params = TimingParams(peak_window_s=6.0, peak_weight=0.0)
    assert score_timing(conv, model, params).nll_rate == pytest.approx(score.mean_rate)
    # The soft maximum lies between the mean window rate and the worst one, near the worst when
    # its temperature is low; the same dialogue twice over scores (nearly) the same.
    cold = score_timing(conv, model, TimingParams(peak_temperature=0.01))
    assert score.mean_rate < score.peak_rate < cold.peak_rate
    twice = Conversation(54.4, tuple(a + [(s + 27.2, e + 27.2) for s, e in a] for a in conv.activity))
    assert score_timing(twice, model).nll_rate == pytest.approx(score.nll_rate, abs=0.05)
    # A dialogue shorter than the window is its own window.
    short = score_timing(Conversation(4.0, ([(0.5, 2.0)], [(2.3, 3.5)])), model)
    assert short.peak_rate == pytest.approx(short.mean_rate) and short.peak_start_s == 0.0


# -- a hand-built dialogue and its five perturbations ---------------------------------------------


def dialogue() -> list[tuple[int, float, float]]:
    """(speaker, start, end): A and B alternate with 0.2-0.4 s gaps, A pauses within long turns,
    B backchannels once inside A's turn."""
    return [
        (0, 0.5, 3.1), (1, 3.4, 5.6), (0, 5.9, 8.0), (0, 8.4, 10.2), (1, 10.5, 13.0), (0, 13.3, 15.9),
        (1, 14.6, 14.9), (0, 16.3, 18.0), (1, 18.3, 20.1), (0, 20.4, 23.8), (0, 24.3, 27.5), (1, 27.8, 30.4),
        (0, 30.6, 33.0), (1, 33.3, 35.8), (0, 36.1, 38.6), (1, 38.9, 40.4),
    ]


def to_conversation(segments, duration=41.0) -> Conversation:
    return Conversation(duration, tuple([(s, e) for k, s, e in segments if k == spk] for spk in (0, 1)))


def insert_silence(segments, at: float, length: float):
    return [(k, s + (length if s >= at else 0), e + (length if s >= at else 0)) for k, s, e in segments]


def remove_span(segments, start: float, end: float, gap: float):
    """Delete [start, end) from the timeline (both speakers) and put `gap` of silence there."""
    out = []
    for k, s, e in segments:
        if e <= start:
            out.append((k, s, e))
        elif s >= end:
            out.append((k, s - (end - start) + gap, e - (end - start) + gap))
    return out


PERTURBED = {
    # B answers A's 16.3-18.0 turn 1.6 s later than it did
    "late_response": lambda d: insert_silence(d, 18.3, 1.6),
    # B's 10.5-13.0 answer removed: A waits through the silence it leaves, then goes on
    "removed_response": lambda d: remove_span(d, 10.2, 13.3, 3.1),
    # B's answer at 27.8 moved 1.8 s earlier, into A's speech
    "early_entry": lambda d: [(k, s - 1.8, e - 1.8) if (k, s) == (1, 27.8) else (k, s, e) for k, s, e in d],
    # a 2 s turn of B inserted into A's 0.5 s pause at 23.8-24.3, with 0.25 s gaps
    "inserted_turn": lambda d: sorted(insert_silence(d, 24.3, 2.0) + [(1, 24.05, 26.05)], key=lambda x: x[1]),
    # three extra backchannels of B, 0.8 s apart, inside A's 0.6-3.1 and 20.4-23.8 speech
    "extra_backchannels": lambda d: d + [(1, 1.4, 1.7), (1, 21.2, 21.5), (1, 22.3, 22.6)],
}


@pytest.mark.parametrize("kind", sorted(PERTURBED))
def test_packaged_default_scores_each_perturbation_less_natural(kind):
    scorer = load_scorer(DEFAULT_SCORER)
    natural = to_conversation(dialogue())
    perturbed_segments = PERTURBED[kind](dialogue())
    perturbed = to_conversation(perturbed_segments, 41.0 + max(e for _, _, e in perturbed_segments) - 40.4)
    assert perturbed.activity != natural.activity
    assert scorer.score(perturbed).naturalness < scorer.score(natural).naturalness


# turnnat-va's naturalness of the dialogue and its perturbations, as it was when timing-hazard
# replaced it as the default; it must not move (its figures in the model cards rest on it).
TURNNAT_PAPER_SCORES = {"natural": -3.659894, "early_entry": -3.891244, "extra_backchannels": -3.612473,
                        "inserted_turn": -3.652990, "late_response": -3.659051, "removed_response": -3.595210}


def test_the_paper_scorer_is_unchanged_and_still_misranks_late_and_missing_answers():
    scorer = load_scorer("turnnat-va")
    got = {"natural": scorer.score(to_conversation(dialogue())).naturalness}
    for kind, perturb in PERTURBED.items():
        segments = perturb(dialogue())
        got[kind] = scorer.score(to_conversation(segments, 41.0 + max(e for _, _, e in segments) - 40.4)).naturalness
    assert got == pytest.approx(TURNNAT_PAPER_SCORES, abs=1e-4)
    # What the default was changed for: the paper's score finds the late and the missing answer
    # (and the extra backchannels) *more* natural than the original.
    assert got["late_response"] > got["natural"] and got["removed_response"] > got["natural"]


def test_every_scorer_loads_offline_from_the_repository(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    conv = to_conversation(dialogue())
    for name in SCORERS:
        score = load_scorer(name).score(conv)
        assert np.isfinite(score.naturalness) and score.naturalness == -score.dialog_nll


def test_changed_model_file_is_refused(tmp_path):
    for packaged in (packaged_model_path(), packaged_durations_path()):
        copy = tmp_path / packaged.name
        shutil.copy(packaged, copy)
        shutil.copy(packaged.with_suffix(".manifest.json"), tmp_path / packaged.with_suffix(".manifest.json").name)
        copy.write_bytes(copy.read_bytes() + b" ")
        scorer = "timing-hazard" if packaged == packaged_model_path() else "durations"
        with pytest.raises(ValueError, match="sha256"):
            load_scorer(scorer, copy)
    with pytest.raises(TimingModelError, match="not found"):
        load_timing_model(tmp_path / "none.npz")


def test_cli_names_the_scorer_and_refuses_bad_input(tmp_path):
    path = tmp_path / "dialogue.json"
    path.write_text(json.dumps(conversation_to_json(to_conversation(dialogue()))))
    report = run_cli_json("naturalness", "score", path, "--scorer", "timing-hazard")
    assert report["scorer"] == "timing-hazard" and report["units"].startswith("nats/s (a cost")
    [row] = report["dialogues"]
    assert row["naturalness"] == pytest.approx(load_scorer("timing-hazard").score(to_conversation(dialogue())).naturalness)
    # the default reads words where there are any; this dialogue has none: timing-hazard's score
    default = run_cli_json("naturalness", "score", path)
    assert default["scorer"] == "timing-hazard-words" and default["dialogues"][0]["word_cues"] is None
    assert default["dialogues"][0]["naturalness"] == pytest.approx(row["naturalness"], abs=1e-12)
    [row] = run_cli_json("naturalness", "score", path, "--scorer", "durations")["dialogues"]
    assert row["scorer"] == "durations" and row["n_events"] == len(event_durations(to_conversation(dialogue())))
    one_line_error(run_cli("naturalness", "score", path, "--checkpoint", "x.pt"), "--scorer turnnat-va")
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"not a zip")
    one_line_error(run_cli("naturalness", "score", path, "--scorer-model", broken), "broken.npz", "not a timing model")
    text = run_cli("naturalness", "score", path).stdout
    assert "scorer timing-hazard" in text and "least likely 6 s from" in text
    [row] = report["dialogues"]
    assert 0 <= row["peak_start_s"] <= row["duration_s"] - 6
    assert row["dialog_nll"] == pytest.approx(row["mean_rate"] + 2.0 * row["peak_rate"])


def test_a_dialogue_nobody_speaks_in_is_refused_by_every_scorer_a_one_sided_one_is_scored(tmp_path):
    """A silent call is a finding, not a dialogue: timing-hazard scored 20 s of silence -1.42, more
    natural than the human windows (and than the natural dialogue here)."""
    natural = to_conversation(dialogue())
    click = Conversation(20.0, ([(3.0, 3.3)], []))  # 0.3 s: a click or a breath, no speech
    monologue = to_conversation([seg for seg in dialogue() if seg[0] == 0])  # B never answers
    for name in SCORERS:
        scorer = load_scorer(name)
        with pytest.raises(UnscorableDialogue, match="no speech on either side"):
            scorer.score(click)
        with pytest.raises(UnscorableDialogue, match="no speech on either side"):
            scorer.score(Conversation(20.0, ([], [])))
        if name != "turnnat-va":  # (its pooling needs turn boundaries: a monologue has none)
            assert np.isfinite(scorer.score(monologue).naturalness)
    default = load_scorer(DEFAULT_SCORER)
    assert default.score(monologue).naturalness < default.score(natural).naturalness
    # a recording through Silero: room noise on both channels, nobody speaking
    silent = tmp_path / "silent.wav"
    soundfile.write(str(silent), np.random.default_rng(0).normal(0, 0.003, (16000 * 20, 2)), 16000)
    one_line_error(run_cli("naturalness", "score", silent), "silent.wav", "no speech on either side")


# -- the duration baseline ------------------------------------------------------------------------


def test_duration_baseline_scores_the_mean_event_nll():
    conv = to_conversation(dialogue())
    events = event_durations(conv)
    kinds = sorted({k for k, _ in events})
    assert kinds == ["gap", "overlap", "pause"]
    model = DurationModel.fit([conv])
    expected = np.mean([model.event_nll(k, d) for k, d in events])
    assert model.score(conv).mean_event_nll == pytest.approx(expected)
    # a gap twice as long as any seen costs more than the gaps that were seen
    assert model.event_nll("gap", 3.0) > max(model.event_nll("gap", d) for k, d in events if k == "gap")


def test_human_reference_windows():
    model = load_timing_model()
    conv = to_conversation(dialogue())
    ref = human_reference([conv, conv], model, lengths_s=(10, 20, 60))
    assert set(ref) == {"10", "20"}  # no 60 s window fits in 41 s
    assert ref["10"]["windows"] == 8 and ref["20"]["windows"] == 4
    assert reference_for(ref, 17.0)[0] == 20 and reference_for(ref, 12.0)[0] == 10
    # the mean's interval is over conversations: two identical ones show no spread between them,
    # however many windows they hold
    assert ref["10"]["conversations"] == 2 and ref["10"]["ci95"] == pytest.approx([ref["10"]["mean"]] * 2)
    other = to_conversation(dialogue()[:10])
    mixed = human_reference([conv, other, conv, other], model, lengths_s=(10,))["10"]
    assert mixed["ci95"][0] < mixed["mean"] < mixed["ci95"][1]
