"""Command line of the naturalness scorers (naturalness/scorers.py).

    python -m naturalness score RECORDING... [--scorer timing-hazard-words|timing-hazard|durations|turnnat-va] [--audio-cue]
                                      (turnnat-paper: the old name of turnnat-va, still accepted)
    python -m naturalness score DIR|MANIFEST|RECORDING... --run-dir RUN [--workers N | --ray-address A]
                                       the same as Ray tasks, resumable (naturalness/corpus_run.py)
    python -m naturalness pairs MANIFEST [--scorer ...]   score difference, pairwise accuracy, C-index
    python -m naturalness fit-scorers SWITCHBOARD_DIR [--split train] [--out-dir naturalness/checkpoints]
                                      [--duration-conversations 600]
    python -m naturalness fit-first-words SWITCHBOARD_DIR [--split train] [--reference-split val]
                                      [--out-dir naturalness/checkpoints]
    python -m naturalness validate --swb SWITCHBOARD_DIR [--per-type 80] [--seed 0] [--work DIR]
                                      every scorer on three generators' perturbed pairs, both forms:
                                      writes naturalness/validation/results/ and the model card's tables
    python -m naturalness card [--check]   the model card's tables again from the committed results
RECORDING: a two-channel audio file (one speaker per channel) or a voice-activity JSON. Bad input
ends with one line `error: ...` on stderr and exit status 2.

fit-scorers writes timing_hazard.npz and durations.json, each with a manifest (sha256, what it was
fitted on); fit-first-words writes first_words.json (timing-hazard-words' first-words table,
naturalness/first_words.py) with its manifest. Development-time: the packaged files were made this
way from the Switchboard training split.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from tqdm import tqdm

from jobs.ray_runs import add_ray_options, check_ray_options
from naturalness.corpus_run import naturalness_run
from naturalness.durations import MODEL_FILE as DURATIONS_FILE
from naturalness.durations import DurationModel, save_durations_model
from naturalness.first_words import MIN_COUNT, FirstWordsTable, ipu_starts, save_first_words_table, scored_starts
from naturalness.first_words import MODEL_FILE as FIRST_WORDS_FILE
from naturalness.reports import naturalness_report, pairs_from_manifest
from naturalness.scorers import DEFAULT_SCORER, DEPRECATED_NAMES, JUDGE_SCORERS, SCORER_CHOICES, SCORERS, scorer_type
from naturalness.timing_hazard.model_file import MODEL_FILE, fit_timing_model, save_timing_model
from naturalness.timing_hazard.reference import human_reference, human_reference_with_words
from naturalness.timing_hazard.word_scorer import TimingHazardWordsScorer, score_timing_words
from naturalness.timing_hazard.scorer import TimingParams
from naturalness.validation.generators import FORMS, GENERATORS
from naturalness.validation.run import Settings, validate
from naturalness.validation.tables import CARD, RESULTS_DIR, write_card
from speech.cpus import torch_threads
from storage.files import sha256_file
from turntaking.commands import guard, report_command
from turntaking.switchboard import CorpusError, conversation_ids, load_conversation


def _interval(iv, scale: float = 1.0) -> str:
    return "[  n/a ]" if not iv else f"[{iv[0] * scale:5.1f}, {iv[1] * scale:5.1f}]"


def format_naturalness(report: dict) -> str:
    cue = f" + audio cue {report['audio_cue']}" if report.get("audio_cue") else ""
    # timing-hazard also says where each dialogue's least likely 6 s begin: where to listen first.
    peak = any("peak_start_s" in r for r in report["dialogues"])
    # The score column is the scores' `dialog_nll` field: a likelihood or a cost, as the units say.
    lines = [f"scorer {report['scorer']}{cue} (score in {report['units']}; naturalness = -score)",
             f"{'recording':40s} {'naturalness':>11s} {'score':>10s}" + ("  least likely 6 s from" if peak else "")]
    for r in report["dialogues"]:
        at = f"  {r['peak_start_s']:8.2f} s" if "peak_start_s" in r else ""
        lines.append(f"{r['recording'][-40:]:40s} {r['naturalness']:11.4f} {r['dialog_nll']:10.4f}{at}")
    return "\n".join(lines)


def _acc_line(name: str, s: dict) -> str:
    a, c = s["pair_accuracy"], s["c_index"]
    acc = "n/a" if a["value"] is None else f"{100 * a['value']:5.1f}% {_interval(a['interval_95'], 100)}"
    ci = "n/a" if c["value"] is None else f"{c['value']:.3f} {_interval(c['interval_95'])}"
    return (f"  {name:24s} pairs {s['pairs']:4d}   accuracy {acc}   C-index {ci}   ({a['interval']})"
            f"   mean score difference {s['mean_delta_nll']:+.4f}")


def format_pairs(report: dict) -> str:
    # score(perturbed) - score(natural) = naturalness(natural) - naturalness(perturbed): a DeltaNLL
    # only where the scorer's score is a likelihood (its units say).
    lines = [f"scorer {report['scorer']} ({report['units']}); difference = score(perturbed) - score(natural), "
             "> 0: the natural clip scores more natural",
             f"{'pair_id':32s} {'type':24s} {'difference':>10s}"]
    for p in report["pair_scores"]:
        lines.append(f"{p['pair_id'][:32]:32s} {p['type'][:24]:24s} {p['delta_nll']:+10.4f}")
    lines.append(_acc_line("all", report))
    for t, s in report["per_type"].items():
        lines.append(_acc_line(t, s))
    return "\n".join(lines)


def _scorer_model(args):
    """--scorer-model, or for a scorer that needs a judge the judge --checkpoint."""
    if scorer_type(args.scorer).needs_judge:
        return args.checkpoint
    if args.checkpoint:
        raise ValueError(f"--checkpoint is the judge of the {' and '.join(JUDGE_SCORERS)} scorer: add "
                         f"--scorer {JUDGE_SCORERS[0]} (the {args.scorer} scorer takes --scorer-model)")
    return args.scorer_model


def _note_deprecated(args) -> None:
    """One line on stderr for an old scorer name (it still works: scorer_type maps it)."""
    if args.scorer in DEPRECATED_NAMES:
        print(f"note: --scorer {args.scorer} is deprecated, use {DEPRECATED_NAMES[args.scorer]} (the same scorer)",
              file=sys.stderr)


def cmd_score(args) -> dict:
    _note_deprecated(args)
    check_ray_options(args)
    if args.run_dir:
        return naturalness_run(args, _scorer_model(args))
    return naturalness_report([Path(p) for p in args.recordings], args.scorer, _scorer_model(args), args.audio_cue)


def cmd_pairs(args) -> dict:
    _note_deprecated(args)
    return pairs_from_manifest(Path(args.manifest), args.scorer, _scorer_model(args), args.audio_cue)


def _conversations(root, ids, desc: str):
    for conv_id in tqdm(ids, desc=desc, unit="conv"):
        yield load_conversation(root, conv_id)


def cmd_fit_scorers(args) -> int:
    root = Path(args.corpus)
    ids = conversation_ids(root, split=args.split)
    split_sha = sha256_file(root / "splits" / f"{args.split}.txt")
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    source = {"corpus": "switchboard (ISIP MS-98 word alignments)", "split": args.split, "split_sha256": split_sha}

    model = fit_timing_model(_conversations(root, ids, "timing hazards"), meta=source)
    ref_ids = conversation_ids(root, split=args.reference_split)
    reference = human_reference(_conversations(root, ref_ids, "human reference"), model)
    manifest = save_timing_model(model, out / MODEL_FILE, {"human_reference": {
        "split": args.reference_split, "conversations": len(ref_ids), "score_params": TimingParams().as_dict(),
        "naturalness_by_window_s": reference}})
    print(f"wrote {out / MODEL_FILE} ({manifest['meta']['conversations']} conversations, sha256 {manifest['sha256'][:16]}...)")

    dur_ids = ids[: args.duration_conversations]
    durations = DurationModel.fit(_conversations(root, dur_ids, "durations"), meta=source)
    save_durations_model(durations, out / DURATIONS_FILE)
    print(f"wrote {out / DURATIONS_FILE} ({len(dur_ids)} conversations)")
    return 0


def cmd_fit_first_words(args) -> int:
    root = Path(args.corpus)
    ids = conversation_ids(root, split=args.split)
    starts = [s for conv in _conversations(root, ids, "first words") for s in ipu_starts(conv)]
    table = FirstWordsTable.fit(starts, min_count=MIN_COUNT, provenance={
        "corpus": "switchboard (ISIP MS-98 word alignments)", "split": args.split,
        "split_sha256": sha256_file(root / "splits" / f"{args.split}.txt"), "conversations": len(ids),
        "starts": len(scored_starts(starts)), "two_word_entries_seen_at_least": MIN_COUNT})
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / FIRST_WORDS_FILE
    # The human reference of timing-hazard-words: the reference split's conversations in windows,
    # scored with their words by the scorer with this table; every window, as timing-hazard's
    # reference scores every window (the scorer itself refuses a dialogue without speech).
    scorer = replace(TimingHazardWordsScorer.load(), first_words=table, first_words_path=path)
    ref_ids = conversation_ids(root, split=args.reference_split)
    reference = human_reference_with_words(
        _conversations(root, ref_ids, "human reference (words)"),
        lambda conv: score_timing_words(conv, scorer.model, scorer.turn_end, table, scorer.settings,
                                        scorer.cue_settings).naturalness)
    manifest = save_first_words_table(table, path, {
        "split": args.reference_split, "conversations": len(ref_ids), "score_params": scorer.params,
        "naturalness_by_window_s": reference})
    print(f"wrote {path} ({len(ids)} conversations, {manifest['meta']['starts']} starts, "
          f"{100 * table.base_rate:.1f} % answers, sha256 {manifest['sha256'][:16]}...)")
    return 0


def cmd_validate(args) -> int:
    root = Path(args.swb)
    if not (root / "swb_ms98_transcriptions").is_dir():
        raise ValueError(f"{root} is not a Switchboard MS-98 directory (no swb_ms98_transcriptions/)")
    settings = Settings(args.split, args.per_type, args.seed, args.comparator_conversations, tuple(args.scorers))
    results = Path(args.results)
    with tempfile.TemporaryDirectory(prefix="naturalness-validate-") as scratch:
        validate(root, Path(args.work or scratch), settings, args.generators, args.forms, results)
    changed = write_card(Path(args.card), results)
    print(f"{args.card}: tables {'rewritten' if changed else 'unchanged'} from {results}")
    return 0


def cmd_card(args) -> int:
    differed = write_card(Path(args.card), Path(args.results), check=args.check)
    if args.check and differed:
        print(f"error: the tables of {args.card} differ from {args.results} (run python -m naturalness card)",
              file=sys.stderr)
        return 1
    state = "differed, rewritten" if differed else "match"
    print(f"{args.card}: tables {state} ({args.results})")
    return 0


def _report_command(compute, formatter):
    return report_command(compute, formatter, around=lambda args: torch_threads(args.threads))


def _scorer_options(p) -> None:
    p.add_argument("--scorer", choices=SCORER_CHOICES, default=DEFAULT_SCORER,
                   help="timing-hazard-words (default): timing-hazard with the words where the dialogue has them "
                        "(audio is read with ASR): the last words before and the first words after each silence say "
                        "who should speak; timing-hazard: a cost of the timing in context on voice activity alone "
                        "(NLL plus a charge per start or stop); durations: context-free baseline (NLL per event); turnnat-va: TurnNat's DialogNLL "
                        "pooling on the voice-activity GRU judge (--checkpoint), not the paper's audio scorer; "
                        "turnnat-paper: deprecated old name of turnnat-va, still accepted")
    p.add_argument("--scorer-model", help="model file replacing the scorer's packaged one (timing-hazard, durations)")
    p.add_argument("--audio-cue", action="store_true",
                   help="timing-hazard on two-channel audio: Smart Turn v3.2's P(utterance complete) at every IPU "
                        "end informs who should speak next (naturalness/turn_cue.py)")
    p.add_argument("--checkpoint", help="judge checkpoint of turnnat-va (default: the packaged one); a "
                                        "word-conditioned one needs words (JSON \"words\", or faster-whisper on audio)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m naturalness", description="Naturalness of dialogue timing")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("score", help="naturalness per dialogue (default scorer: timing-hazard-words)")
    p.add_argument("recordings", nargs="+", help="two-channel audio files or voice-activity JSON files")
    _scorer_options(p)
    add_ray_options(p)
    p.set_defaults(func=_report_command(cmd_score, format_naturalness))

    p = sub.add_parser("pairs", help="a scorer on natural/perturbed pairs (JSONL manifest)")
    p.add_argument("manifest", help="JSONL: pair_id, type, natural, perturbed (paths relative to the manifest)")
    _scorer_options(p)
    p.set_defaults(func=_report_command(cmd_pairs, format_pairs))

    p = sub.add_parser("fit-scorers", help="fit the timing-hazard naturalness model and the duration baseline")
    p.add_argument("corpus", help="Switchboard directory (splits/ and swb_ms98_transcriptions/)")
    p.add_argument("--split", default="train")
    p.add_argument("--reference-split", default="val",
                   help="conversations scored in windows as the human reference of the study views")
    p.add_argument("--out-dir", default=str(Path(__file__).parent / "checkpoints"))
    p.add_argument("--duration-conversations", type=int, default=600,
                   help="the baseline's histograms use the first N conversations (as the reference measurement did)")
    p.set_defaults(func=guard(cmd_fit_scorers, (CorpusError, ValueError, OSError)))

    p = sub.add_parser("fit-first-words", help="count timing-hazard-words' first-words table (who spoke last, by "
                                               "the first words after a silence)")
    p.add_argument("corpus", help="Switchboard directory (splits/ and swb_ms98_transcriptions/)")
    p.add_argument("--split", default="train")
    p.add_argument("--reference-split", default="val",
                   help="conversations scored in windows, with their words, as the human reference of the study views")
    p.add_argument("--out-dir", default=str(Path(__file__).parent / "checkpoints"))
    p.set_defaults(func=guard(cmd_fit_first_words, (CorpusError, ValueError, OSError)))

    p = sub.add_parser("validate", help="every scorer on perturbed Switchboard pairs of three generators; writes "
                                        "the result files and the model card's tables")
    p.add_argument("--swb", required=True, help="Switchboard directory (splits/ and swb_ms98_transcriptions/)")
    p.add_argument("--split", default="val")
    p.add_argument("--per-type", type=int, default=80)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--comparator-conversations", type=int, default=600,
                   help="training conversations of the duration likelihood's histograms")
    p.add_argument("--scorers", nargs="+", choices=SCORERS, default=list(SCORERS))
    p.add_argument("--generators", nargs="+", choices=GENERATORS, default=list(GENERATORS))
    p.add_argument("--forms", nargs="+", choices=FORMS, default=list(FORMS))
    p.add_argument("--work", help="keep the built pairs here (default: a temporary directory)")
    _card_options(p)
    p.set_defaults(func=guard(cmd_validate, (CorpusError, ValueError, OSError)))

    p = sub.add_parser("card", help="the model card's validation tables from the committed result files")
    p.add_argument("--check", action="store_true", help="only say whether the card's tables match (exit 1 if not)")
    _card_options(p)
    p.set_defaults(func=guard(cmd_card, (ValueError, OSError)))
    return parser


def _card_options(p) -> None:
    p.add_argument("--results", default=str(RESULTS_DIR), help="result files (one per generator and form)")
    p.add_argument("--card", default=str(CARD), help="the model card whose tables are rewritten")


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
