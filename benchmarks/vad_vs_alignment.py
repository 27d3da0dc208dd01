"""How much does measuring a conversation from audio (Silero VAD, Whisper words: the session
pipeline) move each turn-taking statistic, against the word alignments the Switchboard reference
is built from?

Each Switchboard validation conversation (its first --seconds) is rendered as speech at its own
timings with the demo's packaged voices (demo/speech.py: Piper for side A, espeak-ng for side B):
every stretch of contiguous words of a side is spoken and time-stretched (sox tempo, pitch kept)
to exactly its aligned interval, so the rendering's speech lies where the alignment says. Then
every statistic of `turntaking.stats` is computed three ways:

    words      from the word alignments (as `turntaking.reference` builds Switchboard)
    vad+words  from the audio with Silero VAD (speech/pipeline.py), the true words placed on it
    vad+asr    from the audio through the session pipeline: Silero VAD, then faster-whisper words

and the bias of each audio column is the mean over conversations of (audio - words), with a
95 % t interval over conversations (scipy.stats). Results per conversation are kept in
--work-dir, so a second run only adds what is missing.

    nice -n 10 python benchmarks/vad_vs_alignment.py SWB_DIR --conversations 20 --seconds 180 \
        --work-dir /tmp/vad_bias --markdown docs/vad-vs-alignment-table.md
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile
from scipy import stats as scipy_stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from demo.speech import SAMPLE_RATE, DemoVoices  # noqa: E402
from speech.pipeline import load_conversation as load_audio_conversation  # noqa: E402
from turntaking.activity import Conversation, Word  # noqa: E402
from turntaking.activity import conversation_from_json, conversation_to_json  # noqa: E402
from turntaking.events import EventParams, inter_pausal_units  # noqa: E402
from turntaking.stats import COUNT_EVENTS, DURATION_EVENTS, conversation_statistics  # noqa: E402
from turntaking.switchboard import conversation_ids, load_conversation  # noqa: E402

SOURCES = ("words", "vad+words", "vad+asr")


def crop(conv: Conversation, seconds: float) -> Conversation:
    """The first `seconds` of a conversation: speech and words that end by then."""
    activity = tuple([(s, e) for s, e in conv.activity[k] if e <= seconds] for k in (0, 1))
    words = tuple([w for w in conv.words[k] if w.end <= seconds] for k in (0, 1))
    return Conversation(min(seconds, conv.duration), activity, words, conv.speakers, source=conv.source)


def stretch(audio: np.ndarray, seconds: float) -> np.ndarray:
    """`audio` (16 kHz) brought to `seconds` by sox's tempo effect (pitch kept), then to the exact
    sample count by linear interpolation (a change of well under 1 %)."""
    n = max(1, int(round(seconds * SAMPLE_RATE)))
    factor = len(audio) / n
    if len(audio) and abs(factor - 1) > 0.01:
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = Path(tmp) / "in.wav", Path(tmp) / "out.wav"
            soundfile.write(str(src), audio, SAMPLE_RATE, subtype="FLOAT")
            # sox's tempo works on factors up to about 10 and down to 0.1; chain when beyond.
            chain, left = [], factor
            while left > 8 or left < 0.125:
                step = 8.0 if left > 8 else 0.125
                chain += ["tempo", "-s", f"{step:.6f}"]
                left /= step
            chain += ["tempo", "-s", f"{left:.6f}"]
            subprocess.run(["sox", str(src), str(dst), *chain], check=True, capture_output=True)
            audio, _ = soundfile.read(str(dst), dtype="float32")
    if len(audio) == 0:
        return np.zeros(n, dtype=np.float32)
    return np.interp(np.linspace(0, len(audio) - 1, n), np.arange(len(audio)), audio).astype(np.float32)


def render(conv: Conversation, voices: DemoVoices) -> np.ndarray:
    """(2, n) float32: each side's contiguous word stretches spoken at their aligned intervals."""
    out = np.zeros((2, int(round(conv.duration * SAMPLE_RATE))), dtype=np.float32)
    for k in (0, 1):
        words = conv.words[k]
        for start, end in conv.activity[k]:
            text = " ".join(w.text for w in words if start <= 0.5 * (w.start + w.end) <= end)
            speech = stretch(voices.speak(k, text), end - start)
            at = int(round(start * SAMPLE_RATE))
            out[k, at:at + len(speech)] = speech[:out.shape[1] - at]
    return np.clip(out, -1, 1)


