"""Build the real demo into the app's database and data root, from packaged parts only.

1. The demo's two-person dialogues (demo.dialogues) are spoken with the packaged voices
   (demo.speech) into two-channel WAVs under `<data root>/demo/dialogues/`.
2. `python -m annotation build-pairs` turns them into natural / perturbed clip pairs (with
   artifact controls, attention checks and a practice pair) registered in the demo study: an
   annotator of the demo hears speech.
3. A scripted caller (espeak-ng) calls each embedded system of the demo study headlessly, through
   the same recorder and systems as `python -m studies call`, all at once; each call is a complete session of
   the demo study with its two-channel recording, so the researcher views compute statistics,
   judge metrics and naturalness on real audio.
4. Each caller answers the questionnaire after its call (analysis.questionnaire_demo: from the
   call's measured reply latency plus seeded noise), so the questionnaire views show something.

Everything is marked: the study's config says it is demo data (`demo_data`), the callers are
called "demo-caller-N". Each step is skipped when its result is there already, and a finished
build is recorded in the study's config (`demo_build`), so running it again (every `make run`)
returns at once.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlmodel import select

from analysis.questionnaire_demo import recorded_call, store_demo_answers
from demo.dialogues import CALLS, DIALOGUES
from demo.speech import DemoVoices, render_caller, render_dialogue, write_wav
from speech.audio import load_audio
from storage.db import session_scope
from storage.demo import DEMO_STUDY, seed_demo_study
from storage.files import resolve
from storage.models import ClipPair, ConversationSession, DialogueSystem, Participant, Recording, utc_now
from storage.records import get_or_create_participant, start_session
from studies.offline_call import run_offline_call
from studies.recorder import SAMPLE_RATE
from studies.sessions import call_relpath, finish_session, timing_relpath
from systems import make_system, system_kind
from systems.cascaded import CascadedSettings
from systems.stages import load_stages

CALL_STAGGER_S = 3.0  # between the starts of the demo's calls (a caller's turn cycle is about 10 s)
# 2: the label says what is demo; the overview counts what is real (a rebuild rewrites it);
# 3: the callers' questionnaire answers
BUILD_VERSION = 3
DEMO_LABEL = (
    "DEMO data (python -m demo build): scripted dialogues spoken by the packaged voices (Piper "
    "en_US-joe-medium, espeak-ng) and headless calls of the embedded systems by a scripted caller "
    "(participants demo-caller-N), with questionnaire answers made from each call's measured reply latency "
    "plus noise"
)
ROOT = Path(__file__).resolve().parent.parent
# The demo's annotation settings: every formal pair judged by 3 people, 10 trials each.
PAIR_OPTIONS = ("--per-type", "2", "--seed", "0", "--k", "3", "--trials-per-annotator", "10",
                "--attention", "2", "--practice", "1")


class DemoBuildError(RuntimeError):
    """A step of the build failed; the message says which and why (one line)."""


def is_built(engine) -> bool:
    with session_scope(engine) as session:
        study = seed_demo_study(session)
        return (study.config or {}).get("demo_build", {}).get("version") == BUILD_VERSION


def build_demo(engine, database_url: str, data_root, log=print) -> dict:
    """Build whatever of the demo is missing; returns what the demo holds."""
    data_root = Path(data_root)
    if is_built(engine):
        return {"study": DEMO_STUDY, "skipped": "the demo is built already"}
    started = time.monotonic()
    voices = DemoVoices()
    summary = {"study": DEMO_STUDY}
    if not _has_pairs(engine):
        dialogues = render_dialogues(voices, data_root / "demo" / "dialogues")
        log(f"demo: spoke {len(dialogues)} dialogues ({time.monotonic() - started:.0f} s)")
        build_pairs(database_url, data_root, dialogues[0].parent)
        log(f"demo: built and registered the clip pairs ({time.monotonic() - started:.0f} s)")
    summary["calls"] = record_calls(engine, data_root, voices, log)
    log(f"demo: recorded {len(summary['calls'])} call(s) ({time.monotonic() - started:.0f} s)")
    summary["questionnaire_responses"] = answer_calls(engine, data_root)
    summary["clip_pairs"] = pair_counts(engine)
    with session_scope(engine) as session:
        study = seed_demo_study(session)
        summary["seconds"] = round(time.monotonic() - started, 1)
        study.config = {**(study.config or {}), "demo_data": DEMO_LABEL,
                        "demo_build": {"version": BUILD_VERSION, "built_at": utc_now().isoformat(),
                                       "seconds": summary["seconds"]}}
        session.add(study)
    return summary


def pair_counts(engine) -> dict[str, int]:
    """The demo study's clip pairs counted by what they are for, each named for what it counts
    (the overview and headline.json name them alike)."""
    with session_scope(engine) as session:
        study = seed_demo_study(session)
        pairs = session.exec(select(ClipPair).where(ClipPair.study_id == study.id)).all()
        formal = [p for p in pairs if not (p.is_artifact_control or p.is_attention_check or p.is_practice)]
        return {"formal": len(formal), "artifact_control": sum(p.is_artifact_control for p in pairs),
                "attention": sum(p.is_attention_check for p in pairs),
                "practice": sum(p.is_practice for p in pairs), "all": len(pairs)}


def _has_pairs(engine) -> bool:
    with session_scope(engine) as session:
        study = seed_demo_study(session)
        return session.exec(select(ClipPair.id).where(ClipPair.study_id == study.id)).first() is not None


def render_dialogues(voices: DemoVoices, folder: Path) -> list[Path]:
    return [write_wav(folder / f"{d.name}.wav", render_dialogue(d, voices)[0]) for d in DIALOGUES]


def build_pairs(database_url: str, data_root: Path, dialogues: Path) -> None:
    """`python -m annotation build-pairs` on the dialogues, registered in the demo study."""
    out = data_root / "demo" / "benchmark"
    if out.exists():  # a build cut off earlier: start the benchmark afresh
        shutil.rmtree(out)
    command = [sys.executable, "-m", "annotation", "build-pairs", str(dialogues), "--out", str(out),
               "--study", DEMO_STUDY, *PAIR_OPTIONS, "--database-url", database_url, "--data-root", str(data_root)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise DemoBuildError(f"annotation build-pairs failed: {last}")


def record_calls(engine, data_root: Path, voices: DemoVoices, log=print) -> list[int]:
    """One headless call of each embedded system of the demo study that has none yet; their
    session ids. The models are loaded once and shared, as the app's calls share them."""
    with session_scope(engine) as session:
        study = seed_demo_study(session)
        systems = [(s.id, s.name, s.kind, dict(s.config or {})) for s in session.exec(
            select(DialogueSystem).where(DialogueSystem.study_id == study.id).order_by(DialogueSystem.id))
            if system_kind(s.kind).embedded]  # run here, without a server
        called = set(session.exec(
            select(ConversationSession.system_id).join(Participant)
            .where(Participant.study_id == study.id, Participant.external_id.like("demo-caller-%"),
                   ConversationSession.status == "complete")).all())
    todo = [s for s in systems if s[0] not in called]
    if not todo:
        return []
    components = load_stages(CascadedSettings(data_root=str(data_root)))
    with tempfile.TemporaryDirectory() as tmp:
        calls = []
        for n, (system_id, name, kind, config) in enumerate(todo):
            topic, lines = CALLS[n % len(CALLS)]
            caller = write_wav(Path(tmp) / f"caller-{n}.wav", render_caller(lines, voices))
            calls.append((system_id, name, topic, caller, Path(tmp) / f"call-{n}.wav",
                          make_system(kind, config, components=components)))  # models loaded before any clock starts
        # At once, as the app serves simultaneous participants on the shared models, the starts
        # CALL_STAGGER_S apart so that the replies do not all fall due together (the case of
        # benchmarks/bench_concurrent_calls.py, starts spread over a turn's cycle: 3-4 calls within
        # 8 % of one call's reply latency on this machine). One after another took 3x as long.
        def call(n_and_call):
            n, (_, _, topic, caller, out, system) = n_and_call
            time.sleep(n * CALL_STAGGER_S)
            return run_offline_call(caller, out, system=system, topic=topic)

        with ThreadPoolExecutor(len(calls), thread_name_prefix="demo-call") as pool:
            results = list(pool.map(call, enumerate(calls)))
        sessions = []
        for (system_id, name, topic, _, out, _), result in zip(calls, results):
            log(f"demo: called {name}: {result.duration_s:.0f} s, {len(result.latencies_s)} replies, "
                f"{result.late_blocks} late blocks")
            sessions.append(_register_call(engine, data_root, system_id, topic, out, result.log_path))
    return sessions


