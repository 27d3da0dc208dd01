"""A demo study for the researcher area, made from packaged code only (no corpus, no models).

    python -m analysis demo [--sessions-per-system 6] [--seconds 90] [--no-audio]

Everything it writes is SIMULATED and labelled so: participants and annotators are called
"demo-...", recordings are synthetic harmonic tones (no speech) where a simulated voice-activity
track says someone speaks, and judgments come from simulated annotators. It fills the app's
demo study (`storage.demo`) with:

- sessions of a simulated participant (channel 0) with each demo system (channel 1): a
  turn-taking simulator with a per-system profile (the cascaded system answers after long gaps
  and never overlaps; the cascade with timers answers fast, overlaps, backchannels and interrupts);
  each session's voice activity and words are stored as its "voice-activity" analysis result;
- a perturbation benchmark (`annotation.perturbations.build_pairs`) cut from simulated
  human-human conversations, plus artifact-control and attention-check pairs;
- judgments of simulated annotators: most careful, a few careless (random choices, fast,
  failing attention checks), K per pair;
- the simulated participants' questionnaire answers after each session and after their last,
  from each session's measured timing plus noise (analysis.questionnaire_demo).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile
from sqlmodel import Session, select

from analysis.questionnaire_demo import simulated_calls, store_demo_answers
from annotation.perturbations import build_pairs
from storage.demo import DEMO_STUDY, DEMO_SYSTEMS, DEMO_TOPICS, demo_system, seed_demo_study
from storage.files import store_file
from storage.models import (
    Annotator,
    ClipPair,
    ConversationSession,
    DialogueClip,
    DialogueSystem,
    Judgment,
    Participant,
)
from storage.records import (
    add_recording,
    end_session,
    get_or_create_participant,
    get_or_create_study,
    hash_token,
    record_judgment,
    save_analysis_result,
    start_session,
)
from turntaking.activity import Conversation, Word, conversation_to_json

DEMO_LABEL = ("SIMULATED demo data (analysis.demo_study): simulated participants and annotators (demo-...), "
              "synthetic recordings and simulated judgments")
SAMPLE_RATE = 16000
PARTICIPANT_CHANNEL, SYSTEM_CHANNEL = 0, 1
# Ordinary words for simulated speech; none is in the backchannel list.
CONTENT_WORDS = ("so", "the", "weather", "in", "new", "york", "is", "nice", "we", "could", "walk", "to",
                 "a", "park", "then", "maybe", "find", "some", "food", "near", "there", "later")
BACKCHANNEL_WORDS = ("yeah", "mhm", "uh-huh", "right")
WORDS_PER_SECOND = 3.3


@dataclass(frozen=True)
class SpeakerProfile:
    """How one simulated speaker takes turns (all times in seconds)."""

    response_offset: tuple[float, float]  # mean, sd of (own start - other's end); < 0 is overlap
    min_offset: float  # earliest start relative to the other's end
    ipu_s: tuple[float, float]  # uniform range of an IPU's length
    ipus_per_turn: tuple[int, int]
    pause_s: tuple[float, float]  # pauses between a turn's IPUs
    backchannel_prob: float  # per long IPU of the other speaker
    interrupt_prob: float  # per turn change: start in the middle of the other's last IPU


HUMAN = SpeakerProfile((0.25, 0.35), -0.6, (0.8, 3.5), (1, 3), (0.3, 0.8), 0.25, 0.05)
# Human-human sources of the perturbation benchmark: long enough IPUs for excessive backchannels.
HUMAN_MONOLOGUE = SpeakerProfile((0.25, 0.35), -0.6, (1.0, 6.0), (1, 3), (0.3, 0.8), 0.3, 0.05)
SYSTEM_PROFILES = {
    # A non-streaming cascade: endpointing, ASR, LLM and TTS one after another (1.5-2.5 s is usual).
    # At 1.4 +- 0.3 s its 6 demo sessions scored above the cascade-backchannel one's in 2-3 of 10 seeds.
    "cascaded": SpeakerProfile((1.8, 0.4), 0.9, (2.0, 5.0), (1, 2), (0.3, 0.6), 0.0, 0.0),
    "cascade-backchannel": SpeakerProfile((0.1, 0.5), -1.0, (1.0, 4.0), (1, 3), (0.3, 0.8), 0.12, 0.12),
    # The predictive system as measured in scripted calls (benchmarks/bench_cascade_latency.py
    # --system predictive: reply p50 about 1.1 s, p90 1.5 s after the caller stops, never sooner
    # than its 0.12 s minimum gap; backchannels about 0.1/s in the examiner; it does not barge in).
    "predictive": SpeakerProfile((1.1, 0.3), 0.12, (1.5, 4.5), (1, 2), (0.3, 0.6), 0.2, 0.0),
}


def _words_for(segment, rng, backchannel: bool = False) -> list[Word]:
    start, end = segment
    if backchannel:
        return [Word(start, end, str(rng.choice(BACKCHANNEL_WORDS)))]
    n = max(1, round((end - start) * WORDS_PER_SECOND))
    edges = np.linspace(start, end, n + 1)
    return [Word(float(a), float(b), str(rng.choice(CONTENT_WORDS))) for a, b in zip(edges[:-1], edges[1:])]


def simulate_conversation(profiles: tuple[SpeakerProfile, SpeakerProfile], duration: float, rng,
                          speakers=("participant", "system"), source: str = "") -> Conversation:
    """Alternating turns of two simulated speakers, with backchannels, overlaps and interruptions."""
    segments: list[list[tuple[float, float]]] = [[], []]
    words: list[list[Word]] = [[], []]
    speaker, t = 0, 0.5
    last_end = [0.0, 0.0]
    while True:
        profile = profiles[speaker]
        for i in range(int(rng.integers(profiles[speaker].ipus_per_turn[0], profile.ipus_per_turn[1] + 1))):
            start = max(t, last_end[speaker] + 0.2)
            end = start + float(rng.uniform(*profile.ipu_s))
            if end > duration - 0.3:
                return Conversation(duration, (segments[0], segments[1]), (words[0], words[1]), speakers, source)
            segments[speaker].append((start, end))
            words[speaker].extend(_words_for((start, end), rng))
            last_end[speaker] = end
            listener = 1 - speaker
            if end - start > 1.5 and rng.random() < profiles[listener].backchannel_prob:
                bc_start = start + (end - start) * float(rng.uniform(0.45, 0.7))
                if bc_start > last_end[listener] + 0.3:
                    bc = (bc_start, bc_start + float(rng.uniform(0.25, 0.45)))
                    segments[listener].append(bc)
                    words[listener].extend(_words_for(bc, rng, backchannel=True))
                    last_end[listener] = bc[1]
            t = end + float(rng.uniform(*profile.pause_s))
        # Turn change: the other speaker answers after a gap, in overlap, or interrupts.
        listener = 1 - speaker
        own_start, own_end = segments[speaker][-1]
        offset = max(profiles[listener].min_offset, float(rng.normal(*profiles[listener].response_offset)))
        if rng.random() < profiles[listener].interrupt_prob:
            offset = -(own_end - own_start) * float(rng.uniform(0.3, 0.6))
        t = own_end + offset
        speaker = listener


def synthetic_voice(conv: Conversation, sample_rate: int = SAMPLE_RATE, seed: int = 0) -> np.ndarray:
    """(samples, 2) float32: a harmonic tone with a syllable-like envelope wherever a channel is
    active, over faint noise. Clearly not speech; it makes the demo's recordings playable."""
    rng = np.random.default_rng(seed)
    n = int(round(conv.duration * sample_rate))
    out = (rng.standard_normal((n, 2)) * 0.002).astype(np.float32)
    for channel, f0 in ((0, 125.0), (1, 210.0)):
        for start, end in conv.activity[channel]:
            a, b = int(start * sample_rate), min(int(end * sample_rate), n)
            t = np.arange(b - a) / sample_rate
            pitch = f0 * (1 + 0.08 * np.sin(2 * np.pi * 0.6 * t + rng.uniform(0, 6)))
            phase = 2 * np.pi * np.cumsum(pitch) / sample_rate
            tone = sum(np.sin(k * phase) / k for k in range(1, 7))
            envelope = 0.5 + 0.5 * np.sin(np.pi * 4.2 * t) ** 2
            ramp = np.minimum(1.0, np.minimum(t, t[-1] - t) / 0.02) if len(t) else t
            out[a:b, channel] += (0.12 * tone * envelope * ramp).astype(np.float32)
    return out


