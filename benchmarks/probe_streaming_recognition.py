"""One-off probe: streaming recognition with the packaged Whisper tiny.en, simulated on examiner questions.

Partial hypotheses every 0.3 s of the growing turn (LocalAgreement-2; the audio cut between the
last agreed word and the next, by Whisper's cross-attention alignment), then the final words of
the tail only, against one decoding of the whole turn. Usage: python PROBE mid|next|early|nocut
"""
import sys, time, numpy as np
def _ed(r, h):
    d = list(range(len(h)+1))
    for i in range(1, len(r)+1):
        prev, d[0] = d[0], i
        for j in range(1, len(h)+1):
            cur = min(d[j]+1, d[j-1]+1, prev + (r[i-1]!=h[j-1])); prev, d[j] = d[j], cur
    return d[len(h)]
class jiwer:  # the word error rate over all utterances
    @staticmethod
    def wer(refs, hyps): return sum(_ed(r.split(), h.split()) for r,h in zip(refs,hyps))/sum(len(r.split()) for r in refs)
from examiner.voices import VOICE_SETS, speak
from examiner.task_sets import QUESTIONS, read_questions
from systems.recognition import WhisperASR
from systems.streaming_recognition import agreed_words, without_repeated_word
from speech.asr import clean_word
SR=16000
asr = WhisperASR()
qs = list(QUESTIONS) + list(read_questions("examiner/data/unseen_questions.txt"))[:6]
voices = VOICE_SETS["fitting"].voices if hasattr(VOICE_SETS["fitting"], "voices") else VOICE_SETS["fitting"]
mode = sys.argv[1]
refs, full, streamed, tf, ts, agreed_n = [], [], [], [], [], []
norm = lambda t: " ".join(clean_word(w) for w in t.split() if clean_word(w))
for vi, v in enumerate(list(voices)[:3]):
    for q in qs:
        a = np.concatenate([np.zeros(int(0.5*SR), np.float32), speak(q, v), np.zeros(int(0.1*SR), np.float32)])
        t=time.perf_counter(); f = asr.transcribe(a); tf.append(time.perf_counter()-t)
        agreed, start, prev = [], 0, []
        n_end = len(a)
        for end in range(int(0.6*SR), n_end - int(0.1*SR), int(0.3*SR)):
            audio = a[:end]
            if end - start < 0.5*SR: continue
            words = asr.timed_words(audio[start:], " ".join(agreed) or None)
            texts = [w[2].strip() for w in words]
            n = agreed_words(prev, texts)
            if mode == "nocut": n = 0
            if n:
                if mode == "mid": cut = (words[n-1][1] + words[n][0]) / 2
                elif mode == "early":  # the last agreed word is left to the next hypothesis, its audio kept
                    n -= 1
                    cut = max(words[n][0] - 0.05, 0.0)
                    if n == 0: prev = texts; continue
                elif mode == "next": cut = max(words[n][0] - 0.1, words[n-1][1])
                agreed += texts[:n]
                start = start + min(int(cut*SR), end-start)
            prev = texts[n:]
        t=time.perf_counter()
        tail = asr.transcribe(a[start:], " ".join(agreed) or None)
        tail = without_repeated_word(" ".join(agreed), tail)
        s = " ".join(filter(None, (" ".join(agreed), tail)))
        ts.append(time.perf_counter()-t)
        refs.append(norm(q)); full.append(norm(f)); streamed.append(norm(s)); agreed_n.append(len(agreed))
        if norm(s) != norm(f): print("  ", vi, "|", f, "|", s, "|", " ".join(agreed))
print(mode, "WER full", round(jiwer.wer(refs, full),3), "streamed", round(jiwer.wer(refs, streamed),3),
      "final s full", round(np.mean(tf),3), "tail", round(np.mean(ts),3), "agreed words", np.mean(agreed_n))
