"""One embedded call's walk, from the study file to the first reply audio: the project modules it
runs code in (in the order first entered, on the call's thread and on the system's own threads),
and the kind lookups and config parses on the way. Runs in a checkout of the code before the
systems package (studies.systems, no SystemSpec) and after it. A one-off probe:
    PYTHONPATH=. HF_HUB_OFFLINE=1 python benchmarks/probe_call_walk.py"""
import importlib
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, os.getcwd())
AFTER = Path("systems/kinds.py").exists()
PKG = "systems" if AFTER else "studies.systems"
kinds = importlib.import_module(f"{PKG}.kinds")
cascaded = importlib.import_module(f"{PKG}.cascaded")
from studies.call_manager import CallManager  # noqa: E402
from studies.config import load_config  # noqa: E402

load = getattr(importlib.import_module(f"{PKG}.stages"), "load_stages") if AFTER else cascaded.load_components


class Counting(dict):
    lookups = 0

    def get(self, *a):
        Counting.lookups += 1
        return super().get(*a)


kinds._BY_NAME = Counting(kinds._BY_NAME)
parses = [0]
original = cascaded.CascadedSettings.from_config.__func__
cascaded.CascadedSettings.from_config = classmethod(
    lambda cls, config: (parses.__setitem__(0, parses[0] + 1), original(cls, config))[1])

work = Path(tempfile.mkdtemp())
study_file = work / "study.yaml"
study_file.write_text("""name: walk
title: One call's walk
systems:
  - name: baseline
    kind: cascaded
    config: {barge_in: yield}
""")
raw, wav = work / "q.raw.wav", work / "q.wav"
subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(raw), "Where can I go hiking near the lake?"], check=True)
subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", str(wav)], check=True)
question, _ = soundfile.read(str(wav), dtype="float32")
loaded = load(cascaded.CascadedSettings())  # loaded before the walk: the app loads models at start-up
calls = CallManager(engine=None, data_root=work)
calls.cascade_components({}, loaded=loaded)  # the models the app loaded at start-up, shared by calls

PROJECT = ("studies", "systems", "speech", "judge", "turntaking", "storage")
visited: dict[str, list[str]] = {}


def profile(frame, event, arg):
    if event == "call":
        name = frame.f_globals.get("__name__", "")
        if name.split(".")[0] in PROJECT:
            thread = "call" if threading.current_thread() is threading.main_thread() else "system's threads"
            seen = visited.setdefault(thread, [])
            if name not in seen:
                seen.append(name)


def counts() -> str:
    text = f"kind lookups {Counting.lookups}, config parses {parses[0]}"
    Counting.lookups, parses[0] = 0, 0
    return text


Counting.lookups, parses[0] = 0, 0
sys.setprofile(profile)
threading.setprofile(profile)
study = load_config(study_file)
[system_config] = study.systems
print("the study file loaded:", counts())
kind, config = system_config.kind, dict(system_config.config)  # as stored with the study
if AFTER:
    spec = kinds.system_spec(kind, config)  # the participant route: the study's row to the call's spec
    calls.room_for(1, spec)
    system = calls.build_system(spec)
else:
    calls.room_for(1, kind, config)
    system = calls.build_system(kind, config)
print("the call's system built:", counts())
first = threading.Event()
system.on_event = lambda event: first.set() if str(getattr(event.kind, "value", event.kind)) == "audio_start" else None
system.start("hiking")
audio = np.concatenate([np.zeros(8000, np.float32), question, np.zeros(16000 * 4, np.float32)])
blocks = 0
for i in range(0, len(audio) - 320, 320):
    system.receive(audio[i:i + 320])
    system.send()
    blocks += 1
    if first.is_set():
        break
    first.wait(0.02)  # the call's 20 ms clock
system.close()
sys.setprofile(None)
threading.setprofile(None)
print("to the first reply audio:", counts(), f"(first audio at {blocks * 0.02:.2f} s of the call)" if first.is_set() else "(no reply)")
for thread, modules in visited.items():
    print(f"modules entered on the {thread} ({len(modules)}):", ", ".join(modules))