def measures(stats: dict) -> dict[str, float | None]:
    """Every statistic of one conversation, by a readable name."""
    out = {f"{e} /min": stats["per_minute"][e] for e in COUNT_EVENTS}
    out.update({f"{e} % of time": stats["percent"][e] for e in DURATION_EVENTS})
    out["words /min"] = stats["speaking_rate_wpm"]
    out["backchannel words /min"] = stats["backchannel_rate_wpm"]
    ftos = stats["floor_transfer_offsets_s"]
    for name, q in (("FTO p25 ms", 25), ("FTO median ms", 50), ("FTO p75 ms", 75)):
        out[name] = 1000 * float(np.percentile(ftos, q)) if ftos else None
    out["FTO in overlap %"] = 100 * float(np.mean(np.asarray(ftos) < 0)) if ftos else None
    return out


def with_noise(samples: np.ndarray, snr_db: float, seed: int) -> np.ndarray:
    """White noise added to each channel, `snr_db` below the RMS of that channel's speech."""
    rng = np.random.default_rng(seed)
    out = samples.copy()
    for k in range(len(out)):
        speech = out[k][np.abs(out[k]) > 0]
        rms = float(np.sqrt(np.mean(speech.astype(np.float64) ** 2))) if len(speech) else 0.0
        out[k] += rng.normal(0.0, rms / 10 ** (snr_db / 20), out.shape[1]).astype(np.float32)
    return np.clip(out, -1, 1)


def one_conversation(root, conv_id: str, seconds: float, voices: DemoVoices, work: Path,
                     snr_db: float | None = None) -> dict:
    conv = crop(load_conversation(root, conv_id), seconds)
    wav, words_json = work / f"sw{conv_id}.wav", work / f"sw{conv_id}.words.json"
    t0 = time.perf_counter()
    samples = render(conv, voices)
    if snr_db is not None:
        samples = with_noise(samples, snr_db, int(conv_id))
    soundfile.write(str(wav), samples.T, SAMPLE_RATE, subtype="PCM_16")
    words_json.write_text(json.dumps(conversation_to_json(conv)))
    t1 = time.perf_counter()
    vad_words = load_audio_conversation(wav, vad="silero", transcript=words_json)
    t2 = time.perf_counter()
    vad_asr = load_audio_conversation(wav, vad="silero")
    t3 = time.perf_counter()
    row = {"conversation": f"sw{conv_id}", "seconds": conv.duration,
           "render_s": round(t1 - t0, 1), "vad_s": round(t2 - t1, 1), "vad_asr_s": round(t3 - t2, 1)}
    for name, c in zip(SOURCES, (conv, vad_words, vad_asr)):
        row[name] = measures(conversation_statistics(c, include_events=False))
    # The audio's voice activity and words, to try corrections on without rendering again.
    row["conversations"] = {name: conversation_to_json(c) for name, c in zip(SOURCES[1:], (vad_words, vad_asr))}
    wav.unlink()  # derived from licensed-free alignments, but large; the numbers are what is kept
    return row


