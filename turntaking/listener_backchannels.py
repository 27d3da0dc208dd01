"""Backchannels told from what the listener did, for conversations whose words an ASR wrote.

A transcript's words are what was said, so there a backchannel is a listed phrase
(`turntaking.backchannel_words.is_backchannel_phrase`). An ASR's words are not: Whisper was trained to write
clean text and leaves most "uh-huh"s and "um-hum"s out or mishears them ("and then", "the m"), so
a listed word cannot be the gate. Here the listener's behaviour decides and the words can only
overrule it:

- the vocalization (one IPU of the listener) lasts at most `max_s`;
- it lies inside the other speaker's turn (checked by `detect_events`, as for transcripts), and
  the speaker keeps the floor: the speaker talks for at least `min_hold_s` after it before the
  listener speaks again;
- its words do not show it is speech, as more than `max_words` words would, or more than
  `max_content_words` words that are neither function words (`data/function_words.txt`) nor
  listed backchannel words (content words, and question words such as "what" or "why"). A listed
  phrase is a candidate whatever its length.

The values were chosen on rendered Switchboard training conversations and checked on
validation conversations in other voices and in noise: docs/pipeline-bias.md, reproduced by
`python -m analysis pipeline-bias`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from turntaking.activity import Word
from turntaking.backchannel_words import backchannel_form
from turntaking.segment import Segment


@dataclass(frozen=True)
class ListenerRule:
    max_s: float = 0.6  # s: a longer vocalization is speech, whatever its words
    min_hold_s: float = 1.0  # s: the speaker's speech after it, before the listener speaks again
    max_words: int = 2  # more ASR words than this: speech
    max_content_words: int = 1  # more content words than this: speech (Whisper writes hums as words)

    def as_dict(self) -> dict:
        return {"max_s": self.max_s, "min_hold_s": self.min_hold_s, "max_words": self.max_words,
                "max_content_words": self.max_content_words}


@lru_cache(maxsize=1)
def function_words() -> frozenset[str]:
    """The packaged function words, lower case."""
    text = resources.files("turntaking").joinpath("data/function_words.txt").read_text()
    return frozenset(w for line in text.splitlines() for w in line.split("#", 1)[0].split())


def words_show_speech(words: list[Word], phrases: frozenset[str], rule: ListenerRule) -> bool:
    """Whether the ASR's words of a vocalization show it is speech, not a backchannel: more than
    `rule.max_words` words, or more than `rule.max_content_words` words that are neither function
    words nor listed (`phrases` in `backchannel_form`, as `load_backchannel_list` gives them).

    >>> from turntaking.backchannel_words import load_backchannel_list
    >>> phrases = load_backchannel_list()
    >>> heard = lambda *texts: [Word(0, .1, t) for t in texts]
    >>> words_show_speech(heard("and", "then"), phrases, ListenerRule())  # a misheard hum
    False
    >>> words_show_speech(heard("anthem",), phrases, ListenerRule())  # one content word: a hum misheard too
    False
    >>> words_show_speech(heard("wait", "what"), phrases, ListenerRule())
    True
    >>> words_show_speech(heard("oh", "yeah", "right", "okay"), phrases, ListenerRule(max_words=3))
    True
    """
    if len(words) > rule.max_words:
        return True
    known = function_words()
    content = [w for w in words if _is_content_word(w.text, known, phrases)]
    return len(content) > rule.max_content_words


def _is_content_word(text: str, known: frozenset[str], phrases: frozenset[str]) -> bool:
    text = text.lower().strip("'-")
    form = backchannel_form(text)
    return bool(text) and text not in known and form not in phrases and len(form) > 1


def speaker_keeps_floor(candidate: Segment, speaker_speech: list[Segment], listener_next_start: float,
                        min_hold_s: float) -> bool:
    """Whether the speaker talks for at least `min_hold_s` between the end of the listener's
    `candidate` and the listener's next speech (`listener_next_start`, inf when none).

    >>> speaker_keeps_floor(Segment(2, 2.3), [Segment(0, 5)], listener_next_start=6, min_hold_s=0.3)
    True
    >>> speaker_keeps_floor(Segment(4.8, 5.1), [Segment(0, 5)], listener_next_start=5.4, min_hold_s=0.3)
    False
    """
    end = candidate[1]
    held = sum(max(0.0, min(e, listener_next_start) - max(s, end)) for s, e in speaker_speech)
    return held >= min_hold_s
