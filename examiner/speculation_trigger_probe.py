"""When would each speculation trigger fire, replayed on task-set inputs (no calls)?  Run:
`python examiner/speculation_trigger_probe.py SET [SET ...]` (sets of `python -m examiner make-tasks`).

Per example: Silero's streaming P(speech) and the 20 ms blocks' level, the caller's activity as
the predictive system tracks it. A trigger fires at a block where the caller is active, has
spoken min_speech_ms, and (P < p_below, the frame before < 0.9) or (level rule). Reported: the
first firing at or after each speech region's dry end (lag), and firings inside speech regions
(more than 40 ms before their end: a speculation dropped when the caller goes on).
"""
import glob, json, math, os, sys
from collections import deque
import numpy as np, soundfile
from studies.systems.components import StreamingVAD, load_vad_session

BLOCK = 320
def level_db(b): return 10 * math.log10(float(np.mean(b.astype(np.float64) ** 2)) + 1e-12)
def mean_db(l): return 10 * math.log10(float(np.mean(np.power(10.0, np.asarray(l) / 10))) + 1e-12)

def replay(wav, session):
    audio, sr = soundfile.read(wav, dtype="float32"); assert sr == 16000
    vad = StreamingVAD(session, threshold=0.3)
    p = p_before = 0.0; active = False; rows = []
    for i in range(0, len(audio) - BLOCK + 1, BLOCK):
        block = audio[i:i + BLOCK]
        for q in vad.push(block):
            active = q >= 0.3 or (active and q >= 0.15)
            p_before, p = p, q
        rows.append(((i + BLOCK) / 16000, p, p_before, level_db(block), active))
    return rows

def firings(rows, rule):
    caller, blocks, speech, out = deque(maxlen=250), deque(maxlen=2), 0, []
    armed = True
    for t, p, pb, lv, active in rows:
        blocks.append(lv)
        if not active:
            if armed and speech >= 0.3 * 16000: out.append(t)  # the VAD's own end: speculation at its first silent block
            armed = True; speech = 0; continue
        caller.append(lv); speech += BLOCK
        if speech < 0.3 * 16000 or len(caller) < 10: continue
        fire = rule(p, pb, mean_db(blocks), mean_db(caller))
        if fire and armed: out.append(t); armed = False
        elif not fire and p >= 0.7 and mean_db(blocks) > mean_db(caller) - 6: armed = True  # speech again
    return out

RULES = {
    "P<0.7 (now)": lambda p, pb, b, c: p < 0.7 and pb < 0.9,
    "P<0.8": lambda p, pb, b, c: p < 0.8 and pb < 0.95,
    "P<0.9": lambda p, pb, b, c: p < 0.9,
    "10dB": lambda p, pb, b, c: b <= c - 10,
    "10dB&P<0.95": lambda p, pb, b, c: b <= c - 10 and p < 0.95,
    "10dB&P<0.9": lambda p, pb, b, c: b <= c - 10 and p < 0.9,
    "8dB&P<0.9": lambda p, pb, b, c: b <= c - 8 and p < 0.9,
    "12dB&P<0.95": lambda p, pb, b, c: b <= c - 12 and p < 0.95,
    "10dB&P<0.95&pb<0.95": lambda p, pb, b, c: b <= c - 10 and p < 0.95 and pb < 0.95,
}

session = load_vad_session()
for tset in sys.argv[1:]:
    stats = {r: ([], 0, 0) for r in RULES}
    for d in sorted(glob.glob(f"{tset}/*/*")):
        ex = json.load(open(f"{d}/example.json"))
        rows = replay(f"{d}/input.wav", session)
        for name, rule in RULES.items():
            lags, inside, n = stats[name]
            fired = firings(rows, rule)
            for s0, s1 in ex["speech"]:
                after = [t - s1 for t in fired if t >= s1 - 0.04]
                lags.append(after[0] if after else np.nan)
                inside += sum(1 for t in fired if s0 < t < s1 - 0.04)
            stats[name] = (lags, inside, n + 1)
    print(f"== {tset}")
    for name, (lags, inside, n) in stats.items():
        lags = np.array(lags)
        print(f"  {name:14s} lag after dry end p50 {np.nanpercentile(lags,50):.3f} p90 {np.nanpercentile(lags,90):.3f} "
              f"(none {int(np.isnan(lags).sum())}/{len(lags)}), inside speech {inside} in {n} examples")
