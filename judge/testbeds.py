"""Audio foundation-model test beds of Talking Turns section 5 / A.5: do audio FMs *understand* and
*predict* turn-taking events? Built from a two-channel corpus with chunk labels (judge.labels).

Understand (Table 3): for event X in {T, BC, I}, a clip of at most 10 s is positive when some 40 ms
chunk in it has label X and negative when none has; the FM answers a Yes/No question.
Predict (Table 4): clips end right before chunk i, with up to W = 30 s of context (the judge's
window), at the instances of the judge metrics: turn change = (a) speak_up (T vs C after a
pause of the current speaker), backchannel = (b) (BC vs not), interruption = (c) (I vs C while
the other speaks alone), floor-taking interruption = (e) handle_interruption (T vs C after 3
chunks of overlap). Each speaker of a human-human conversation takes the "system" role in turn.
Each bed is balanced: `per_class` positives and as many negatives (750 + 750 in the paper),
sampled with a fixed seed; when a class is short, both classes get the smaller count.

Prompts are the paper's best ones (Tables 9-11) as templates; answers are parsed into the
positive / negative option, or None when neither can be read (counted as wrong). Accuracy is
reported with a Wilson interval next to the random baseline (50% on balanced beds) and, for the
predict beds, the supervised topline: the judge's decision J^1..J^4 (Eq. 2-5) at the same chunk.

Adapters: `name` and `answer(audio (channels, n) float32 at 16 kHz, prompt) -> str`.
`OpenAIChatAdapter` talks to any OpenAI-compatible /chat/completions endpoint that accepts
`input_audio` parts (OpenAI audio models, vLLM serving Qwen2-Audio, ...).
"""

from __future__ import annotations

import base64
import io
import json
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from turntaking.intervals import wilson_interval
from turntaking.jsonfiles import JsonFileError, read_jsonl
from judge.labels import BC, CHUNK_S, I, T, chunk_states
from judge.metrics import InstanceParams, judge_scores, select_instances

UNDERSTAND_MAX_S = 10.0
PREDICT_CONTEXT_S = 30.0
SAMPLE_RATE = 16000

UNDERSTAND_EVENTS = {"turn_change": T, "backchannel": BC, "interruption": I}
PREDICT_METRICS = {"turn_change": "speak_up", "backchannel": "backchannel", "interruption": "interrupt",
                   "floor_taking_interruption": "handle_interruption"}
METRIC_THRESHOLD = {"speak_up": "speak_up", "backchannel": "backchannel", "interrupt": "interrupt",
                    "handle_interruption": "handle_interruption"}

_YES_NO = " Briefly explain your answer. You must reply with (a) Yes or (b) No."
PROMPTS = {  # (bed, event) -> (template, option letter meaning "positive")
    ("understand", "turn_change"): ("Does the given audio has a turn change anywhere?" + _YES_NO, "a"),
    ("understand", "backchannel"): (
        "Backchannels are brief words or sounds (like 'um,' 'right,' or 'okay') that a listener makes to show "
        "they're paying attention. Do the 2 speakers backchannel anywhere in the provided audio?" + _YES_NO, "a"),
    ("understand", "interruption"): ("Do the 2 speakers interrupt each other anywhere in the provided audio?"
                                     + _YES_NO, "a"),
    ("predict", "turn_change"): (
        "You are provided the audio of a 2 speaker conversation. The current speaker takes pause at the end of "
        "current audio. Given the provided audio, do you think that after the pause, the current speaker will "
        "(A) continue talking or (B) the second speaker will speak up. Output only A or B, nothing else. Among A "
        "or B, the answer is", "b"),
    ("predict", "backchannel"): (
        "You are given the audio of a two-speaker conversation. Based on the provided audio, do you predict that "
        "either speaker will produce a backchannel (e.g., a short acknowledgment or response) immediately after "
        "the end of the audio? Please explain your reasoning briefly. You must answer (a) Yes or (b) No.", "a"),
    ("predict", "interruption"): (
        "During spontaneous human conversation, interruptions occur frequently and often correspond to breaks in "
        "the information flow between conversation partners. You are analyzing a brief audio clip from a "
        "two-person conversation. The clip ends abruptly while the current speaker is still in the middle of a "
        "sentence. Based ONLY on the provided audio, is it more likely that: (a) The other speaker will "
        "interrupt BEFORE the current speaker finishes their sentence? (b) The other speaker will let the "
        "current speaker to continue speaker? Justify your choice, considering the factors that might lead to "
        "an interruption or encourage someone to wait their turn.", "a"),
    ("predict", "floor_taking_interruption"): (
        "You are examining a short audio clip from a conversation between two people. The audio ends suddenly "
        "RIGHT as the second speaker begins to talk, overlapping with the first speaker. It's impossible to "
        "tell from this brief excerpt if the first speaker was about to pause, was having trouble finding a "
        "word, or would have continued speaking. Based ONLY on the provided audio, is it more likely that: (A) "
        "The second speaker's overlap is a successful interruption, and they will take over the conversation? "
        "(B) The second speaker's overlap is a mistimed attempt to start their turn, and the first speaker will "
        "continue, forcing the second speaker to wait for a natural break or pause before speaking? Output only "
        "A or B, nothing else. Among A or B, the answer is", "a"),
}


