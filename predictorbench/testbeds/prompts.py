"""The prompts of the test beds: the paper's best ones (Tables 9-11) as templates; answers are
parsed into the positive / negative option, or None when neither can be read (counted as wrong)."""

from __future__ import annotations

import re

from predictorbench.testbeds.items import Item

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
