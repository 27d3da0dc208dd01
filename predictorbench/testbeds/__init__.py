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

    items.py       the items of both beds, built from conversations, read and written as JSONL
    prompts.py     the paper's best prompts (Tables 9-11) and the parsing of answers
    adapters.py    the audio FMs asked: any OpenAI-compatible endpoint, the random baseline
    evaluation.py  accuracy per bed and event, and the supervised judge's topline
    cli.py         `python -m predictorbench testbeds build | evaluate | topline | prompts`
"""
