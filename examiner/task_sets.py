"""Task sets in Full-Duplex-Bench's layout, spoken by the packaged voices, reproducible from a seed.

    SET/manifest.json                       seed, tasks, examples per task, the voice set and its voices
    SET/<task>/<k>/input.wav                the user's side, 16 kHz mono
                  /pause.json | turn_taking.json | interrupt.json | metadata.json   (FDB's files)
                  /example.json             the known times, the voice, the texts, the schedule
                  /context.wav, event.wav   (scheduled tasks) the parts the runner re-places
                  /backchannel_reference.json   (backchannel) the reference histogram

Tasks (FDB v1.0: the first four; v1.5: user backchannel and background speech; voicebench-style:
the noise burst):
- pause_handling: one sentence cut in two with a 1-2 s pause inside it; the file ends
  `PAUSE_TAIL_S` after it (FDB scores every word of the output, so room for an answer would count
  as taking the turn during the pause).
- smooth_turn_taking: a complete question, then `ANSWER_ROOM_S` of silence.
- backchannel: a 30-60 s monologue of sentences with 0.4-1.2 s pauses between them.
- user_interruption: a question; `after_system_onset_s` (1.5-3 s) after the system starts to
  answer, the user talks over it.
- user_backchannel: a question inviting a long answer; "mm-hmm" while the system speaks.
- background_speech: a question; a second voice, quieter and not addressed to the system, speaks
  while it answers.
- noise_burst: a question; a cough-like noise burst while the system answers (a false barge-in
  if the system stops).

Voices: a named set of `examiner.voices` (`fitting` by default; `fitting-noisy`; `held-out`; `held-out-noisy`).
The noisy set's room is applied to the placed example (input.wav and the parts the runner
re-places, each on its own): the written times stay the dry speech's onsets and offsets (the
reverb's tail and the noise go on after them), and the silence the runner puts between a
scheduled task's question and its event is clean.

The scheduled tasks' input.wav places the event as if the system started
`ASSUMED_REPLY_S` after the question; `python -m examiner run` places it on the system's actual
speech onset instead and rewrites the event's times.

The backchannel reference: FDB's ground truth is for its own ICC recordings; for these
monologues the reference is "backchannels in the speaker's pauses": equal mass in every
inter-sentence pause, spread over its 0.2 s bins (listeners' backchannels fall mostly at the
speaker's pauses). It is the platform's reference, named in the file, not FDB's.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import soundfile
from tqdm import tqdm

from examiner.fdb_rules import WINDOW_S
from examiner.voices import SAMPLE_RATE, VOICE_SETS, Voice, VoiceSet, in_room, speak
from turntaking.segment import Segment

# scipy.signal is imported where it is used: it takes about a second, which most commands never need.

TASK_NAMES = ("pause_handling", "smooth_turn_taking", "backchannel", "user_interruption", "user_backchannel",
              "background_speech", "noise_burst")
SCHEDULED_TASKS = ("user_interruption", "user_backchannel", "background_speech", "noise_burst")
LEAD_S = 0.5  # silence before the user speaks
PAUSE_TAIL_S = 0.5
ANSWER_ROOM_S = 10.0  # a slow cascade on a busy machine answers 5-9 s after a question (measured here)
ASSUMED_REPLY_S = 1.0  # where a scheduled event's static placement assumes the system starts
EVENT_AFTER_ONSET_S = (1.5, 3.0)
AFTER_EVENT_S = 6.0  # silence after the event, for the system's reaction
BACKGROUND_RMS = 0.02  # about 10 dB below the user's voice
REFERENCE_NAME = "platform: equal mass in the monologue's inter-sentence pauses"

PAUSE_SENTENCES = (
    ("I was thinking about going to the", "market tomorrow morning before work."),
    ("Could you tell me how long it takes to", "boil an egg properly?"),
    ("My sister wants to visit us in", "the spring, maybe in April."),
    ("What I really need right now is", "a good book for the train."),
    ("The best way to learn a language is", "to speak it every day."),
    ("Can you remind me what the weather", "will be like this weekend?"),
)
QUESTIONS = (
    "What is the capital of Australia?",
    "How do I make a cup of green tea?",
    "Can you recommend a good movie for tonight?",
    "What should I pack for a weekend hiking trip?",
    "Why is the sky blue during the day?",
    "How many minutes does it take to cook pasta?",
)
# Twelve questions written after the predictive system's settings were chosen (on QUESTIONS); run
# again and again since to check settings: the choosing set's questions.
UNSEEN_QUESTIONS_FILE = Path(__file__).parent / "data" / "unseen_questions.txt"
# Written when the named sets were made, never run before: the test set's questions (examiner.test_set).
TEST_QUESTIONS_FILE = Path(__file__).parent / "data" / "test_questions.txt"
LONG_ANSWER_QUESTIONS = (
    "Can you tell me a short story about a lighthouse keeper?",
    "Could you explain how a bicycle works?",
    "Tell me about the history of the printing press.",
    "What are some good places to visit in Europe, and why?",
)
INTERRUPTIONS = (
    "Wait, sorry, can you say that more slowly?",
    "Hold on, can we talk about something else?",
    "Sorry to interrupt, but what about the price?",
    "Actually, never mind, tell me a joke instead.",
)
USER_BACKCHANNELS = ("mm-hmm", "yeah", "uh-huh", "okay", "right")
ASIDES = (
    "Honey, did you remember to feed the cat?",
    "I'll be there in five minutes, just wait.",
    "Can somebody turn the oven off, please?",
    "No, the blue one is in the other drawer.",
)
MONOLOGUE = (
    "So last summer I finally went on that trip I had been planning for years.",
    "We started in a small town by the sea.",
    "The first morning it rained so hard that we stayed inside all day.",
    "But the next day was beautiful, and we walked along the cliffs.",
    "My brother insisted on carrying the heaviest bag the whole way.",
    "In the evening we found a tiny restaurant with only four tables.",
    "The owner cooked everything himself and told us stories about the village.",
    "I think we stayed there for three hours.",
    "After that we took a train into the mountains.",
    "The views from the window were amazing.",
    "There was snow on the peaks even in July.",
    "We stayed in a wooden hut with no electricity.",
    "At night you could see thousands of stars.",
    "On the last day I lost my phone somewhere on the trail.",
    "Luckily a hiker found it and called my sister.",
    "Anyway, it was the best holiday I have had in a long time.",
    "I would really like to go back next year.",
    "Maybe this time we will rent bicycles instead of walking.",
)


@dataclass(frozen=True)
class Example:
    task: str
    index: int
    voice: Voice
    input: np.ndarray  # the user's side, 16 kHz mono
    annotations: dict  # FDB's file name -> its JSON
    facts: dict  # example.json: known times, texts, schedule
    parts: dict = field(default_factory=dict)  # file name -> audio the runner re-places


def _silence(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * SAMPLE_RATE)), dtype=np.float32)


def _seconds(samples: int) -> float:
    return round(samples / SAMPLE_RATE, 4)


class Timeline:
    """Audio laid out in order, each piece's start and end known to the sample."""

    def __init__(self):
        self.pieces: list[np.ndarray] = []
        self.n = 0

    def add(self, audio: np.ndarray) -> Segment:
        start = self.n
        self.pieces.append(audio)
        self.n += len(audio)
        return Segment(_seconds(start), _seconds(self.n))

    def pause(self, seconds: float):
        self.add(_silence(seconds))

    def audio(self) -> np.ndarray:
        return np.concatenate(self.pieces)