def _store_recording(session, conversation_row, conv, data_root, seed: int) -> None:
    tmp = Path(data_root) / "tmp" / f"demo-session-{conversation_row.id}.flac"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(tmp), synthetic_voice(conv, seed=seed), SAMPLE_RATE, subtype="PCM_16")
    relpath, _ = store_file(tmp, f"demo/sessions/session-{conversation_row.id}.flac", data_root)
    tmp.unlink()
    add_recording(session, relpath, kind="two-channel", data_root=data_root, conversation=conversation_row,
                  system_channel=SYSTEM_CHANNEL)


def _voice_activity_result(conv: Conversation) -> dict:
    return {**conversation_to_json(conv), "method": "simulated (demo)", "label": DEMO_LABEL}


def seed_sessions(session: Session, study, data_root, sessions_per_system: int, seconds: float, rng,
                  audio: bool = True) -> int:
    """Simulated participants talking with each demo system; returns the number of sessions."""

    topics = list((study.config or {}).get("topics") or DEMO_TOPICS)
    count = 0
    for p in range(sessions_per_system):
        participant = get_or_create_participant(session, study, external_id=f"demo-participant-{p + 1:02d}")
        for name, kind, config in DEMO_SYSTEMS:
            system = demo_system(session, study, name, kind, config)
            conv = simulate_conversation((HUMAN, SYSTEM_PROFILES.get(name, HUMAN)), seconds, rng,
                                         source=f"demo {name} session {p + 1}")
            row = start_session(session, participant, system, topics[p % len(topics)])
            end_session(session, row, "complete")
            save_analysis_result(session, "voice-activity", f"session:{row.id}", {}, _voice_activity_result(conv), study)
            if audio:
                _store_recording(session, row, conv, data_root, seed=int(rng.integers(1 << 30)))
            count += 1
    return count


