"""The predictive full-duplex system (`predictive`) on the real pipeline (the cascade's packaged
models, the packaged judge and turn-end model, real-time calls) with espeak-ng and Piper speech at
known times: it holds through a pause after unfinished words and through a storyteller's pauses
after finished sentences, takes a finished question's turn within a second, keeps talking through
the caller's "yeah", a slow "mm-hmm", a cough and quieter voices in the background (two of them
beginning loud, one a single word), and yields at once to a real interruption, then answers it."""

from __future__ import annotations

import json
import random
from collections import deque
from dataclasses import replace

import numpy as np
import pytest
import soundfile

from examiner.task_sets import cough
from examiner.voices import VOICE_SETS, Voice, in_room, speak
from judge.turn_end import load_turn_end_model
from studies.__main__ import main
from studies.offline_call import active_segments, run_offline_call, run_offline_feed
from systems.base import SystemError_
from systems.events import EventKind
from systems.kinds import SERVABLE_KIND_NAMES, system_kind
from systems.overlap_policy import OverlapPolicy, Resume, Yield, not_taking_the_floor
from systems.predictive import PredictiveSettings, PredictiveSystem
from systems.turn_end_cues import TurnEndCues, turn_end_belief
from tests.studies.conftest import espeak_16k
from tests.studies.over_the_reply import MOST_WAIT_S, OverTheReplyFeed

RATE = 16000
# The cascade's assistant system prompt until 6 Dec 2026, under which the model told a 14.6 s story.
STORY_PROMPT = ("You are a friendly voice assistant talking with a person about {topic}. "
                "Answer in one or two short spoken sentences. No lists, no emojis.")


def spoken(text: str, tmp_path, name: str, gain: float = 1.0) -> np.ndarray:
    """espeak-ng's `text`, cut to its audible samples (so its known times are the sound's)."""
    speech = espeak_16k(text, tmp_path / f"{name}.wav")
    loud = np.flatnonzero(np.abs(speech) > 0.01)
    return gain * speech[loud[0]:loud[-1] + 1]


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * RATE), dtype=np.float32)


