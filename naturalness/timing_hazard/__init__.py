"""The `timing-hazard` naturalness scorer (the default): the likelihood of a dialogue's whole
timing under human conversation, frame by frame, in context.

    context.py      the turn-taking context of every frame of two-speaker voice activity
    hazards.py      the model: P(a speaker starts or stops at the next frame | context), counted
                    on Switchboard and smoothed (TimingHazardModel, its .npz file)
    model_file.py   the packaged model (naturalness/checkpoints/timing_hazard.npz): load with its
                    sha256 checked, fit, save with its manifest, its recorded human reference
    scorer.py       the dialogue's score (TimingParams, TimingScore) and the scorer (TimingHazardScorer)
    reference.py    human-human naturalness by window length, recorded when the model is fitted

The model card: naturalness/checkpoints/MODEL_CARD.md.
"""

NAME = "timing-hazard"
