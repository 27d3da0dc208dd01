"""The predictive full-duplex system (kind `predictive`): the cascade's models, with turn-taking
decided every 40 ms by predictions instead of silence timers.

It listens all the time, and every 20 ms feeds both channels' voice activity (the caller's from
Silero, its own from what it plays) to the streaming turn-taking judge (`judge.streaming`).

- The caller's speech ends where the VAD calls silence, or sooner where their speech fades
  (P(speech) under `speculate_below` after a frame under 0.9) while their last 40 ms are
  `quiet_end_db` under their voice's level: in a room with noise Silero goes on hearing the reverberation as speech
  0.2-0.36 s after the last word, while the level falls 10 dB within 40 ms of it.
- Turn ends are predicted. From the moment the caller's speech fades (the VAD's P(speech) below
  `speculate_below`, about 60 ms before it calls them silent) the reply is prepared
  speculatively (ASR, LLM, first TTS chunk, as the cascade does) and the turn is taken once
  P(turn end) reaches `shift_threshold`. `judge.turn_end` gives the prior from the speculative
  transcript's last words, the judge's P(turn change) 120 ms into the silence and (`question_cue`)
  the transcript's P(question) (`judge.questions`), and the posterior as the silence goes on (how
  rarely a within-turn pause lasts this long): fitted on Switchboard training conversations (the
  question cue on the dialog-act half of the validation split, the only part with dialog acts;
  the turn end's validation leaves that half out). `lexical_completion` (default) holds the floor
  for words that do not end a sentence ("I was thinking about going to the"): the packaged
  language model's P(sentence end) (`systems.lexical_completion`), as a likelihood ratio,
  lowers the prior's odds and never raises them, by at most `completion_veto_floor` (a misheard
  sentence reads as unfinished at any P). A finished sentence is necessary for a turn end,
  not sufficient: a caller telling a story pauses after each of its sentences, and whether one
  ends the turn is left to the conversational model. On requests and questions cut at random
  words, the completion cue tells cut from finished with ROC-AUC 0.93 where the last words and
  question cue have 0.56 (docs/dialogue-systems.md, "What was tried"). A finished question is more:
  it hands the turn over. `question_end` (default) reads the same model's P(the next token is
  "?") as a likelihood ratio fitted on Switchboard training silences
  (docs/dialogue-systems.md, "What was tried"): the dialog-act question cue reads "Where can I find good
  pizza in Manhattan?" as a statement (0.02), the language model gives it P("?") 0.5. Its
  evidence is modest (odds x2 at most): in Switchboard a question is followed by the other's
  turn 70 % of the time, not always. Smart Turn v3.2's P(complete) on the caller's audio
  (`speech.smart_turn`), read after `smart_turn_after_ms` of VAD silence (at the speech's last
  sound it reads finished questions as unfinished), multiplies the prior odds by its own odds
  raised to `smart_turn_weight` (0.14): its weight fitted beside the words on the examiner's synthetic
  voices (docs/dialogue-systems.md, "What was tried"; the Switchboard here has no audio), since at
  its own odds (weight 1) it took the turn at a monologue's finished sentences. The
  acknowledgement, cheap when wrong, reads its own odds (`acknowledge_smart_turn_weight`, 1), and
  only where they raise P(turn end) (`acknowledge_smart_turn_lowers`): on synthetic voices Smart
  Turn reads finished questions as unfinished (0.01-0.11), which held their acknowledgements back.
  Words alone are weak on questions (people's last two words seldom say "question"); the voice
  says more.
- A long turn is recognised from its last pause on: the words before a pause the caller went on
  after are kept, and only the rest goes to the recogniser (on 30-50 s of a monologue the whole
  utterance took the packaged Whisper 0.6-1 s at every pause, and each decision waited for it;
  from the last pause, 0.05-0.11 s).
- Openers: when the turn is taken before the reply's first audio is ready, a short discourse
  marker ("well,", "okay,"...) takes the floor at once and the reply follows it. The latency to
  the reply's own words is logged apart (`reply_audio_start`).
- Acknowledgements: once P(turn end) passes `acknowledge_above` (0.5: a turn end as likely as
  not) while the decision still waits for `shift_threshold`, the system says a short "okay." /
  "yeah." / "right." at once, once per pause and only in its first `acknowledge_within_ms` (0.45 s),
  where listeners' backchannels come. If the caller goes on, it was a backchannel at a likely turn
  end, where listeners give them; if the turn end becomes sure, the reply follows it
  with no opener. The reply's own words still come when the turn is taken (logged as
  `audio_start`); the acknowledgement is what a caller hears first (systems/README.md).
- Backchannels where the judge predicts one: at each 40 ms step of the caller's turn, in its pauses
  and while the caller speaks (37 % of Switchboard listeners' backchannels start in the speaker's
  speech, most in an IPU's last 0.4 s), with the hazard the judge's future-activity head gives for a
  short contribution of its own (VAP's backchannel prediction) times a gain for each, fitted to the
  listeners' rates at those offsets (`backchannel_gain`, `backchannel_in_speech_gain`; the judge
  reading the listener's channel without their backchannels, as the system's own is before it
  backchannels); not in a pause whose turn end is likelier than not; tokens drawn at random from
  `backchannels`.
- Overlap while it speaks (systems.overlap_policy, a state machine of its own): caller speech as loud as their own voice (within `background_db`)
  pauses the output after `overlap_pause_ms`. A shorter overlap than `overlap_yield_ms` (the 75th
  percentile of Switchboard backchannel durations, 0.48 s) is decided by its words as soon as it
  ends: a backchannel ("yeah", "uh-huh") or no words (a cough) and the reply resumes where it
  paused; other words ("hold on") and it yields and listens to the new turn. At `overlap_yield_ms`
  the words so far are heard: a backchannel said slowly ("mm-hmm" of 0.6 s) is talked over, the
  reply going on at once as people's do; other words wait for the overlap's end, when all its
  words decide (a part of a backchannel may be misheard), the reply staying paused; at
  `overlap_yield_max_ms` (their 99th percentile, 1.0 s) it yields whatever the words. Whisper
  reads overlaps with a prompt spelling backchannels (`overlap_prompt`): unprompted it hears
  most synthetic "mm-hmm"s as words. Quieter voices are someone else's (background speech) and
  are not listened to; the level is judged on the first `overlap_pause_ms` and again, on more of
  it, before yielding (a background voice may begin with a loud syllable: "Honey, did you ...").

Settings: PredictiveSettings (the cascade's, plus the keys below).
"""