def read_log(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def speech_between(segments, start: float, end: float) -> float:
    return sum(max(0.0, min(e, end) - max(s, start)) for s, e in segments)


def test_the_kind_is_registered_servable_and_refuses_bad_settings():
    kind = system_kind("predictive")
    assert kind.system is PredictiveSystem and kind.embedded and "predictive" in SERVABLE_KIND_NAMES
    settings = kind.parse({"openers": ["well,"], "shift_threshold": 0.7})
    assert isinstance(settings, PredictiveSettings) and settings.openers == ("well,",)
    with pytest.raises(SystemError_, match="predictive system: unknown config key.*colour"):
        kind.parse({"colour": 1})
    assert kind.parse({"acknowledge_above": None}).acknowledge_above is None
    with pytest.raises(SystemError_, match="acknowledge_above must be a probability"):
        kind.parse({"acknowledge_above": "often"})
    with pytest.raises(SystemError_, match="acknowledge_within_ms must be 0 or more"):
        kind.parse({"acknowledge_within_ms": -1})
    with pytest.raises(SystemError_, match="acknowledge_smart_turn_lowers must be true or false"):
        kind.parse({"acknowledge_smart_turn_lowers": "no"})
    with pytest.raises(SystemError_, match="overlap_yield_ms <= overlap_yield_max_ms"):
        kind.parse({"overlap_yield_max_ms": 400})
    assert kind.parse({"completion_veto_floor": None}).completion_veto_floor is None
    with pytest.raises(SystemError_, match="completion_veto_floor must be a log-odds of 0 or less"):
        kind.parse({"completion_veto_floor": 1.5})
    assert kind.parse({"quiet_end_db": None}).quiet_end_db is None
    with pytest.raises(SystemError_, match="quiet_end_db must be a positive number of dB or null"):
        kind.parse({"quiet_end_db": 0})


def test_a_low_smart_turn_read_holds_the_turn_but_not_the_acknowledgement():
    # the cues of a finished question in an espeak-ng voice that Smart Turn read as unfinished
    # (a choosing-set answer that waited 0.86 s: "Can you make? Slade I'm not wearing those arms")
    model = load_turn_end_model(None)
    cues = TurnEndCues("Can you make? Slade I'm not wearing those arms", 0.318, 0.019, None,
                       {".": 0.218, "?": 0.108, "!": 0.0}, 0.16)
    unread = replace(cues, smart_turn=None)
    default, lowering = PredictiveSettings(), PredictiveSettings(acknowledge_smart_turn_lowers=True)
    # the turn's own P(turn end) is lowered by the read at its weight, either way
    assert turn_end_belief(model, default, cues).p_end < turn_end_belief(model, default, unread).p_end
    # the acknowledgement's is not, unless asked: as if unread, and over acknowledge_above here
    assert turn_end_belief(model, default, cues).p_acknowledge == turn_end_belief(model, default, unread).p_acknowledge
    assert turn_end_belief(model, default, cues).p_acknowledge >= default.acknowledge_above
    assert turn_end_belief(model, lowering, cues).p_acknowledge < default.acknowledge_above
    # a high read raises it in both
    sure = replace(cues, smart_turn=0.95)
    for settings in (default, lowering):
        assert turn_end_belief(model, settings, sure).p_acknowledge > turn_end_belief(model, settings, unread).p_acknowledge


def test_its_replies_decode_without_a_seed():
    # the default seed is None (fresh backchannel and opener draws); the replies' decoding must not
    # need one, or every reply fails before its first token and only the opener is heard
    settings = system_kind("predictive").parse({})
    assert settings.seed is None
    assert [settings.decoding(n).seed for n in (0, 2)] == [0, 2]
    assert system_kind("predictive").parse({"seed": 5}).decoding(1).seed == 6


def test_words_over_its_speech_leave_it_the_floor_when_a_backchannel_said_once_or_again():
    for heard in ("", "Mm-hmm.", "Uh, yeah.", "Yeah, yeah.", "Yeah. Yeah. Yeah. Yeah. Yeah.", "Mm mm mm"):
        assert not_taking_the_floor(heard), heard
    for heard in ("Wait.", "Hold on.", "Yeah, but why?", "Honey. Honey. Honey.", "No, no.", "Okay, stop."):
        assert not not_taking_the_floor(heard), heard


def test_a_word_aside_heard_late_makes_no_later_voice_its_own_past_the_window_from_its_end():
    """A short overlap resumed before its words were heard, then heard as another's ("Honey." at
    -12 dB) 0.6 s after it ended, as under load: the next speech counts as that voice only within
    BACKGROUND_GAP_S of the word's end, so a loud interruption 0.9 s after it pauses the reply."""
    block = 320
    events, heard = [], []
    caller_levels = deque([-20.0] * 50)  # the caller's voice
    policy = OverlapPolicy(PredictiveSettings(), caller_levels, hear=lambda key, start: heard.append(key),
                           emit=lambda kind, **fields: events.append(kind))
    ended = 10 * RATE
    key = (1, 8 * block)
    policy.tentative = (key, ended - 10 * block, 8 * block, [-21.0] * 2 + [-32.0] * 6, ended)
    policy.words[key] = "Honey."
    assert policy.step(False, -60.0, ended + int(0.6 * RATE)) is None
    assert policy.tentative is None and EventKind.BACKGROUND_VOICE in events
    now = ended + int(0.9 * RATE)
    for _ in range(10):  # 200 ms of the caller's voice
        now += block
        assert policy.step(True, -20.0, now) is None
    assert policy.paused and not policy.background and events[-1] == EventKind.PAUSED


def test_an_overlap_policy_resumes_for_a_backchannel_and_yields_to_other_words():
    """The state machine alone, its words given: 0.3 s of speech as loud as the caller's over the
    reply pauses it; at the overlap's end "mm-hmm" resumes, "hold on" yields with the overlap as
    the new turn's start; a quieter voice is another's and never pauses it."""
    block = 320
    settings = PredictiveSettings()

    def overlap(words: str | None, level: float):
        events = []
        policy = OverlapPolicy(settings, deque([-20.0] * 50), hear=lambda key, start: None,
                               emit=lambda kind, **fields: events.append(kind))
        now, decided = 5 * RATE, None
        for _ in range(15):  # 0.3 s of speech
            now += block
            decided = decided or policy.step(True, level, now)
        for _ in range(10):  # then silence, its words heard as soon as they are asked for
            now += block
            for key in [k for k, v in policy.words.items() if v is None]:
                policy.words[key] = words
            decided = decided or policy.step(False, -70.0, now)
        return decided, events, policy

    decided, events, policy = overlap("Mm-hmm.", -20.0)
    assert isinstance(decided, Resume) and decided.words == "Mm-hmm." and not policy.paused
    assert events == [EventKind.PAUSED] and decided.overlap == 15 * block
    decided, events, policy = overlap("Hold on.", -21.0)
    assert isinstance(decided, Yield) and (decided.why, decided.words) == ("words", "Hold on.")
    assert decided.start == 5 * RATE and decided.speech == 15 * block and not policy.paused
    decided, events, policy = overlap("Hold on.", -32.0)
    assert decided is None and EventKind.PAUSED not in events and EventKind.BACKGROUND_VOICE in events


def caller_activity(audio: np.ndarray, config: dict, components) -> np.ndarray:
    """The system's view of the caller (active or not) at each 20 ms block of `audio`, listening
    only (no reply is made: the worker is not started)."""
    system = PredictiveSystem(config, components=components)
    active = []
    for i in range(len(audio) // 320):
        system.receive(audio[i * 320:(i + 1) * 320])
        active.append(system._caller_active)
    system.close()
    return np.array(active)


def test_in_a_noisy_room_the_callers_speech_ends_soon_after_the_last_word_and_not_inside_it(
        tmp_path, cascade_components):
    """Silero hears a room's reverberation as speech well after the last word; the quiet end
    (P(speech) falling and the caller's last 40 ms `quiet_end_db` under their voice) ends it within
    0.2 s of it, and adds no end inside the question, in the room or in the clear."""
    question = speak("What should I pack for a weekend hiking trip?", Voice("espeak-ng", "en-us+f3", 150))
    onset, end = 0.5, 0.5 + len(question) / RATE
    room = in_room(np.concatenate([silence(onset), question, silence(1.0)]), VOICE_SETS["fitting-noisy"], seed=3)
    ends = {}
    for quiet_end_db in (10.0, None):
        active = caller_activity(room, {"seed": 0, "quiet_end_db": quiet_end_db}, cascade_components)
        t = (np.arange(len(active)) + 1) * 320 / RATE  # each block's end
        inside = (t > onset + 0.3) & (t < end - 0.05)
        ends[quiet_end_db] = (t[np.flatnonzero(active)[-1]] - end,
                              int(np.sum(active[:-1][inside[1:]] & ~active[1:][inside[1:]])))
    (quiet_lag, quiet_breaks), (vad_lag, vad_breaks) = ends[10.0], ends[None]
    assert quiet_lag <= 0.2 and quiet_lag <= vad_lag - 0.05, ends
    assert quiet_breaks <= vad_breaks, ends
    # espeak-ng's default voice in the clear: P(speech) dips under 0.7 for a frame inside its words
    for text in ("wait, what happened to his little dog in the storm?", "I was thinking about going to the park tomorrow"):
        clear = np.concatenate([silence(onset), spoken(text, tmp_path, "clear"), silence(1.0)])
        breaks = [int(np.sum(a[:-1] & ~a[1:])) for a in (
            caller_activity(clear, {"seed": 0, "quiet_end_db": q}, cascade_components) for q in (10.0, None))]
        assert breaks[0] <= breaks[1], (text, breaks)


def test_serve_realtime_refuses_a_bad_predictive_config_naming_the_kind(capsys):
    assert main(["serve-realtime", "--system", "predictive", "--config", '{"colour": 1}']) == 1
    assert capsys.readouterr().err.startswith("error: predictive system: ")


def test_holds_through_a_pause_after_unfinished_words_and_answers_a_finished_question_at_once(
        tmp_path, cascade_components):
    first = spoken("I was thinking about going to the", tmp_path, "first")
    rest = spoken("market tomorrow morning before work.", tmp_path, "rest")
    question = spoken("What is the capital of France?", tmp_path, "question")
    parts = [silence(1.0), first, silence(1.5), rest, silence(5.0), question, silence(6.0)]
    starts = np.cumsum([0] + [len(p) for p in parts]) / RATE
    pause = (starts[2], starts[3])  # the 1.5 s inside the sentence
    question_end = starts[6]
    soundfile.write(str(tmp_path / "user.wav"), np.concatenate(parts), RATE)

    system = PredictiveSystem({"seed": 0}, components=cascade_components)
    result = run_offline_call(tmp_path / "user.wav", tmp_path / "call.wav", system=system, tail_s=0.0,
                              topic="travel")
    events = read_log(result.log_path)
    turn_ends = [e for e in events if e["event"] == "turn_end"]
    # no turn taken inside the pause after "going to the" (only a backchannel may come there)
    assert not [e for e in turn_ends if pause[0] < e["mic_s"] < pause[1] + 0.1], turn_ends
    audio, _ = soundfile.read(str(tmp_path / "call.wav"), dtype="float32")
    system_speech = active_segments(audio[:, 1])
    assert all(e - s < 1.0 for s, e in system_speech if s < pause[1])  # nothing longer than a backchannel
    # after the pause only the rest was recognised, and the words before it were kept
    [whole] = [e for e in events if e["event"] == "transcript" and pause[1] < e["mic_s"] < starts[4] + 1.0][-1:]
    assert "going" in whole["text"].lower() and "market" in whole["text"].lower(), whole
    first_s = starts[2] - starts[1]
    assert whole["audio_s"] < starts[4] - starts[1] - first_s / 2, whole  # not the utterance from its start
    # the finished question: the turn is taken within a second or so of its end (on a prediction, not
    # the max_silence_ms fallback), and answered (its latencies are benchmarks/, not this test's). A
    # transcript garbled under load ("What is the capital and friends?", P(sentence end) 0.03) waited
    # 1.2 s of silence for the pause's length to outweigh the words.
    [taken] = [e for e in turn_ends if question_end < e["mic_s"] < question_end + 1.6]
    assert taken["silence_s"] < 1.4 and taken["p_turn_end"] >= system.settings.shift_threshold
    assert taken["p_sentence_end"] > 0.01  # the lexical completion cue was read, and let the turn go
    assert taken["p_question"] > 0.01  # the question cue read a question (0.8 on the text; 0.03 once under load)
    # Smart Turn read on audio with silence after the question (at its last sound it reads "unfinished")
    assert taken["smart_turn_read_s"] >= system.settings.smart_turn_after_ms / 1000 - 1e-9
    onsets = [s for s, _ in system_speech if s > question_end]
    assert onsets and onsets[0] - question_end < 1.6
    # an answer, not just an opener ("well," is 0.4 s): 1.4 s of it within the 6 s once under load
    assert speech_between(system_speech, question_end, question_end + 6.0) > 1.0


def test_holds_the_floor_for_a_storyteller_pausing_after_finished_sentences(tmp_path, cascade_components):
    # Piper's voice, whose finished sentences Smart Turn reads as complete (0.93-0.98): at its own
    # odds the system took the turn here (the examiner's monologues: 11 times in 4)
    voice = Voice("piper", "en_US-joe-medium", 1.0)
    sentences = ["So last summer I finally went on that trip I had been planning for years.",
                 "We started in a small town by the sea.", "My brother insisted on carrying the heaviest bag.",
                 "In the evening we found a tiny restaurant with only four tables.",
                 "The owner cooked everything himself."]
    parts = [silence(1.0)]
    for k, text in enumerate(sentences):
        parts += [speak(text, voice)] + ([silence(0.8)] if k < len(sentences) - 1 else [])
    story_end = sum(len(p) for p in parts) / RATE
    soundfile.write(str(tmp_path / "user.wav"), np.concatenate(parts + [silence(4.6)]), RATE)
    system = PredictiveSystem({"seed": 0}, components=cascade_components)
    result = run_offline_call(tmp_path / "user.wav", tmp_path / "call.wav", system=system, tail_s=0.0, topic="travel")
    events = read_log(result.log_path)
    taken = [e["mic_s"] for e in events if e["event"] == "turn_end"]
    assert not [t for t in taken if t < story_end], taken  # not at any of the four finished sentences
    # and at its end, at the latest when the silence reaches max_silence_ms
    assert [t for t in taken if story_end < t < story_end + system.settings.max_silence_ms / 1000 + 0.5], taken


def test_backchannels_while_the_caller_speaks_by_its_own_gain(tmp_path, cascade_components):
    """Switchboard's listeners start 37 % of their backchannels while the speaker speaks: with the
    pauses' gain 0 and the speech's saturated, the system's backchannels come in the storyteller's
    sentences (the first after a second of speech, each a second of speech after the last), none in
    the pauses."""
    voice = Voice("piper", "en_US-joe-medium", 1.0)
    sentences = ["So last summer I finally went on that trip I had been planning for years.",
                 "We started in a small town by the sea, and my brother carried the heaviest bag."]
    parts, spans, t = [silence(1.0)], [], 1.0
    for text in sentences:
        audio = speak(text, voice)
        loud = np.flatnonzero(np.abs(audio) > 0.01)
        spans.append((t + loud[0] / RATE, t + loud[-1] / RATE))
        parts += [audio, silence(0.8)]
        t += (len(audio) + 0.8 * RATE) / RATE
    soundfile.write(str(tmp_path / "user.wav"), np.concatenate(parts + [silence(1.0)]), RATE)
    system = PredictiveSystem({"seed": 0, "backchannel_gain": 0.0, "backchannel_in_speech_gain": 1000.0,
                               "acknowledge_above": None}, components=cascade_components)
    result = run_offline_call(tmp_path / "user.wav", tmp_path / "call.wav", system=system, tail_s=0.0, topic="travel")
    said = [e for e in read_log(result.log_path) if e["event"] == "backchannel"]
    assert len(said) >= 2 and all(e["in_speech"] for e in said), said
    # each within a sentence (the VAD's hangover at its end allowed for), the first after a second of it
    assert all(any(a <= e["mic_s"] <= b + 0.3 for a, b in spans) for e in said), (said, spans)
    assert said[0]["mic_s"] >= spans[0][0] + 1.0, said
    assert all(b["mic_s"] - a["mic_s"] >= 1.0 for a, b in zip(said, said[1:])), said
    audio, _ = soundfile.read(str(tmp_path / "call.wav"), dtype="float32")
    system_speech = active_segments(audio[:, 1], bridge_s=0.1)
    heard_over = [e for e in said if speech_between(system_speech, e["mic_s"], e["mic_s"] + 0.6) > 0.1]
    assert heard_over == said, ([e["mic_s"] for e in said], system_speech)  # each one played, over the caller


def test_acknowledges_a_likely_turn_end_then_replies_without_an_opener(tmp_path, cascade_components):
    # a turn taken only when all but certain (0.99, or at the 4 s fallback), so that between "likely"
    # (0.5) and "sure" the system says its acknowledgement; then the reply follows it with no opener
    question = spoken("What is the capital of France?", tmp_path, "question")
    soundfile.write(str(tmp_path / "user.wav"), np.concatenate([silence(1.0), question, silence(6.0)]), RATE)
    question_end = 1.0 + len(question) / RATE
    # (its window wide: in a loaded suite the recogniser took 0.48 s and the words came past the
    # default 0.45 s of silence; the window itself is the second call's)
    system = PredictiveSystem({"seed": 0, "shift_threshold": 0.99, "acknowledge_above": 0.5,
                               "acknowledge_within_ms": 1000.0}, components=cascade_components)
    result = run_offline_call(tmp_path / "user.wav", tmp_path / "call.wav", system=system, tail_s=0.0, topic="travel")
    events = read_log(result.log_path)
    [ack] = [e for e in events if e["event"] == "backchannel"]
    [taken] = [e for e in events if e["event"] == "turn_end"]
    assert ack["acknowledgement"] and ack["text"] in system.settings.acknowledgements
    assert 0.5 <= ack["p_turn_end"] < 0.99 and taken["p_turn_end"] > 0.5
    assert question_end < ack["mic_s"] < taken["mic_s"] < question_end + 4.0
    assert taken["acknowledged"] and taken["opener"] is None
    audio, _ = soundfile.read(str(tmp_path / "call.wav"), dtype="float32")
    system_speech = active_segments(audio[:, 1])
    # the first sound is the acknowledgement's, said as it was decided; the reply's own audio comes
    # after it (not cutting it short), and is an answer
    assert 0.0 <= system_speech[0][0] - ack["mic_s"] < 0.2
    [reply] = [e for e in events if e["event"] == "audio_start"]
    clip_s = len(system._clip(ack["text"])) / RATE
    assert reply["mic_s"] >= ack["mic_s"] + clip_s - 0.05 and reply["mic_s"] >= taken["mic_s"]
    assert speech_between(system_speech, reply["mic_s"], reply["mic_s"] + 6.0) > 1.5
    assert ack["silence_s"] <= system.settings.acknowledge_within_ms / 1000
    # past its window (here: from the pause's first frame on) no acknowledgement: the turn is waited for
    late = PredictiveSystem({"seed": 0, "shift_threshold": 0.99, "acknowledge_above": 0.5,
                             "acknowledge_within_ms": 0.0}, components=cascade_components)
    result = run_offline_call(tmp_path / "user.wav", tmp_path / "late.wav", system=late, tail_s=0.0, topic="travel")
    events = read_log(result.log_path)
    assert not [e for e in events if e["event"] == "backchannel"]
    [taken] = [e for e in events if e["event"] == "turn_end"]
    assert question_end < taken["mic_s"] < question_end + 4.5 and not taken["acknowledged"]


# Not in the parallel run: how soon it talks on after each overlap waits on the recogniser, which
# under that run's load took about a second to hear a 0.5 s backchannel (2 of 3 clean-clone runs
# failed on it, the real-time group's priority notwithstanding). By itself: beside it, a relayed
# browser call sent 68 blocks of its system audio late.
@pytest.mark.alone
@pytest.mark.machine_to_itself
def test_keeps_talking_through_a_backchannel_a_cough_and_background_speech_and_yields_to_an_interruption(
        tmp_path, cascade_components):
    question = spoken("Can you tell me a long story about a lighthouse keeper?", tmp_path, "question")
    yeah = spoken("yeah", tmp_path, "yeah")
    # a backchannel longer than `overlap_yield_ms` (0.82 s; Whisper unprompted hears "And man, then"),
    # at the question's level
    mm_hmm = speak("mm-hmm", Voice("espeak-ng", "en-us+f4", 140))
    mm_hmm *= np.sqrt(np.mean(question ** 2) / np.mean(mm_hmm ** 2))
    burst = cough(random.Random(3))
    background = spoken("the bus to the city leaves at noon", tmp_path, "background", gain=0.3)  # -10 dB
    # another voice whose first syllable is nearly as loud as the caller's (-4.4 dB: the system
    # pauses for it) and the rest of it quiet (-12 dB): judged again on 480 ms, it is not theirs
    aside = spoken("somebody left the front door open again", tmp_path, "aside")
    loud = int(0.12 * RATE)
    aside = np.concatenate([0.6 * aside[:loud], 0.25 * aside[loud:]])
    # a word said aside, loud at its onset: the overlap is short, and its words ("Honey.") would make
    # the system yield were they the caller's (and the interruption that follows is still heard)
    honey = spoken("honey", tmp_path, "honey")
    honey = np.concatenate([0.6 * honey[:loud], 0.25 * honey[loud:]])
    interruption = spoken("wait, what happened to his little dog in the storm?", tmp_path, "interruption")
    # one after the other from the answer's onset + 1 s, each at least this long after the one before
    # ends (and while the reply is heard): the background voices more than BACKGROUND_GAP_S apart
    # (each is judged afresh), all of it within the reply's first 13 s (the model's story once ended
    # after 14.6 s)
    pieces = {"yeah": yeah, "mm-hmm": mm_hmm, "cough": burst, "background": background, "aside": aside, "honey": honey,
              "interruption": interruption}
    gap_after = {"yeah": 0.9, "mm-hmm": 0.9, "cough": 0.6, "background": 0.9, "aside": 0.9, "honey": 1.5}
    feed = OverTheReplyFeed(np.concatenate([silence(1.0), question]), pieces, gap_after)
    # a long answer to talk over: the prompt that made the model run on (the default asks for two sentences)
    system = PredictiveSystem({"seed": 0, "max_sentences": 8, "max_new_tokens": 200, "system_prompt": STORY_PROMPT},
                              components=cascade_components)
    result = run_offline_feed(feed, tmp_path / "call.wav", system=system, topic="stories")
    assert feed.answer.onset is not None, "the system never answered the question"
    print("waited for the reply to be heard (s):", feed.waited_s)
    assert set(feed.starts) == set(pieces) and max(feed.waited_s.values()) < MOST_WAIT_S, feed.waited_s
    times = {name: (start / RATE, start / RATE + len(pieces[name]) / RATE) for name, start in feed.starts.items()}
    events = read_log(result.log_path)
    audio, _ = soundfile.read(str(tmp_path / "call.wav"), dtype="float32")
    system_speech = active_segments(audio[:, 1], bridge_s=0.1)
    for name in pieces:
        start, _ = times[name]
        # (1 s before: the reply's own pauses between sentences last up to 0.3 s)
        assert speech_between(system_speech, start - 1.0, start) > 0.4, f"the system was not speaking at the {name}"
    # the backchannels, the cough and the three background voices: it went on talking (a paused reply resumes)
    yielded = [e["mic_s"] for e in events if e["event"] == "yielded"]
    assert yielded and all(t > times["interruption"][0] for t in yielded), yielded
    for name in ("yeah", "mm-hmm", "cough", "background", "aside", "honey"):
        _, end = times[name]
        # (the single word paused the reply until it ended: a second and a half before the interruption)
        after = 1.4 if name == "honey" else 1.0
        assert speech_between(system_speech, end, end + after) > 0.5, f"the system stopped after the {name}"
    # the long "mm-hmm" was heard as one from its first `overlap_yield_ms` (0.48 s) and talked over
    # (`talked_over`: decided on those words, not on all of it at its end), not yielded to at 1.0 s.
    # How soon after those 0.48 s depends on the recogniser under load: before the "mm-hmm" ended on
    # a quiet machine, 0.1 s after it once in CI (its words took 0.4 s).
    start, end = times["mm-hmm"]
    [resumed] = [e for e in events if e["event"] == "resumed" and start < e["mic_s"] < end + 1.0]
    assert resumed["overlap_s"] >= 0.48 and resumed["words"] and "hmm" in resumed["words"].lower(), resumed
    assert resumed["talked_over"] and resumed["overlap_s"] < system.settings.overlap_yield_max_ms / 1000, resumed
    paused = [e["mic_s"] for e in events if e["event"] == "paused"]
    assert not [t for t in paused if times["background"][0] <= t <= times["background"][1] + 0.2]
    heard_as_background = [e["mic_s"] for e in events if e["event"] == "background_voice"]
    for name in ("background", "aside", "honey"):
        start, end = times[name]
        # the single word is judged when its words are heard, after it ends (before the interruption)
        heard_by = end + (1.0 if name == "honey" else 0.2)
        assert [t for t in heard_as_background if start < t < heard_by], f"the {name} was not heard as background"
    # the loud-onset voice paused the reply at first; on more of it, it was heard as another voice
    start, end = times["aside"]
    [paused_for_aside] = [t for t in paused if start <= t <= end]
    assert paused_for_aside < start + 0.4 and [t for t in heard_as_background if paused_for_aside < t < end]
    # the interruption: its output stops within 0.35 s of the onset and stays silent while the caller
    # talks, but for what a short first word allows: "Wait," is an overlap short enough to resume the
    # reply at its comma, until the next words pause it again or its words are heard. How much of the
    # reply that lets through depends on where it resumes (between two words: none on a quiet run;
    # inside one: 0.26 s once in CI, resumed at 18.04 s, paused at 18.30 s).
    start, end = times["interruption"]
    assert speech_between(system_speech, start, start + 0.35) < 0.35
    resumed_over = [e["mic_s"] for e in events if e["event"] == "resumed" and start < e["mic_s"] < yielded[0]]
    let_through = 0.0
    if resumed_over:
        [stopped] = [e["mic_s"] for e in events if e["event"] in ("paused", "yielded") and e["mic_s"] > resumed_over[0]][:1]
        assert stopped - resumed_over[0] < 0.5, (resumed_over, stopped)
        let_through = speech_between(system_speech, resumed_over[0], stopped + 0.04)
    assert speech_between(system_speech, start + 0.35, end) - let_through < 0.1
    # (its first words do not yield: a part of a backchannel may be misheard; its length does, at 1.0 s,
    # decided when that block is processed: 1.5 s once with three other test workers busy)
    assert yielded[0] - start < 1.0 + 0.6
    # then the interruption is answered
    assert [e for e in events if e["event"] == "turn_end" and e["mic_s"] > end]
    assert speech_between(system_speech, end, end + 6.0) > 1.0
