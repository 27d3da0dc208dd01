"""The `timing-hazard-words` scorer: timing-hazard with a lexical turn-completion cue where the
dialogue has words (naturalness/word_cue.py).

At every IPU end whose words are known, the turn-end model's P(shift | the utterance's last words,
P(question | the utterance)) (judge/checkpoints/turn_end.json: word tables counted on Switchboard
training silences, the question cue fitted on dialog acts) is evidence of who speaks next in the
mutual silence that follows: of the hazard that anyone starts, the other's share is moved by
weight * (logit P - logit of the training share of shifts) on the log-odds scale, the total kept
(`naturalness.word_cue.who_next_hazards`). And at every IPU start after a mutual silence, the
first words say whether the speaker answers the other or goes on (naturalness/first_words.py,
packaged naturalness/checkpoints/first_words.json): weight * [log P(role | first words) - log
P(role)] is added to that frame's log-likelihood, the role being who spoke last. That is what
catches an answer cut out of a dialogue: the first speaker's reply to it is left, after their own
pause. Everything else is timing-hazard's score.

Without words (a voice-activity JSON without them, or a recording read without ASR) the score is
timing-hazard's on voice activity alone, and says so: `word_cues` is None. A recording is read
with ASR (faster-whisper) so that it has words; that costs far more than the score itself. With
`--audio-cue` the recording is read without ASR (`naturalness.reports.recording_scorer`), so there
the score has the audio cue and no word cue.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

from judge.checkpoint_files import packaged_checkpoint_dir
from judge.turn_end import DEFAULT_MODEL, TurnEndModel, load_turn_end_model
from naturalness.first_words import FirstWordsTable, first_words_term, load_first_words_table, packaged_first_words_path
from naturalness.model_files import read_manifest
from naturalness.score import Score, UnscorableDialogue, require_speech
from naturalness.timing_hazard.context import FRAME_RATE, ipu_frames
from naturalness.timing_hazard.hazards import TimingHazardModel, transition_log_likelihood
from naturalness.timing_hazard.model_file import load_timing_model, packaged_model_path, recorded_reference
from naturalness.timing_hazard.scorer import TimingParams, TimingScore, score_log_likelihoods
from naturalness.turn_cue import TurnEndCue, cue_logit_shift
from naturalness.word_cue import base_rate_logit, who_next_hazards, word_cues
from speech.recordings import load_recording
from storage.files import sha256_file
from turntaking.activity import Conversation
from turntaking.events import detect_events

NAME = "timing-hazard-words"


@dataclass(frozen=True)
class WordCueParams:
    # How far the word cue moves who speaks next (log-odds per unit of logit P(shift)): 1 reads the
    # calibrated P(shift | words) as a likelihood ratio against the training share of shifts.
    # Weight and inputs chosen on training pairs (naturalness/checkpoints/MODEL_CARD.md, "What was tried").
    weight: float = 1.0
    with_question: bool = True  # P(question | utterance) as a second input of the prior
    # How much the first words after a silence count (naturalness/first_words.py): 1 would read
    # the table's log ratio as a likelihood ratio; 1.5 chosen on training pairs (MODEL_CARD.md,
    # "What was tried"). 0 leaves the term out.
    first_words_weight: float = 1.5


@dataclass(frozen=True)
class TimingWordsScore(TimingScore):
    word_cues: int | None  # IPU ends that had a word cue; None: no words, voice activity alone
    first_words: int | None  # IPU starts after a silence scored by their first words; None: no words

    scorer: ClassVar[str] = NAME


def score_timing_words(conv: Conversation, model: TimingHazardModel, turn_end: TurnEndModel,
                       first_words: FirstWordsTable, params: TimingParams = TimingParams(),
                       cue_params: WordCueParams = WordCueParams(),
                       audio_cues: Sequence[TurnEndCue] | None = None) -> TimingWordsScore:
    va = ipu_frames(conv, params.events)
    if va.shape[1] < 2:
        raise UnscorableDialogue(f"{conv.source or 'dialogue'}: too short to score ({conv.duration:.2f} s)")
    # the events both word cues read, found once
    detected = detect_events(conv, params.events) if conv.words is not None else None
    cues = word_cues(conv, turn_end, cue_params.with_question, params.events, detected)
    audio = cue_logit_shift(list(audio_cues), va, FRAME_RATE, params.cue_weight) if audio_cues else None
    flips, h = model.frame_hazards(va, audio)
    if cues:
        h = who_next_hazards(h, cues, va, FRAME_RATE, cue_params.weight, base_rate_logit(turn_end))
    ll, _ = transition_log_likelihood(flips, h)
    starts = first_words_term(conv, first_words, va.shape[1], FRAME_RATE, params.events, detected)
    if starts is not None and cue_params.first_words_weight:
        ll = ll + cue_params.first_words_weight * starts[0]
    score = score_log_likelihoods(ll, flips.sum(axis=0), params)
    return TimingWordsScore(**asdict(score), word_cues=None if cues is None else len(cues),
                            first_words=None if starts is None else starts[1])


@dataclass(frozen=True)
class TimingHazardWordsScorer:
    """The `timing-hazard-words` scorer with its models (naturalness.score.Scorer)."""

    model: TimingHazardModel
    model_path: Path
    turn_end: TurnEndModel
    turn_end_path: Path
    first_words: FirstWordsTable
    first_words_path: Path
    settings: TimingParams = TimingParams()
    cue_settings: WordCueParams = WordCueParams()

    name: ClassVar[str] = NAME
    units: ClassVar[str] = ("nats/s (a cost: NLL plus 3.5 per start or stop, peak term; who speaks next after "
                            "IPU ends moved by the words' P(turn end); IPU starts after a silence charged by whether "
                            "their first words fit who spoke last)")
    takes_cues: ClassVar[bool] = True
    needs_judge: ClassVar[bool] = False
    reads_words: ClassVar[bool] = True  # uses the dialogue's words where it has them

    @classmethod
    def load(cls, model_file=None) -> TimingHazardWordsScorer:
        """`model_file` replaces the timing model; the word models are always the packaged ones."""
        path = packaged_model_path() if model_file is None else Path(model_file)
        return cls(load_timing_model(path), path, load_turn_end_model(), packaged_checkpoint_dir() / DEFAULT_MODEL,
                   load_first_words_table(), packaged_first_words_path())

    @property
    def model_file(self) -> str:
        return "packaged" if self.model_path == packaged_model_path() else str(self.model_path)

    @property
    def params(self) -> dict:
        return {**self.settings.as_dict(), "word_cue": asdict(self.cue_settings)}

    @property
    def reference(self) -> dict:
        # Switchboard windows scored with their words (the first-words table's manifest, written
        # by `fit-first-words`); the timing model's voice-activity windows where it has none.
        with_words = read_manifest(self.first_words_path).get("human_reference", {})
        return with_words.get("naturalness_by_window_s") or self.reference_without_words

    @property
    def reference_without_words(self) -> dict:
        """Switchboard windows scored on voice activity alone, as this scorer scores a dialogue
        without words (naturalness.score.dialogue_reference)."""
        return recorded_reference(self.model_path)

    def identity(self) -> dict:
        return {"scorer": self.name, "model_sha256": sha256_file(self.model_path),
                "turn_end_sha256": sha256_file(self.turn_end_path),
                "first_words_sha256": sha256_file(self.first_words_path), **self.params}

    def score(self, conversation: Conversation, cues: Sequence[TurnEndCue] | None = None) -> TimingWordsScore:
        require_speech(conversation)
        return score_timing_words(conversation, self.model, self.turn_end, self.first_words, self.settings,
                                  self.cue_settings, cues)

    def score_recording(self, path) -> Score:
        """A voice-activity JSON as it is (with its words, if any); audio through Silero and ASR."""
        return self.score(load_recording(path, words=True))

    def score_recordings(self, paths) -> Iterator[Score]:
        return (self.score_recording(p) for p in paths)