def cough(rng: random.Random, rms: float = 0.08) -> np.ndarray:
    """A cough-like burst: two bursts of band-passed noise (300-3000 Hz) with fast decays."""
    from scipy.signal import butter, sosfilt
    noise_rng = np.random.default_rng(rng.randrange(2**32))
    sos = butter(4, [300, 3000], btype="bandpass", fs=SAMPLE_RATE, output="sos")
    bursts = []
    for length_s, decay_s in ((0.28, 0.08), (0.22, 0.06)):
        n = int(length_s * SAMPLE_RATE)
        t = np.arange(n) / SAMPLE_RATE
        envelope = np.minimum(t / 0.01, 1.0) * np.exp(-t / decay_s)
        bursts += [sosfilt(sos, noise_rng.standard_normal(n)) * envelope, np.zeros(int(0.08 * SAMPLE_RATE))]
    burst = np.concatenate(bursts[:-1]).astype(np.float32)
    burst *= rms / np.sqrt(np.mean(burst.astype(np.float64) ** 2))
    loud = np.flatnonzero(np.abs(burst) > 0.01)
    return burst[loud[0]:loud[-1] + 1]


def pause_handling(rng: random.Random, voice: Voice, other: Voice, index: int) -> Example:
    first, second = rng.choice(PAUSE_SENTENCES)
    pause = round(rng.uniform(1.0, 2.0), 2)
    line = Timeline()
    line.pause(LEAD_S)
    s1, e1 = line.add(speak(first, voice))
    line.pause(pause)
    s2, e2 = line.add(speak(second, voice))
    line.pause(PAUSE_TAIL_S)
    facts = {"text": f"{first} {second}", "speech": [[s1, e1], [s2, e2]], "pause": [e1, s2], "turn_end": e2}
    return Example("pause_handling", index, voice, line.audio(),
                   {"pause.json": [{"text": "[PAUSE]", "timestamp": [e1, s2]}]}, facts)