def bias_table(rows: list[dict]) -> list[dict]:
    """Per statistic: the mean from the words, and per audio source the mean difference (audio -
    words) with its 95 % t interval over conversations."""
    table = []
    for name in rows[0]["words"]:
        entry = {"statistic": name}
        base = [r["words"][name] for r in rows]
        entry["words mean"] = float(np.mean([b for b in base if b is not None])) if any(b is not None for b in base) else None
        for source in SOURCES[1:]:
            diffs = np.asarray([r[source][name] - r["words"][name] for r in rows
                                if r[source][name] is not None and r["words"][name] is not None], dtype=float)
            if len(diffs) < 2:
                entry[source] = None
                continue
            ci = scipy_stats.ttest_1samp(diffs, 0.0).confidence_interval(0.95)
            entry[source] = {"mean_difference": float(diffs.mean()), "ci_95": [float(ci.low), float(ci.high)],
                             "n": int(len(diffs))}
        table.append(entry)
    return table


def ipus(conv: Conversation, k: int):
    return inter_pausal_units(conv.activity[k], EventParams().ipu_silence_s)


def boundary_lags(rows: list[dict], root, seconds: float) -> tuple[float, float]:
    """Median (VAD onset - aligned onset, VAD offset - aligned offset), s, over the IPU boundaries
    of `rows` that have a VAD boundary within 0.3 s."""
    onsets, offsets = [], []
    for r in rows:
        words = crop(load_conversation(root, r["conversation"]), seconds)
        vad = conversation_from_json(r["conversations"]["vad+words"])
        for k in (0, 1):
            found = ipus(vad, k)
            for s, e in ipus(words, k):
                ds = min((vs - s for vs, _ in found), key=abs, default=None)
                de = min((ve - e for _, ve in found), key=abs, default=None)
                if ds is not None and abs(ds) < 0.3:
                    onsets.append(ds)
                if de is not None and abs(de) < 0.3:
                    offsets.append(de)
    return float(np.median(onsets)), float(np.median(offsets))


def shifted(conv: Conversation, onset_lag: float, offset_lag: float) -> Conversation:
    """The conversation with every speech segment's start moved by -onset_lag and end by -offset_lag."""
    activity = tuple([(s - onset_lag, e - offset_lag) for s, e in conv.activity[k] if e - offset_lag > s - onset_lag]
                     for k in (0, 1))
    return Conversation(conv.duration, activity, conv.words, conv.speakers, source=conv.source)


def correction_trial(rows: list[dict], root, seconds: float, fit_rows: list[dict] | None = None) -> dict:
    """Does undoing the VAD's median boundary lags help? Lags measured on the even-numbered
    conversations, applied to the odd-numbered ones (or measured on `fit_rows`, another run's,
    and applied to all of `rows`) (VAD + true words); per statistic, the mean |audio - words|
    there without and with the correction."""
    fit, held = (rows[0::2], rows[1::2]) if fit_rows is None else (fit_rows, rows)
    onset_lag, offset_lag = boundary_lags(fit, root, seconds)
    before, after = {}, {}
    for r in held:
        vad = conversation_from_json(r["conversations"]["vad+words"])
        corrected = measures(conversation_statistics(shifted(vad, onset_lag, offset_lag), include_events=False))
        for name, base in r["words"].items():
            if base is None or r["vad+words"][name] is None or corrected[name] is None:
                continue
            before.setdefault(name, []).append(abs(r["vad+words"][name] - base))
            after.setdefault(name, []).append(abs(corrected[name] - base))
    per_stat = {n: {"mean_abs_error_before": float(np.mean(before[n])), "mean_abs_error_after": float(np.mean(after[n]))}
                for n in before}
    return {"onset_lag_s": onset_lag, "offset_lag_s": offset_lag, "fit_conversations": len(fit),
            "held_out_conversations": len(held), "per_statistic": per_stat,
            "statistics_improved": sum(v["mean_abs_error_after"] < v["mean_abs_error_before"] for v in per_stat.values()),
            "statistics_worse": sum(v["mean_abs_error_after"] > v["mean_abs_error_before"] for v in per_stat.values())}