def _clip(session, study, conv: Conversation) -> DialogueClip:
    clip = DialogueClip(study_id=study.id, activity=conversation_to_json(conv), start_s=0.0,
                        end_s=conv.duration, duration_s=conv.duration)
    session.add(clip)
    session.flush()
    return clip


def _pair(session, study, pair_id, kind, natural, perturbed, edit=None, **flags) -> ClipPair:
    pair = ClipPair(study_id=study.id, pair_id=pair_id, perturbation=kind, natural_clip_id=_clip(session, study, natural).id,
                    perturbed_clip_id=_clip(session, study, perturbed).id, edit=edit or {}, **flags)
    session.add(pair)
    session.flush()
    return pair


def seed_pairs(session: Session, study, per_type: int, rng, sources: int = 8) -> dict[str, list[ClipPair]]:
    """The perturbation benchmark of the demo, cut from `sources` simulated human-human conversations."""

    sources = [simulate_conversation((HUMAN_MONOLOGUE, HUMAN_MONOLOGUE), 150.0, rng, speakers=("A", "B"),
                                     source=f"demo human-human {i + 1}") for i in range(sources)]
    built = build_pairs(sources, per_type=per_type, seed=int(rng.integers(1 << 30)))
    formal = [_pair(session, study, f"demo-{p.pair_id}", p.type, p.natural, p.perturbed,
                    {"edits": p.edits, "details": p.details, "source": p.source}) for p in built]
    controls = [_pair(session, study, f"demo-control-{i + 1}", "artifact_control", p.natural, p.natural,
                      is_artifact_control=True) for i, p in enumerate(built[:4])]
    attention = []
    for i, p in enumerate(built[-2:]):
        silent_b = Conversation(p.natural.duration, (p.natural.activity[0], []), None, p.natural.speakers)
        attention.append(_pair(session, study, f"demo-attention-{i + 1}", "attention_check", p.natural, silent_b,
                               is_attention_check=True))
    return {"formal": formal, "controls": controls, "attention": attention}


def _rating(value: float) -> float:
    return float(min(5, max(1, round(value))))