from __future__ import annotations

import math
import random
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Self

import numpy as np

from judge.turn_end import JUDGE_AT_S, TurnEndModel, load_turn_end_model
from speech.smart_turn import SmartTurn
from systems.base import BLOCK, SAMPLE_RATE, AudioQueue, SystemError_
from systems.cascaded import CascadedSettings
from systems.embedded import EmbeddedSystem
from systems.events import EventKind
from systems.lexical_completion import load_lexical_completion
from systems.overlap_policy import OverlapPolicy, Resume, Yield, mean_db
from systems.reply_worker import trim_leading_silence
from systems.stages import TurnTakingPredictor
from systems.turn_end_cues import TurnEndBelief, TurnEndCues, turn_end_belief

STEP_BLOCKS = 2  # decisions every 40 ms (two 20 ms blocks, two judge frames)
AUDIBLE = 0.01  # an output block with a sample louder than this is the system's speech (for the judge)
SHORT_ACTIVITY_S = 0.6  # the judge's short-activity probability covers the next 600 ms
FALLING_BELOW = 0.9  # P(speech) of the frame before a quiet end: a fall over two frames, not a dip inside a word
RESUME_LEAD_S = 0.03  # a resumed reply keeps this much of the quiet before its next sound


@dataclass(frozen=True)
class PredictiveSettings(CascadedSettings):
    """The `predictive` kind's settings: every cascade setting (its endpointer's `min_silence_ms`
    and `barge_in` are not used: predictions decide), and these.
    How each value was chosen: docs/dialogue-systems.md#predictive."""

    min_speech_ms: float = 300.0  # ms: a shorter caller utterance is not a turn ("yes" is ~0.3 s)
    min_gap_ms: float = 60.0  # ms of VAD silence before the turn may be taken (~200 ms after the speech)
    speculate_below: float = 0.7  # P(speech) under which the reply is prepared (~60 ms before VAD silence)
    quiet_end_db: float | None = 10.0  # dB under the caller's speech level at which a fading frame ends their speech (None: the VAD's own end)
    shift_threshold: float = 0.8  # P(turn end) at which the turn is taken (cutting in 4 times as bad as waiting)
    max_silence_ms: float = 4000.0  # ms: a silence this long ends the turn whatever the prediction
    lexical_completion: bool = True  # unfinished sentences hold the floor (see the module docstring)
    completion_veto_floor: float | None = -3.0  # log-odds <= 0: the most the completion cue lowers the turn end's odds (None: no limit)
    question_end: bool = True  # a finished question is evidence of a turn end (see the module docstring)
    question_cue: bool = True  # the turn-end model's P(question) of the whole transcript as an input
    smart_turn_weight: float = 0.14  # power on Smart Turn's odds in the turn's P(turn end) (both 0: not loaded)
    acknowledge_smart_turn_weight: float = 1.0  # the same in the acknowledgement's P(turn end)
    acknowledge_smart_turn_lowers: bool = False  # whether a Smart Turn read under 0.5 lowers it (False: only raises)
    smart_turn_after_ms: float = 40.0  # ms of VAD silence before Smart Turn is read (~40 ms a read)
    smart_turn_again_ms: float | None = 200.0  # ms of VAD silence at a second read, for the acknowledgement (None: none)
    openers: tuple[str, ...] = ("well,", "okay,", "so,", "let's see,")  # () : no opener
    acknowledge_above: float | None = 0.5  # P(turn end) at which an acknowledgement is said (None: never)
    acknowledge_within_ms: float = 450.0  # ms of VAD silence after which a pause gets no acknowledgement
    acknowledgements: tuple[str, ...] = ("okay.", "yeah.", "right.")  # drawn at random
    backchannels: tuple[str, ...] = ("yeah.", "right.", "uh huh.", "okay.")  # drawn at random, as Piper says them
    backchannel_min_turn_s: float = 1.0  # s of caller speech since the turn began or the last backchannel
    backchannel_max_turn_end: float = 0.5  # P(turn end) at or over which a pause gets no backchannel
    backchannel_gain: float = 1.50  # times the judge's backchannel hazard in the caller's pauses (0: never)
    backchannel_in_speech_gain: float = 0.70  # the same while the caller speaks
    overlap_pause_ms: float = 160.0  # ms of caller speech over the reply that pause it
    overlap_yield_ms: float = 480.0  # ms of overlap at which its words so far are heard
    overlap_yield_max_ms: float = 1000.0  # ms of overlap at which it yields whatever the words
    overlap_prompt: str | None = "Mm-hmm. Uh-huh. Yeah. Right. Okay."  # Whisper's prompt for overlaps (None: none)
    overlap_short_ms: float = 480.0  # ms: a shorter overlap resumes before its words are heard (Switchboard BC p75)
    talk_over_backchannels: bool = True  # a backchannel heard at overlap_yield_ms: the reply goes on at once
    overlap_end_ms: float = 60.0  # ms of caller silence that end an overlap (then its words decide)
    background_db: float = 6.0  # dB: overlapping speech this much quieter than the caller's voice is not theirs
    judge_checkpoint: str | None = None  # the voice-activity judge (None: the packaged one)
    turn_end_model: str | None = None  # judge.turn_end's model file (None: the packaged one)
    seed: int | None = None  # backchannel and opener draws (None: a fresh draw per call)

    @classmethod
    def from_config(cls, config: dict) -> Self:
        settings = super().from_config(config)
        above = settings.acknowledge_above
        if above is not None and (isinstance(above, bool) or not isinstance(above, (int, float)) or not 0 < above <= 1):
            raise SystemError_(f"acknowledge_above must be a probability in (0, 1] or null, got {above!r}")
        if not isinstance(settings.acknowledge_smart_turn_lowers, bool):
            raise SystemError_("acknowledge_smart_turn_lowers must be true or false, "
                               f"got {settings.acknowledge_smart_turn_lowers!r}")
        if settings.acknowledge_within_ms < 0:
            raise SystemError_(f"acknowledge_within_ms must be 0 or more, got {settings.acknowledge_within_ms!r}")
        quiet = settings.quiet_end_db
        if quiet is not None and (isinstance(quiet, bool) or not isinstance(quiet, (int, float)) or quiet <= 0):
            raise SystemError_(f"quiet_end_db must be a positive number of dB or null, got {quiet!r}")
        floor = settings.completion_veto_floor
        if floor is not None and (isinstance(floor, bool) or not isinstance(floor, (int, float)) or floor > 0):
            raise SystemError_(f"completion_veto_floor must be a log-odds of 0 or less, or null, got {floor!r}")
        if not settings.overlap_pause_ms <= settings.overlap_yield_ms <= settings.overlap_yield_max_ms:
            raise SystemError_("overlap_pause_ms <= overlap_yield_ms <= overlap_yield_max_ms is required, got "
                               f"{settings.overlap_pause_ms}, {settings.overlap_yield_ms}, "
                               f"{settings.overlap_yield_max_ms}")
        return replace(settings, openers=tuple(settings.openers), backchannels=tuple(settings.backchannels),
                       acknowledgements=tuple(settings.acknowledgements))


_CLIPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # voice -> {text: backchannel or opener clip}


# The judge's modules load torch: imported by the first predictive call, not by every process that
# lists the system kinds (the app, the CLIs).
@lru_cache(maxsize=4)
def _judge_model(path: str | None):
    from judge.model import load_checkpoint

    return load_checkpoint(path)


def _streaming_judge(path: str | None):
    from judge.streaming import StreamingJudge

    return StreamingJudge(_judge_model(path))


@lru_cache(maxsize=1)
def _smart_turn() -> SmartTurn:
    return SmartTurn()


@lru_cache(maxsize=4)
def _turn_end_model(path: str | None) -> TurnEndModel:
    return load_turn_end_model(path)


def _level_db(block: np.ndarray) -> float:
    return 10 * math.log10(float(np.mean(block.astype(np.float64) ** 2)) + 1e-12)


class PredictiveSystem(EmbeddedSystem):
    """The stages the cascade has, the turn-taking judge, and two policies: when the caller's turn
    ends (here, every 40 ms of their pauses) and what an overlap means (systems.overlap_policy)."""

    settings_class = PredictiveSettings

    def __init__(self, config: dict, on_event=None, components=None, settings=None):
        super().__init__(config, on_event, components, settings, on_transcript=self._heard)
        s = self.settings
        self.judge: TurnTakingPredictor = _streaming_judge(s.judge_checkpoint)
        self.turn_end = _turn_end_model(s.turn_end_model)
        self.smart_turn = _smart_turn() if s.smart_turn_weight or s.acknowledge_smart_turn_weight else None
        self.completion = (load_lexical_completion(None, s.data_root) if s.lexical_completion or s.question_end
                           else None)
        self.rng = random.Random(s.seed)
        self.backchannel_out = AudioQueue()
        # Synthesized once per call: a backchannel or an opener must come at once, not after TTS.
        self._backchannel_clips = [(text, self._clip(text)) for text in s.backchannels]
        self._opener_clips = [(text, self._clip(text)) for text in s.openers]
        self._acknowledgement_clips = [(text, self._clip(text)) for text in s.acknowledgements]
        self._caller_levels: deque[float] = deque(maxlen=250)  # dB of the caller's last 5 s of speech in the clear
        self.overlaps = OverlapPolicy(s, self._caller_levels, self._hear_overlap_from, self.emit)
        self._init_listening()

    def _init_listening(self) -> None:
        """The caller's side of the call beyond the utterance (systems.embedded), in samples of mic audio."""
        self._blocks = 0
        self._recent = np.zeros(0, dtype=np.float32)  # the last 2 s of the caller's audio
        self._caller_active = self._system_active = False
        self._vad_p = self._vad_p_before = 0.0  # the VAD's last P(speech), and the one before it
        self._quiet_ended = False  # the caller's speech was ended by `_quiet_end`, not yet by the VAD
        self._block_levels: deque[float] = deque(maxlen=2)  # dB of the caller's last two blocks (40 ms)
        self._transcripts: dict[int, str] = {}  # turn -> what the speculative ASR heard
        # The turn's words up to a pause it went on after: (utterance blocks they cover, words), and
        # the speculation that may supply them (its turn, its blocks). A long turn is then recognised
        # from its last pause on, not from its start: on 30-50 s of a monologue the packaged Whisper
        # took 0.6-0.97 s at every pause, and every decision and backchannel waited for it.
        self._heard_part: tuple[int, str] | None = None
        self._dropped: tuple[int, int] | None = None
        self._speculated_blocks = 0
        self._smart_turn_p: dict[int, float] = {}  # turn -> Smart Turn's P(complete) at its end
        self._smart_turn_again: dict[int, float] = {}  # turn -> its second read (acknowledgements only)
        self._smart_turn_again_asked = -1
        self._smart_turn_asked = (-1, 0.0)  # (turn, the caller's VAD silence in s) of Smart Turn's last read
        self._sentence_ends: dict[int, dict] = {}  # turn -> the language model's P(".", "?", "!" next)
        self._judge_p_t: float | None = None
        self._acknowledged = -1  # the speculative turn whose pause had an acknowledgement
        self._since_backchannel = 0  # caller speech samples since the turn began or the last backchannel
        self._holding_floor = False  # the turn was taken and the reply has not finished
        self._opener_left: int | None = None  # samples of the opener still to play; then the reply's own audio

    def _clip(self, text: str) -> np.ndarray:
        voice = self.stages.voice
        clips = _CLIPS.setdefault(voice, {})  # a voice says it the same way in every call: synthesised once
        if text not in clips:
            audio = trim_leading_silence(np.concatenate(list(voice.synthesize(text))))
            audible = np.flatnonzero(np.abs(audio) > AUDIBLE)
            clips[text] = audio[: int(audible[-1]) + int(0.03 * SAMPLE_RATE)] if len(audible) else audio
        return clips[text]

    # audio in (the call's thread, every 20 ms)

    def receive(self, block: np.ndarray) -> None:
        s = self.settings
        block = np.asarray(block, dtype=np.float32)
        self._received += len(block)
        self._blocks += 1
        for p in self.vad.push(block):
            # after a quiet end, speech again only at P(speech) >= speculate_below, until P falls to the VAD's own end
            onset, end = (s.speculate_below if self._quiet_ended else s.vad_threshold), s.vad_threshold - 0.15
            self._caller_active = p >= onset or (self._caller_active and p >= end)
            self._quiet_ended = self._quiet_ended and p >= end
            self._vad_p_before, self._vad_p = self._vad_p, p
        level = _level_db(block)
        self._block_levels.append(level)
        if self._caller_active and self._quiet_end():
            self._caller_active, self._quiet_ended = False, True
        self.judge.push(self._caller_active, self._system_active)
        self._recent = np.concatenate([self._recent, block])[-2 * SAMPLE_RATE:]
        if self._speaking():
            self._overlapped(level)
        else:
            self._listen(level)
        if self._utterance is not None:
            self._utterance.append(block)
        pad = int(s.speech_pad_ms * SAMPLE_RATE / 1000)
        self._history_audio = self._recent[-pad:]

    def _quiet_end(self) -> bool:
        """Whether the caller's speech has ended before the VAD says so: P(speech) is falling (under
        `speculate_below`, the frame before under FALLING_BELOW) and their last 40 ms are
        `quiet_end_db` under their speech's level. In a room with noise Silero hears the
        reverberation as speech 0.20-0.36 s after the last word, while the level falls 10 dB within
        40 ms of it; in clean speech P dips under 0.7 for a frame inside words, and the level alone
        falls 10 dB inside words (docs/dialogue-systems.md#predictive)."""
        s = self.settings
        if (s.quiet_end_db is None or self._vad_p >= s.speculate_below or self._vad_p_before >= FALLING_BELOW
                or len(self._caller_levels) < 10):
            return False
        return mean_db(self._block_levels) <= mean_db(self._caller_levels) - s.quiet_end_db

    def _speaking(self) -> bool:
        """The system holds the floor: its reply is queued, playing, paused or still being made."""
        if len(self.replies.out) or self.overlaps.paused:
            return True
        making = self.replies.making_released
        if not making:
            self._holding_floor = False
        return self._holding_floor and making

    # the caller has the floor: when does their turn end?

    def _listen(self, level: float) -> None:
        if self._utterance is None:
            if self._caller_active:
                self._begin_utterance()
                self._caller_levels.append(level)
        elif self._caller_active:
            self._caller_speaks(level)
        else:
            self._caller_pauses()

    def _caller_speaks(self, level: float) -> None:
        s = self.settings
        long_enough = self._speech_samples >= s.min_speech_ms * SAMPLE_RATE / 1000
        after_pause = self._silence_samples > 0
        resumed = after_pause or self._vad_p >= s.speculate_below
        self._speech_samples += BLOCK
        self._since_backchannel += BLOCK
        self._silence_samples = 0
        self._judge_p_t = None
        self._caller_levels.append(level)
        if self._speculated and resumed:  # the caller went on: drop the speculative reply
            if after_pause:  # its words, once heard, are kept
                self._dropped = (self.replies.live, self._speculated_blocks)
            self.replies.drop_turn()
            self._speculated = False
            self.emit(EventKind.SPECULATION_DROPPED)
        elif not self._speculated and long_enough and self._vad_p < s.speculate_below:
            self._speculate()  # the speech is fading: the VAD calls it silence ~60 ms later
        if not self._blocks % STEP_BLOCKS:
            self._maybe_backchannel(s.backchannel_in_speech_gain)  # a continuer while they speak

    def _caller_pauses(self) -> None:
        s = self.settings
        self._silence_samples += BLOCK
        silence_s = self._silence_samples / SAMPLE_RATE
        if self._speech_samples < s.min_speech_ms * SAMPLE_RATE / 1000:
            if silence_s * 1000 >= s.max_silence_ms or silence_s >= 1.0:
                self._utterance = None  # a click or a breath, not a turn
            return
        if not self._speculated:
            self._speculate()
        self._read_cues(silence_s)
        if self._blocks % STEP_BLOCKS:
            return
        text = self._transcripts.get(self.replies.live)
        if text is not None and not text.strip():
            # the recogniser heard no words (a cough, a noise): nothing to answer
            self._utterance, self._speculated = None, False
            return
        self._decide(text, silence_s)

    def _read_cues(self, silence_s: float) -> None:
        """Ask for the cues read at set times into the pause: Smart Turn's two reads, the judge's P(T)."""
        s, turn = self.settings, self.replies.live
        if (self.smart_turn is not None and self._smart_turn_asked[0] != turn
                and silence_s * 1000 >= s.smart_turn_after_ms):
            self._smart_turn_asked = (turn, silence_s)
            self._ask_smart_turn(self._smart_turn_p)
        elif (self.smart_turn is not None and s.smart_turn_again_ms is not None and s.acknowledge_above is not None
              and self._smart_turn_again_asked != turn and silence_s * 1000 >= s.smart_turn_again_ms):
            self._smart_turn_again_asked = turn
            self._ask_smart_turn(self._smart_turn_again)
        if self._judge_p_t is None and silence_s >= JUDGE_AT_S - 1e-9:
            self._judge_p_t = self.judge.prob("T")

    def _decide(self, text: str | None, silence_s: float) -> None:
        """This 40 ms step of the pause: take the turn, acknowledge, backchannel, or wait."""
        s, turn = self.settings, self.replies.live
        cues = TurnEndCues(text, self._judge_p_t, self._smart_turn_p.get(turn), self._smart_turn_again.get(turn),
                           self._sentence_ends.get(turn), silence_s)
        belief = turn_end_belief(self.turn_end, s, cues)
        heard = text is not None and (self.smart_turn is None or cues.smart_turn is not None)
        if silence_s * 1000 >= s.max_silence_ms or (
                heard and silence_s * 1000 >= s.min_gap_ms and belief.p_end >= s.shift_threshold):
            self._take_turn(belief, cues)
        elif (heard and s.acknowledge_above is not None and belief.p_acknowledge >= s.acknowledge_above
              and self._judge_p_t is not None):  # not before the judge is read: the "okay" would be in its input
            self._maybe_acknowledge(belief.p_acknowledge, silence_s)
        elif heard and belief.p_end < s.backchannel_max_turn_end and self._silence_samples >= 0.08 * SAMPLE_RATE:
            self._maybe_backchannel(s.backchannel_gain)  # not before the cues are read (not after a question)

    def _speculate(self) -> None:
        """Recognise (and reply to) the utterance so far: from its last pause on where the words
        before it were heard."""
        if self._dropped is not None and self._dropped[0] in self._transcripts:
            turn, blocks = self._dropped
            self._heard_part, self._dropped = (blocks, self._transcripts[turn]), None
        start, before = self._heard_part or (0, "")
        self._speculated = True
        self._speculated_blocks = len(self._utterance)
        self.replies.prepare(np.concatenate(self._utterance[start:]), heard_before=before)

    def _take_turn(self, belief: TurnEndBelief, cues: TurnEndCues) -> None:
        acknowledged = self._acknowledged == self.replies.live  # it opens the reply: no opener after it
        choose_opener = (lambda: self.rng.choice(self._opener_clips)) if self._opener_clips and not acknowledged else None
        opener = self.replies.release(choose_opener)
        self._holding_floor = True
        self._opener_left = len(opener[1]) if opener else None
        ends, complete = cues.sentence_ends, cues.smart_turn
        self.emit(EventKind.TURN_END, p_turn_end=round(belief.p_end, 3), words=" ".join(belief.words or ()),
                  silence_s=round(cues.silence_s, 3),
                  judge_p_t=None if self._judge_p_t is None else round(self._judge_p_t, 3),
                  smart_turn=None if complete is None else round(complete, 3),
                  smart_turn_read_s=None if complete is None else round(self._smart_turn_asked[1], 3),
                  p_sentence_end=None if ends is None else round(sum(ends.values()), 4),
                  p_question=None if ends is None else round(ends["?"], 4),
                  speech_s=round(self._speech_samples / SAMPLE_RATE, 3), opener=opener[0] if opener else None,
                  acknowledged=acknowledged)
        self._utterance, self._speculated = None, False

    def _maybe_acknowledge(self, p_end: float, silence_s: float) -> None:
        """A likely turn end, not yet a sure one: say "okay." now (once in this pause and within its
        first `acknowledge_within_ms`, not within a second of the caller's speech after a
        backchannel), and take the turn if it becomes sure."""
        s = self.settings
        if (not self._acknowledgement_clips or self._acknowledged == self.replies.live or len(self.backchannel_out)
                or silence_s * 1000 > s.acknowledge_within_ms
                or self._since_backchannel < s.backchannel_min_turn_s * SAMPLE_RATE):
            return
        text, clip = self.rng.choice(self._acknowledgement_clips)
        self.backchannel_out.put(clip)
        self._acknowledged = self.replies.live
        self._since_backchannel = 0
        again = self._smart_turn_again.get(self.replies.live)
        self.emit(EventKind.BACKCHANNEL, text=text, p_turn_end=round(p_end, 3), silence_s=round(silence_s, 3),
                  smart_turn_again=None if again is None else round(again, 3), acknowledgement=True)

    def _maybe_backchannel(self, gain: float) -> None:
        """A backchannel at this 40 ms step with the judge's hazard of a short contribution times `gain`."""
        s = self.settings
        if (not s.backchannels or gain <= 0 or self._since_backchannel < s.backchannel_min_turn_s * SAMPLE_RATE
                or len(self.backchannel_out)):
            return
        p_short = self.judge.p_short_activity(1)
        hazard = 1.0 - (1.0 - min(p_short * gain, 0.999)) ** (STEP_BLOCKS * BLOCK / SAMPLE_RATE / SHORT_ACTIVITY_S)
        if self.rng.random() < hazard:
            text, clip = self.rng.choice(self._backchannel_clips)
            self.backchannel_out.put(clip)
            self._since_backchannel = 0
            self.emit(EventKind.BACKCHANNEL, text=text, p_short=round(p_short, 3), in_speech=self._caller_active)

    # the system has the floor: what does the caller's speech over it mean?

    def _overlapped(self, level: float) -> None:
        decided = self.overlaps.step(self._caller_active, level, self._received)
        if isinstance(decided, Resume):
            self._resume(decided)
        elif isinstance(decided, Yield):
            self._yield(decided)

    def _resume(self, decided: Resume) -> None:
        # Paused between two words, it goes on with the next one: the pause was already longer
        # than the reply's own (a backchannel's pause should not read as the system stopping).
        skipped = self.replies.out.skip_quiet(AUDIBLE, keep=int(RESUME_LEAD_S * SAMPLE_RATE), most=SAMPLE_RATE)
        self.emit(EventKind.RESUMED, overlap_s=round(decided.overlap / SAMPLE_RATE, 3), words=decided.words,
                  skipped_s=round(skipped / SAMPLE_RATE, 3), talked_over=decided.over)

    def _yield(self, decided: Yield) -> None:
        dropped = self.replies.stop_speaking()
        self._holding_floor = False
        self.emit(EventKind.YIELDED, dropped_s=round(dropped / SAMPLE_RATE, 3),
                  overlap_s=round(decided.speech / SAMPLE_RATE, 3), why=decided.why, words=decided.words)
        # the new turn began with the overlap: keep its audio from there
        pad = int(self.settings.speech_pad_ms * SAMPLE_RATE / 1000)
        keep = min(len(self._recent), self._received - decided.start + pad)
        self._begin_utterance()
        self._utterance = [self._recent[-keep:-BLOCK].copy()]
        self._speech_samples, self._silence_samples = decided.speech, decided.quiet

    def _hear_overlap_from(self, key, start: int) -> None:
        """Recognise the caller's audio from sample `start` (and 0.1 s before it) to now, in its own
        thread, into the overlap policy's `words[key]`."""
        audio = self._recent[-min(len(self._recent), self._received - start + int(0.1 * SAMPLE_RATE)):].copy()
        threading.Thread(target=self._hear_overlap, args=(key, audio), daemon=True, name="overlap-asr").start()

    def _hear_overlap(self, key, audio: np.ndarray) -> None:
        try:
            text = self.stages.recogniser.transcribe(audio, self.settings.overlap_prompt)
        except Exception as e:  # a failing model must not leave the reply paused
            self.emit(EventKind.ERROR, message=f"{type(e).__name__}: {e}")
            text = ""
        self.overlaps.words[key] = text

    def _begin_utterance(self) -> None:
        super()._begin_utterance()
        self._since_backchannel = 0
        self._judge_p_t = None
        self._heard_part = self._dropped = None

    # the reply worker's and the cue readers' threads

    def _heard(self, turn: int, text: str) -> None:
        if self.completion is not None:  # before the transcript: a decision reads both or neither
            try:
                self._sentence_ends[turn] = self.completion.sentence_ends(text)
            except Exception as e:  # without the cue the other cues still decide
                self.emit(EventKind.ERROR, message=f"lexical completion: {type(e).__name__}: {e}")
        self._transcripts[turn] = text

    def _ask_smart_turn(self, into: dict) -> None:
        """Smart Turn's read of the utterance so far, in its own thread, into `into` (turn -> P)."""
        threading.Thread(target=self._hear_smart_turn, args=(self.replies.live, np.concatenate(self._utterance), into),
                         daemon=True, name="smart-turn").start()

    def _hear_smart_turn(self, turn: int, audio: np.ndarray, into: dict) -> None:
        started = time.monotonic()
        try:
            into[turn] = min(max(self.smart_turn.predict([audio])[0], 1e-3), 1 - 1e-3)
        except Exception as e:  # without the cue the words and the judge still decide
            self.emit(EventKind.ERROR, message=f"Smart Turn: {type(e).__name__}: {e}")
            into[turn] = 0.5
        # logged with its time: a decision waits for the read, and a busy machine makes it late
        self.emit(EventKind.SMART_TURN, p_complete=round(into[turn], 3), read_s=round(time.monotonic() - started, 3),
                  turn=turn, again=into is self._smart_turn_again)

    # audio out (the call's thread, every 20 ms)

    def send(self) -> np.ndarray | None:
        paused = self.overlaps.paused
        if not paused and len(self.backchannel_out):
            # a backchannel or acknowledgement under way is said to its end before the reply starts
            block = self.backchannel_out.take(BLOCK)
            self._system_active = bool(np.max(np.abs(block)) > AUDIBLE)
            return block
        block = None if paused else self.replies.take()
        if block is not None and self._opener_left is not None:
            if self._opener_left > 0:
                self._opener_left -= BLOCK
            else:  # the opener has been played: this is the reply's own first audio
                self._opener_left = None
                self.emit(EventKind.REPLY_AUDIO_START)
        if block is None:
            block = self.backchannel_out.take(BLOCK)
        self._system_active = block is not None and bool(np.max(np.abs(block)) > AUDIBLE)
        return block