def answer_calls(engine, data_root: Path) -> int:
    """The demo callers' questionnaire answers after their calls, made from each call's recording
    (analysis.questionnaire_demo), where they have none yet; how many were stored."""
    with session_scope(engine) as session:
        study = seed_demo_study(session)
        rows = session.exec(
            select(ConversationSession.id, ConversationSession.participant_id, DialogueSystem.name, Recording.path)
            .join(DialogueSystem).join(Participant)
            .join(Recording, (Recording.session_id == ConversationSession.id) & (Recording.kind == "two-channel"))
            .where(Participant.study_id == study.id, Participant.external_id.like("demo-caller-%"),
                   ConversationSession.status == "complete")
            .order_by(ConversationSession.started_at, ConversationSession.id)).all()
        calls = []
        for session_id, participant_id, system, path in rows:
            audio, rate = load_audio(resolve(path, data_root), sample_rate=SAMPLE_RATE, require_channels=2)
            calls.append(recorded_call(session_id, participant_id, system, audio, rate))
        return store_demo_answers(session, study, calls, seed=0)


def _register_call(engine, data_root: Path, system_id: int, topic: str, wav: Path, timing: Path) -> int:
    """The call as a complete session of a demo caller (one per system), its files where a
    browser call's go."""
    with session_scope(engine) as session:
        system = session.get(DialogueSystem, system_id)
        study = seed_demo_study(session)
        participant = get_or_create_participant(session, study, external_id=f"demo-caller-{system_id}",
                                                consent_at=utc_now())
        session_id = start_session(session, participant, system, topic).id
    for src, relpath in ((wav, call_relpath(session_id)), (timing, timing_relpath(session_id))):
        dest = data_root / relpath
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    finish_session(engine, session_id, "complete", data_root)
    return session_id