def correction_markdown(trial: dict) -> str:
    lines = [f"Correction tried: VAD onsets moved by {-1000 * trial['onset_lag_s']:+.0f} ms and offsets by "
             f"{-1000 * trial['offset_lag_s']:+.0f} ms (the median boundary lags of {trial['fit_conversations']} "
             f"conversations), scored on {trial['held_out_conversations']} other conversations: better on "
             f"{trial['statistics_improved']} statistics, worse on {trial['statistics_worse']}.", "",
             "| statistic | mean abs. error, VAD + true words | ... corrected |", "|---|---|---|"]
    for name, v in trial["per_statistic"].items():
        lines.append(f"| {name} | {v['mean_abs_error_before']:.2f} | {v['mean_abs_error_after']:.2f} |")
    return "\n".join(lines) + "\n"


def markdown(table: list[dict], rows: list[dict], command: str) -> str:
    def cell(d):
        if d is None:
            return "n/a"
        return f"{d['mean_difference']:+.2f} [{d['ci_95'][0]:+.2f}, {d['ci_95'][1]:+.2f}]"

    minutes = sum(r["seconds"] for r in rows) / 60
    lines = [f"{len(rows)} Switchboard validation conversations, {minutes:.0f} minutes in all; `{command}`", "",
             "| statistic | from words (mean) | VAD + true words: bias [95 % CI] | VAD + ASR (session pipeline): bias [95 % CI] |",
             "|---|---|---|---|"]
    for e in table:
        base = "n/a" if e["words mean"] is None else f"{e['words mean']:.2f}"
        lines.append(f"| {e['statistic']} | {base} | {cell(e['vad+words'])} | {cell(e['vad+asr'])} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("switchboard", help="Switchboard MS-98 directory (splits/, swb_ms98_transcriptions/)")
    p.add_argument("--conversations", type=int, default=20, help="the first N validation conversations")
    p.add_argument("--seconds", type=float, default=180.0, help="the first S seconds of each")
    p.add_argument("--snr-db", type=float, help="add white noise this many dB below each channel's speech")
    p.add_argument("--work-dir", default="/tmp/vad_vs_alignment", help="per-conversation results (resumable)")
    p.add_argument("--lags-from", help="another run's --work-dir: the correction's lags measured there, tried on this run")
    p.add_argument("--json", help="write the bias table and every conversation's numbers here")
    p.add_argument("--markdown", help="write the bias table as Markdown here")
    args = p.parse_args(argv)
    root = Path(args.switchboard)
    try:
        ids = conversation_ids(root, "val")[:args.conversations]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    voices = DemoVoices()
    rows = []
    for i, conv_id in enumerate(ids, 1):
        done = work / f"sw{conv_id}.{int(args.seconds)}s.json"
        if not done.is_file():
            done.write_text(json.dumps(one_conversation(root, conv_id, args.seconds, voices, work, args.snr_db)))
        rows.append(json.loads(done.read_text()))
        r = rows[-1]
        print(f"[{i}/{len(ids)}] sw{conv_id}: render {r['render_s']} s, vad {r['vad_s']} s, vad+asr {r['vad_asr_s']} s",
              file=sys.stderr)
    table = bias_table(rows)
    fit_rows = None
    if args.lags_from:  # that run's conversations other than this run's
        mine = {r["conversation"] for r in rows}
        fit_rows = [r for r in (json.loads(f.read_text()) for f in
                                sorted(Path(args.lags_from).glob(f"sw*.{int(args.seconds)}s.json")))
                    if r["conversation"] not in mine]
    trial = correction_trial(rows, root, args.seconds, fit_rows)
    command = f"python benchmarks/vad_vs_alignment.py SWB --conversations {args.conversations} --seconds {args.seconds:g}"
    if args.snr_db is not None:
        command += f" --snr-db {args.snr_db:g}"
    text = markdown(table, rows, command) + "\n" + correction_markdown(trial)
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"table": table, "correction_trial": trial, "conversations": rows}, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