class TestbedError(JsonFileError):
    """Bad test-bed input; the message names the problem."""

    __test__ = False  # not a pytest test class despite its name


@dataclass
class Item:
    id: str
    bed: str  # "understand" or "predict"
    event: str
    conversation: str
    start: float
    end: float
    label: bool  # positive: the event happens (understand) / will happen (predict)
    chunk: int | None = None  # predict: the chunk whose label is predicted
    system: int | None = None  # predict: the channel in the system role

    def as_dict(self) -> dict:
        return asdict(self)


def understand_candidates(conv_id: str, labels: np.ndarray, duration: float, window_s=UNDERSTAND_MAX_S,
                          stride_s: float = 5.0) -> list[Item]:
    """Every window of `window_s` at `stride_s` (the last one may be shorter), for every event."""
    per_chunk = int(round(window_s / CHUNK_S))
    out = []
    for first in range(0, max(1, len(labels) - per_chunk // 2), int(round(stride_s / CHUNK_S))):
        window = labels[first: first + per_chunk]
        start, end = first * CHUNK_S, min(duration, (first + len(window)) * CHUNK_S)
        for event, label in UNDERSTAND_EVENTS.items():
            out.append(Item(f"{conv_id}:understand:{event}:{first}", "understand", event, conv_id,
                            round(start, 3), round(end, 3), bool((window == label).any())))
    return out


def predict_candidates(conv_id: str, states, context_s: float = PREDICT_CONTEXT_S,
                       params: InstanceParams = InstanceParams()) -> list[Item]:
    out = []
    for system in (0, 1):
        found = select_instances(states.labels, states.turn_owner, states.speaking, system, params)
        for event, metric in PREDICT_METRICS.items():
            chunks, positive = found[metric]
            for i, pos in zip(chunks.tolist(), positive.tolist()):
                end = i * CHUNK_S
                out.append(Item(f"{conv_id}:predict:{event}:{system}:{i}", "predict", event, conv_id,
                                round(max(0.0, end - context_s), 3), round(end, 3), bool(pos), i, system))
    return out


def balanced_sample(items: list[Item], per_class: int, seed: int) -> list[Item]:
    """Per (bed, event): min(per_class, positives, negatives) of each class, randomly chosen."""
    rng = random.Random(seed)
    groups: dict[tuple, list[Item]] = {}
    for item in items:
        groups.setdefault((item.bed, item.event), []).append(item)
    out = []
    for key in sorted(groups):
        pos = [x for x in groups[key] if x.label]
        neg = [x for x in groups[key] if not x.label]
        n = min(per_class, len(pos), len(neg))
        out += rng.sample(pos, n) + rng.sample(neg, n)
    return out


def build(conversations, per_class: int = 750, seed: int = 0, stride_s: float = 5.0) -> list[Item]:
    """Both beds from Conversations (with words, for backchannels)."""
    candidates = []
    for conv in conversations:
        conv_id = conv.source or f"conversation{len(candidates)}"
        states = chunk_states(conv)
        candidates += understand_candidates(conv_id, states.labels, conv.duration, stride_s=stride_s)
        candidates += predict_candidates(conv_id, states)
    return balanced_sample(candidates, per_class, seed)


def write_items(path, items: list[Item]) -> None:
    Path(path).write_text("".join(json.dumps(x.as_dict()) + "\n" for x in items))


def read_items(path) -> list[Item]:
    try:
        return [Item(**item) for item in read_jsonl(path, "test-bed file", TestbedError)]
    except TypeError as exc:
        raise TestbedError(f"{path}: not a test-bed JSONL file ({exc})") from None


# ---------------------------------------------------------------------------------------------
# answers


def prompt_for(item: Item) -> str:
    return PROMPTS[(item.bed, item.event)][0]


def is_yes_no(bed: str, event: str) -> bool:
    return "(a) Yes" in PROMPTS[(bed, event)][0]


def parse_answer(text: str, positive_option: str, yes_no: bool = True) -> bool | None:
    """True (positive option), False (the other) or None when the answer picks neither clearly.

    Looks for "(a)"/"(b)" first, then (Yes/No prompts only) the first "yes"/"no", then a lone
    leading letter ("B", "A.", "b)")."""
    t = text.strip().lower()
    found = re.search(r"\(([ab])\)", t)
    if found:
        return found.group(1) == positive_option
    if yes_no:
        found = re.search(r"\b(yes|no)\b", t)
        if found:
            return (found.group(1) == "yes") == (positive_option == "a")
    found = re.match(r"([ab])\s*(?:[).:,]|$)", t)
    return None if not found else found.group(1) == positive_option


def wav_base64(audio: np.ndarray, sample_rate: int = SAMPLE_RATE) -> str:
    import soundfile

    buf = io.BytesIO()
    soundfile.write(buf, np.asarray(audio, dtype=np.float32).T, sample_rate, format="WAV", subtype="PCM_16")
    return base64.b64encode(buf.getvalue()).decode()


@dataclass
class OpenAIChatAdapter:
    """Any OpenAI-compatible endpoint: POST {base_url}/chat/completions with an input_audio part."""

    base_url: str
    model: str
    api_key: str | None = None
    channels: str = "mix"  # "mix": one mono track (most audio FMs); "stereo": one speaker per channel
    timeout_s: float = 120.0
    max_tokens: int = 256

    @property
    def name(self) -> str:
        return f"openai-compatible:{self.model}"

    def answer(self, audio: np.ndarray, prompt: str) -> str:
        import httpx

        audio = np.atleast_2d(audio)
        if self.channels == "mix":
            audio = audio.mean(axis=0, keepdims=True)
        body = {"model": self.model, "temperature": 0, "max_tokens": self.max_tokens, "messages": [{
            "role": "user", "content": [
                {"type": "text", "text": prompt},
                {"type": "input_audio", "input_audio": {"data": wav_base64(audio), "format": "wav"}},
            ]}]}
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            r = httpx.post(self.base_url.rstrip("/") + "/chat/completions", json=body, headers=headers,
                           timeout=self.timeout_s)
            r.raise_for_status()
            return r.json()["choices"][0]["message"]["content"] or ""
        except httpx.HTTPError as exc:
            raise TestbedError(f"{self.base_url}: request failed ({exc})") from None
        except (KeyError, IndexError, ValueError):
            raise TestbedError(f"{self.base_url}: not an OpenAI chat completion response") from None


@dataclass
class RandomAdapter:
    """The random baseline: picks (a) or (b) with equal probability."""

    seed: int = 0
    name: str = "random"

    def __post_init__(self):
        self._rng = random.Random(self.seed)

    def answer(self, audio, prompt: str) -> str:
        return self._rng.choice(["(a)", "(b)"])


def clip_audio(recording: np.ndarray, item: Item, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    return recording[:, int(round(item.start * sample_rate)): int(round(item.end * sample_rate))]


def accuracy_entry(correct: list[bool]) -> dict:
    n, k = len(correct), int(sum(correct))
    return {"n": n, "accuracy": k / n if n else None, "wilson_95": list(wilson_interval(k, n)) if n else None}


def evaluate(items: list[Item], adapter, load_recording, log=None) -> dict:
    """Accuracy per (bed, event); `load_recording(conversation id)` -> (channels, n) at 16 kHz."""
    cache: dict[str, np.ndarray] = {}
    results, answers = {}, []
    for item in sorted(items, key=lambda x: x.conversation):  # one recording in memory at a time
        if item.conversation not in cache:
            cache.clear()
            cache[item.conversation] = load_recording(item.conversation)
        text = adapter.answer(clip_audio(cache[item.conversation], item), prompt_for(item))
        picked = parse_answer(text, PROMPTS[(item.bed, item.event)][1], is_yes_no(item.bed, item.event))
        answers.append({"id": item.id, "answer": text, "parsed": picked, "label": item.label})
        results.setdefault(f"{item.bed}/{item.event}", []).append((picked == item.label, picked is None))
        if log:
            log(f"{item.id}: {picked} (label {item.label})")
    table = {}
    for key, rows in results.items():
        table[key] = {**accuracy_entry([c for c, _ in rows]), "unparsed": sum(u for _, u in rows),
                      "random_baseline": 0.5}
    return {"adapter": getattr(adapter, "name", type(adapter).__name__), "beds": table, "answers": answers}


def topline(items: list[Item], conversations: dict, model, thresholds) -> dict:
    """The supervised judge on the predict items: J^1..J^4 at the item's chunk vs the label."""
    from judge.model import predict

    results: dict[str, list[bool]] = {}
    probs_of: dict[str, np.ndarray] = {}
    for item in items:
        if item.bed != "predict":
            continue
        if item.conversation not in probs_of:
            if item.conversation not in conversations:
                raise TestbedError(f"conversation {item.conversation} of item {item.id} not loaded")
            probs_of[item.conversation] = predict(model, conversations[item.conversation]).label_probs
        metric = PREDICT_METRICS[item.event]
        score = judge_scores(probs_of[item.conversation], metric, np.array([item.chunk]))[0]
        judged = bool(score > getattr(thresholds, METRIC_THRESHOLD[metric]))
        results.setdefault(f"predict/{item.event}", []).append(judged == item.label)
    return {key: {**accuracy_entry(rows), "random_baseline": 0.5} for key, rows in results.items()}


def describe(items: list[Item]) -> dict:
    counts: dict[str, dict] = {}
    for x in items:
        c = counts.setdefault(f"{x.bed}/{x.event}", {"positive": 0, "negative": 0, "max_clip_s": 0.0})
        c["positive" if x.label else "negative"] += 1
        c["max_clip_s"] = max(c["max_clip_s"], round(x.end - x.start, 3))
    return counts