def seed_judgments(session: Session, study, pairs: dict[str, list[ClipPair]], annotators: int, careless: int,
                   per_pair: int, rng) -> int:
    """Simulated annotators' judgments: K per formal and control pair, every attention check."""
    people = []
    for a in range(annotators):
        external = f"demo-annotator-{a + 1:02d}"
        row = session.exec(select(Annotator).where(Annotator.study_id == study.id,
                                                   Annotator.external_id == external)).first()
        if row is None:
            row = Annotator(study_id=study.id, token_hash=hash_token(f"demo-token-{study.id}-{external}"),
                            external_id=external)
            session.add(row)
            session.flush()
        people.append((row, a >= annotators - careless))
    per_clip_artifacts = hasattr(Judgment, "artifact_rating_a")
    count = 0

    def judge(annotator, is_careless, pair, p_natural, trial):
        nonlocal count
        natural_side = str(rng.choice(["A", "B"]))
        other = "B" if natural_side == "A" else "A"
        chose_natural = rng.random() < (0.5 if is_careless else p_natural)
        if is_careless:
            r_nat, r_pert = _rating(rng.uniform(0.5, 5.5)), _rating(rng.uniform(0.5, 5.5))
        else:
            top = _rating(rng.normal(3.9, 0.6))
            low = _rating(top - rng.choice([0, 1, 1, 2]))
            r_nat, r_pert = (top, low) if chose_natural else (low, top)
        ratings = {natural_side: r_nat, other: r_pert}
        values = dict(annotator_id=annotator.id, clip_pair_id=pair.id, natural_side=natural_side,
                      choice=natural_side if chose_natural else other, rating_a=ratings["A"], rating_b=ratings["B"],
                      response_s=float(rng.lognormal(math.log(7 if is_careless else 22), 0.3)),
                      plays_a=1 if is_careless else 2, plays_b=1 if is_careless else 2)
        if trial == "control" and per_clip_artifacts:
            art = {natural_side: _rating(rng.normal(2.0, 0.8)), other: _rating(rng.normal(2.3, 0.8))}
            values.update(artifact_rating_a=art["A"], artifact_rating_b=art["B"])
        _, new = record_judgment(session, Judgment(**values))
        count += int(new)

    order = 0
    for kind in ("formal", "controls"):
        for pair in pairs[kind]:
            for j in range(per_pair):
                annotator, is_careless = people[(order + j) % len(people)]
                judge(annotator, is_careless, pair, 0.8 if kind == "formal" else 0.5, kind.rstrip("s"))
            order += 1
    for pair in pairs["attention"]:
        for annotator, is_careless in people:
            judge(annotator, is_careless, pair, 0.97, "attention")
    return count


def seed_demo_analysis(session: Session, data_root, sessions_per_system: int = 6, seconds: float = 90.0,
                       per_type: int = 6, annotators: int = 10, careless: int = 2, per_pair: int = 3,
                       seed: int = 0, audio: bool = True, study_name: str | None = None) -> dict:
    """Seed the demo study (or `study_name`, created if needed) with simulated data, once.

    A study that already has sessions is left alone (returns {"skipped": ...})."""

    study = seed_demo_study(session) if study_name in (None, DEMO_STUDY) else get_or_create_study(
        session, study_name, title=f"Demo ({study_name}): simulated data")
    existing = session.exec(select(ConversationSession.id).join(DialogueSystem).where(
        DialogueSystem.study_id == study.id)).first()
    if existing is not None:
        # e.g. the real demo of `python -m demo build`: the simulated one goes into a study of its own
        return {"study": study.name, "skipped": "the study already has sessions (seed the simulated data into "
                                                "another study: --study NAME)"}
    study.config = {**(study.config or {}), "demo_data": DEMO_LABEL}
    session.add(study)
    rng = np.random.default_rng(seed)
    n_sessions = seed_sessions(session, study, data_root, sessions_per_system, seconds, rng, audio=audio)
    n_answers = store_demo_answers(session, study, simulated_calls(session, study.id), seed=seed)
    pairs = seed_pairs(session, study, per_type, rng)
    n_judgments = seed_judgments(session, study, pairs, annotators, careless, per_pair, rng)
    return {"study": study.name, "sessions": n_sessions, "questionnaire_responses": n_answers,
            "pairs": {k: len(v) for k, v in pairs.items()},
            "judgments": n_judgments, "participants": len(session.exec(
                select(Participant).where(Participant.study_id == study.id)).all())}