def smooth_turn_taking(rng: random.Random, voice: Voice, other: Voice, index: int,
                       questions: tuple[str, ...] = QUESTIONS) -> Example:
    question = rng.choice(questions)
    line = Timeline()
    line.pause(LEAD_S)
    start, end = line.add(speak(question, voice))
    line.pause(ANSWER_ROOM_S)
    total = _seconds(line.n)
    facts = {"text": question, "speech": [[start, end]], "turn_end": end}
    return Example("smooth_turn_taking", index, voice, line.audio(),
                   {"turn_taking.json": [{"text": "[TURN-TAKING]", "timestamp": [end, total]}]}, facts)


def backchannel_reference(pauses, duration_s: float) -> list[float]:
    """Equal mass in each pause, spread evenly over the 0.2 s bins it covers."""
    histogram = np.zeros(int(duration_s / WINDOW_S) + 1)
    for start, end in pauses:
        bins = np.arange(int(start / WINDOW_S), int(end / WINDOW_S) + 1)
        histogram[bins] += 1.0 / len(bins)
    return (histogram / histogram.sum()).tolist()


def backchannel(rng: random.Random, voice: Voice, other: Voice, index: int) -> Example:
    target = rng.uniform(30.0, 60.0)
    line = Timeline()
    line.pause(LEAD_S)
    speech, pauses, texts = [], [], []
    order = list(MONOLOGUE)
    k = 0
    while _seconds(line.n) < target:
        if k == len(order):  # a long monologue at a slow rate: the sentences again, shuffled
            rng.shuffle(order)
            k = 0
        if speech:
            gap = round(rng.uniform(0.4, 1.2), 2)
            start = _seconds(line.n)
            line.pause(gap)
            pauses.append([start, _seconds(line.n)])
        speech.append(list(line.add(speak(order[k], voice))))
        texts.append(order[k])
        k += 1
    line.pause(1.0)
    duration = _seconds(line.n)
    facts = {"text": " ".join(texts), "speech": speech, "pauses": pauses, "turn_end": speech[-1][1]}
    reference = {"name": REFERENCE_NAME, "window_s": WINDOW_S, "histogram": backchannel_reference(pauses, duration)}
    return Example("backchannel", index, voice, line.audio(), {"backchannel_reference.json": reference}, facts)


