"""The `timing-hazard` naturalness scorer: the likelihood of a dialogue's whole timing under human
conversation, frame by frame, in context; and `timing-hazard-words` (the default), the same with
the dialogue's words where it has them (word_scorer.py; naturalness/word_cue.py,
naturalness/first_words.py), which scores a dialogue without words as timing-hazard does.

    context.py      the turn-taking context of every frame of two-speaker voice activity
    hazards.py      the model: P(a speaker starts or stops at the next frame | context), counted
                    on Switchboard and smoothed (TimingHazardModel, its .npz file)
    model_file.py   the packaged model (naturalness/checkpoints/timing_hazard.npz): load with its
                    sha256 checked, fit, save with its manifest, its recorded human reference
    scorer.py       the dialogue's score (TimingParams, TimingScore) and the scorer (TimingHazardScorer)
    reference.py    human-human naturalness by window length, recorded when the model is fitted
    word_scorer.py  timing-hazard-words: the cues of the words added to the frames' hazards and likelihoods

The model card: naturalness/checkpoints/MODEL_CARD.md.
"""

NAME = "timing-hazard"
