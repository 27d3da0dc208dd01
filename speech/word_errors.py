"""Word errors of a recogniser's words against what was said: the edit distance between word
sequences, and the words of a text as they are compared (lower case, punctuation stripped)."""

from __future__ import annotations

from speech.asr import clean_word


def compared_words(text: str) -> list[str]:
    """The words of `text` as a word error rate compares them.

    >>> compared_words("Which flowers attract bees, to a small balcony?")
    ['which', 'flowers', 'attract', 'bees', 'to', 'a', 'small', 'balcony']
    """
    return [w for w in (clean_word(raw) for raw in text.split()) if w]


def edit_distance(said: list[str], truth: list[str]) -> int:
    """Substitutions, insertions and deletions that turn `said` into `truth`.

    >>> edit_distance(["which", "flowers", "attract"], ["which", "flowers", "attract", "bees"])
    1
    """
    row = list(range(len(truth) + 1))
    for i, word in enumerate(said, 1):
        previous, row[0] = row[0], i
        for j, target in enumerate(truth, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (word != target))
    return row[-1]