def _scheduled(task: str, rng: random.Random, voice: Voice, context: str, event: np.ndarray, event_text: str,
               index: int) -> Example:
    """A question, then an event placed `after_system_onset_s` after the system's (assumed) onset."""
    after = round(rng.uniform(*EVENT_AFTER_ONSET_S), 2)
    question = speak(context, voice)
    line = Timeline()
    line.pause(LEAD_S)
    q_start, q_end = line.add(question)
    line.pause(ASSUMED_REPLY_S + after)
    e_start, e_end = line.add(event)
    line.pause(AFTER_EVENT_S)
    if task == "user_interruption":
        annotations = {"interrupt.json": [{"context": context, "interrupt": event_text, "timestamp": [e_start, e_end]}]}
    else:  # FDB v1.5's metadata.json
        annotations = {"metadata.json": {"context_text": context, "current_turn_text": event_text,
                                         "timestamps": [e_start, e_end]}}
    facts = {"text": context, "speech": [[q_start, q_end]], "turn_end": q_end, "event": [e_start, e_end],
             "event_text": event_text,
             "schedule": {"context": "context.wav", "event": "event.wav", "after_system_onset_s": after,
                          "assumed_system_onset_s": round(q_end + ASSUMED_REPLY_S, 4),
                          "context_start_s": q_start}}
    parts = {"context.wav": question, "event.wav": event}
    return Example(task, index, voice, line.audio(), annotations, facts, parts)


def user_interruption(rng, voice, other, index):
    text = rng.choice(INTERRUPTIONS)
    return _scheduled("user_interruption", rng, voice, rng.choice(LONG_ANSWER_QUESTIONS), speak(text, voice), text,
                      index)


def user_backchannel(rng, voice, other, index):
    text = rng.choice(USER_BACKCHANNELS)
    return _scheduled("user_backchannel", rng, voice, rng.choice(LONG_ANSWER_QUESTIONS), speak(text, voice), text,
                      index)


def background_speech(rng, voice, other, index):
    text = rng.choice(ASIDES)
    return _scheduled("background_speech", rng, voice, rng.choice(LONG_ANSWER_QUESTIONS),
                      speak(text, other, BACKGROUND_RMS), text, index)


def noise_burst(rng, voice, other, index):
    return _scheduled("noise_burst", rng, voice, rng.choice(LONG_ANSWER_QUESTIONS), cough(rng), "[COUGH]", index)


MAKERS = {"pause_handling": pause_handling, "smooth_turn_taking": smooth_turn_taking, "backchannel": backchannel,
          "user_interruption": user_interruption, "user_backchannel": user_backchannel,
          "background_speech": background_speech, "noise_burst": noise_burst}


FITTING = VOICE_SETS["fitting"]


def voices_for(index: int, seed: int, voices: VoiceSet = FITTING) -> tuple[Voice, Voice]:
    """The example's voice (engines alternate, speakers and rates cycle) and a voice of the other engine."""
    piper = [v for v in voices.voices if v.engine == "piper"]
    espeak = [v for v in voices.voices if v.engine != "piper"]
    engines = (piper, espeak) if (index + seed) % 2 == 0 else (espeak, piper)
    voice = engines[0][(index // 2 + seed) % len(engines[0])]
    other = engines[1][(index // 2 + seed + 1) % len(engines[1])]
    return voice, other


def make_example(task: str, index: int, seed: int, questions: tuple[str, ...] | None = None,
                 voices: VoiceSet = FITTING) -> Example:
    rng = random.Random(f"{seed}:{task}:{index}")  # a string seed: the same stream in every process
    voice, other = voices_for(index, seed, voices)
    if task == "smooth_turn_taking" and questions:
        example = smooth_turn_taking(rng, voice, other, index, questions)
    else:
        example = MAKERS[task](rng, voice, other, index)
    if not voices.in_room:
        return example
    # the noise's own seed: the clean set's examples stay the same, the noisy ones are them in the room
    room_seed = random.Random(f"{seed}:{task}:{index}:room").randrange(2**32)
    return replace(example, input=in_room(example.input, voices, room_seed),
                   parts={name: in_room(audio, voices, room_seed + k + 1)
                          for k, (name, audio) in enumerate(example.parts.items())})


QUESTION_SETS = {"fitting": None, "choosing": UNSEEN_QUESTIONS_FILE, "test": TEST_QUESTIONS_FILE}  # None: QUESTIONS


def question_set(name_or_file: str) -> tuple[str, tuple[str, ...]]:
    """(the set's name, its questions) of a named question set (fitting, choosing, test) or a file."""
    if name_or_file in QUESTION_SETS:
        path = QUESTION_SETS[name_or_file]
        return name_or_file, (read_questions(path) if path else QUESTIONS)
    return str(name_or_file), read_questions(name_or_file)


def read_questions(path) -> tuple[str, ...]:
    """The questions of a text file, one a line (blank lines and '#' comments left out)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"--questions {path}: cannot read it ({err.__class__.__name__})") from None
    questions = tuple(line.strip() for line in lines if line.strip() and not line.strip().startswith("#"))
    if not questions:
        raise ValueError(f"--questions {path}: no question in it (one a line)")
    return questions


def write_example(example: Example, folder: Path, seed: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(folder / "input.wav"), example.input, SAMPLE_RATE, subtype="PCM_16")
    for name, audio in example.parts.items():
        soundfile.write(str(folder / name), audio, SAMPLE_RATE, subtype="PCM_16")
    for name, data in example.annotations.items():
        (folder / name).write_text(json.dumps(data, indent=1))
    facts = {"task": example.task, "index": example.index, "seed": seed, "voice": example.voice.label,
             "duration_s": _seconds(len(example.input)), **example.facts}
    (folder / "example.json").write_text(json.dumps(facts, indent=1))
    return folder


def parse_tasks(text: str) -> tuple[str, ...]:
    if text == "all":
        return TASK_NAMES
    tasks = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [t for t in tasks if t not in TASK_NAMES]
    if unknown or not tasks:
        raise ValueError(f"unknown task(s) {', '.join(unknown) or '(none)'}: 'all' or some of {', '.join(TASK_NAMES)}")
    return tasks


def make_task_set(out, tasks=TASK_NAMES, per_task: int = 6, seed: int = 0, progress: bool = True,
                  questions: tuple[str, ...] | None = None, voices: VoiceSet = FITTING,
                  question_set_name: str | None = None) -> dict:
    """Write `per_task` examples of each task under `out`; the same seed writes the same set.
    `questions`: the smooth turn-taking task's questions instead of the examiner's own six (a
    system's settings chosen on those six are flattered by them: `UNSEEN_QUESTIONS_FILE`).
    `voices`: who speaks them (`examiner.voices.VOICE_SETS`; Piper voices with sampling noise
    sound a little different each time the set is made, at the same times)."""
    if per_task < 1:
        raise ValueError("--per-task must be at least 1")
    out = Path(out)
    jobs = [(task, k) for task in tasks for k in range(per_task)]
    for task, k in tqdm(jobs, desc="task set", unit="example", disable=not progress):
        write_example(make_example(task, k, seed, questions, voices), out / task / str(k), seed)
    manifest = {"seed": seed, "tasks": list(tasks), "per_task": per_task, "sample_rate": SAMPLE_RATE,
                "voice_set": voices.name, "voices": [v.label for v in voices.voices],
                "noise_below_db": voices.noise_below_db, "reverberant": voices.reverberant,
                "examples": len(jobs), "questions": list(questions or QUESTIONS),
                "question_set": question_set_name or ("fitting" if not questions else "given")}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return {"out": str(out), **manifest}
