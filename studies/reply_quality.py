"""Whether a dialogue system's replies answer the turns they follow, and how they sound.

Relevance: how much a turn explains its reply. The reply's mean log-likelihood per token under a
language model given its own turn, minus the mean of its log-likelihood given each other turn of
the same conversation (nats per token):

    relevance(r_i) = LL(r_i | u_i) - mean_{j != i} LL(r_i | u_j)

A reply that answers what was said ("Start at dawn, the trail gets hot by noon" to "How early
should I start?") is likelier after its own turn than after any other: relevance > 0. A reply
that fits any turn ("I'm sorry for any confusion, as a voice assistant I can't...") scores near
0, and one that answers another turn below 0. The scoring prompt is the bare turn (no system
prompt, no history), so that the measure does not move with the settings it is used to choose.
Cheap: one batch of scorings per reply with the packaged SmolLM2 (`CTranslate2LLM.log_likelihoods`).
A reply that says its turn back ("When can it go for walks?" to "When can it go for walks?") is
the likeliest of all after that turn, yet answers nothing: it is an echo (`echoes`), and its
relevance is 0, as a reply's that fits any turn. Re-ranking candidate replies by the measure
without this picked echoes (docs/dialogue-systems.md, "Replies worth hearing").
A question about the conversation itself ("What did I say my name was?", "Say that again")
is answered right by what an earlier turn holds: its reply is meant to be explained by that other
turn, and its relevance is not measured (None); the memory questions have their own count.

Beside it, what a listener hears at once: apologies ("I'm sorry", "I apologise"), assistant
disclaimers ("as an AI", "as a voice assistant", "I don't have personal opinions") and replies
over `LONG_REPLY_SENTENCES` sentences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, Sequence

from systems.language_models import CTranslate2LLM
from systems.events import EventKind
from systems.reply_prompts import asks_about_the_conversation

# "sor+y": with "sorry" suppressed the 135M model once wrote "Sorrry for the misunderstanding."
APOLOGY = re.compile(r"\b(i'?m|i am) (so |very |really |truly )?sor+y\b|\bi apologi[sz]e\b|\bmy apologies\b"
                     r"|(^|[.!?\"]\s*)sor+y\b", re.IGNORECASE)
DISCLAIMER = re.compile(
    r"\bas an? ([\w-]+ ){0,2}(ai|artificial intelligence|language model|assistant|chatbot|bot)\b"
    r"|\bi(?:'m| am) (just |only )?an? ([\w-]+ ){0,2}(ai|language model|assistant|chatbot|bot|computer program)\b"
    r"|\bi (don'?t|do not) have (personal|the ability|feelings|opinions|access)",
    re.IGNORECASE)
# A reply is compared with the turns nearest to it, at most this many (a long call's cost stays
# bounded: ~0.1 s of scoring a reply on 2 cores).
CONTRAST_TURNS = 5
# A reply is long over this many sentences (the cascade speaks one or two).
LONG_REPLY_SENTENCES = 2
# An echo: at least ECHO_FROM_TURN of the reply's words are its turn's (I and you swapped), and
# they hold at least ECHO_COVERS of the turn's words ("Saturday." to "Saturday or Sunday?" answers it).
ECHO_FROM_TURN, ECHO_COVERS = 0.8, 0.5
_CONTRACTIONS = {"'m": " am", "'re": " are", "'s": " is", "'ve": " have", "'ll": " will", "'d": " would",
                 "n't": " not"}
_SPEAKER_SWAP = {"i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself", "am": "are",
                 "you": "i", "your": "my", "yours": "mine", "yourself": "myself", "are": "am"}
_SENTENCE = re.compile(r"[^.!?]*[A-Za-z0-9][^.!?]*(?:[.!?]+|$)")


def sentence_count(text: str) -> int:
    """Sentences in `text`: runs ending at ., ! or ? (or the text's end) that hold a word.

    >>> sentence_count("Start early. The trail gets hot by noon! Bring water")
    3
    >>> sentence_count("")
    0
    """
    return len(_SENTENCE.findall(text))


def apologises(text: str) -> bool:
    """Whether `text` apologises.

    >>> apologises("I'm sorry for your loss."), apologises("Sorry, I missed that."), apologises("Not sorry.")
    (True, True, False)
    >>> apologises('I will try: "Hey there! Sorrry for the misunderstanding.')
    True
    """
    return bool(APOLOGY.search(text))


def disclaims(text: str) -> bool:
    """Whether `text` says it is an AI or an assistant, or what it lacks as one.

    >>> disclaims("As a voice assistant, I can't hike."), disclaims("I don't have personal preferences.")
    (True, True)
    >>> disclaims("My assistant booked it.")
    False
    """
    return bool(DISCLAIMER.search(text))


def _words(text: str) -> list[str]:
    text = re.sub(r"(\w)(n't|'m|'re|'s|'ve|'ll|'d)\b", lambda m: m.group(1) + _CONTRACTIONS[m.group(2)],
                  text.lower().replace("\u2019", "'"))
    return re.findall(r"[a-z0-9]+", text)


def echoes(turn: str, reply: str) -> bool:
    """Whether `reply` says `turn` back, as it is or with I and you swapped, rather than answering it.

    >>> echoes("We are getting a puppy on Friday.", "We're getting a puppy on Friday.")
    True
    >>> echoes("How old did I say my sister is turning?", "How old did you say your sister was turning?")
    True
    >>> echoes("Are you going on Saturday or Sunday?", "Saturday.")
    False
    >>> echoes("When can it go for walks?", "After its second vaccination, at about twelve weeks.")
    False
    """
    said, heard = _words(reply), set(_words(turn))
    if not said or not heard:
        return False
    from_turn = heard | {_SPEAKER_SWAP.get(w, w) for w in heard}
    own = set(said) | {_SPEAKER_SWAP.get(w, w) for w in said}
    return (sum(w in from_turn for w in said) >= ECHO_FROM_TURN * len(said)
            and len(heard & own) >= ECHO_COVERS * len(heard))


class ReplyLikelihood(Protocol):
    """A language model that scores replies: `log_likelihoods(pairs)` gives, for each (turn,
    reply), the reply's mean log-probability per token after the bare turn (nats)."""

    def log_likelihoods(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


@lru_cache(maxsize=1)
def packaged_scorer() -> ReplyLikelihood:
    """The packaged SmolLM2-135M-Instruct on CTranslate2 (converted once into the models cache),
    loaded once per process: the relevance measure's model everywhere it is reported."""
    return CTranslate2LLM(threads=1)


def relevances(model: ReplyLikelihood, turns: Sequence[str], replies: Sequence[str],
               contrasts: int = CONTRAST_TURNS) -> list[float | None]:
    """Each reply's relevance to its turn (module docstring), against the `contrasts` other turns
    nearest to it in the conversation; None for an empty reply or turn, or where the
    conversation has no other turn to compare with. One batch of scorings for the whole call."""
    if len(turns) != len(replies):
        raise ValueError(f"{len(turns)} turns but {len(replies)} replies")
    plans: list[tuple[int, int] | None] = []  # (first pair, number of pairs) per reply
    pairs: list[tuple[str, str]] = []
    for i, (turn, reply) in enumerate(zip(turns, replies)):
        others = sorted((j for j, t in enumerate(turns) if j != i and t.strip() and t != turn),
                        key=lambda j: (abs(j - i), j))[:contrasts]
        if not reply.strip() or not turn.strip() or not others:
            plans.append(None)
            continue
        plans.append((len(pairs), 1 + len(others)))
        pairs += [(turn, reply)] + [(turns[j], reply) for j in others]
    scores = model.log_likelihoods(pairs) if pairs else []
    out: list[float | None] = []
    for plan in plans:
        if plan is None:
            out.append(None)
            continue
        own, *rest = scores[plan[0]:plan[0] + plan[1]]
        out.append(own - sum(rest) / len(rest))
    return out


@dataclass(frozen=True)
class ReplyQuality:
    """One reply, as the measures see it."""

    turn: str  # what the system heard (its recogniser's transcript)
    reply: str  # what it said
    relevance: float | None  # nats per token (relevances; 0 for an echo); None: not measurable
    apology: bool
    disclaimer: bool
    sentences: int
    echo: bool = False  # it says its turn back (echoes)

    @property
    def long(self) -> bool:
        return self.sentences > LONG_REPLY_SENTENCES


@dataclass(frozen=True)
class CallReplyQuality:
    """A call's (or a set of calls') replies in a line: the figures the session view, the examiner
    and the reply benchmark print."""

    replies: int
    relevance_mean: float | None  # over the measurable replies
    apologies: int
    disclaimers: int
    long_replies: int  # over LONG_REPLY_SENTENCES sentences
    apologising_or_disclaiming: int  # replies with an apology, a disclaimer or both
    echoes: int = 0  # replies that say their turn back

    @property
    def apology_or_disclaimer_rate(self) -> float | None:
        return self.apologising_or_disclaiming / self.replies if self.replies else None

    def as_dict(self) -> dict:
        rate = self.apology_or_disclaimer_rate
        return {"replies": self.replies,
                "relevance_mean": None if self.relevance_mean is None else round(self.relevance_mean, 3),
                "apologies": self.apologies, "disclaimers": self.disclaimers, "long_replies": self.long_replies,
                "apology_or_disclaimer_rate": None if rate is None else round(rate, 3), "echoes": self.echoes}


def reply_qualities(model: ReplyLikelihood | None, turns: Sequence[str], replies: Sequence[str]) -> list[ReplyQuality]:
    """The measures of each (turn, reply) of one conversation; relevance None without a model or
    for a turn about the conversation itself (`asks_about_the_conversation`), 0 for an echo."""
    scores = relevances(model, turns, replies) if model is not None else [None] * len(replies)
    scores = [None if asks_about_the_conversation(t) else s for t, s in zip(turns, scores)]
    echoed = [echoes(t, r) for t, r in zip(turns, replies)]
    return [ReplyQuality(t, r, 0.0 if e and s is not None else s, apologises(r), disclaims(r), sentence_count(r), e)
            for t, r, s, e in zip(turns, replies, scores, echoed)]


def summarize(qualities: Sequence[ReplyQuality]) -> CallReplyQuality:
    """The call's figures from its replies' measures.

    >>> q = [ReplyQuality("Hi.", "I'm sorry. As an AI I can't. Sure.", -0.1, True, True, 3),
    ...      ReplyQuality("Where?", "The Alps.", 0.5, False, False, 1)]
    >>> summarize(q)
    CallReplyQuality(replies=2, relevance_mean=0.2, apologies=1, disclaimers=1, long_replies=1, apologising_or_disclaiming=1, echoes=0)
    """
    measured = [q.relevance for q in qualities if q.relevance is not None]
    return CallReplyQuality(len(qualities), sum(measured) / len(measured) if measured else None,
                            sum(q.apology for q in qualities), sum(q.disclaimer for q in qualities),
                            sum(q.long for q in qualities), sum(q.apology or q.disclaimer for q in qualities),
                            sum(q.echo for q in qualities))


def exchanges_from_log(events: Sequence[dict]) -> list[tuple[str, str]]:
    """(what the system heard, what it said) per answered turn of a call's timing log: a
    "transcript" event and the "reply" of the same turn (a reply cut off by the participant has
    its voiced chunks: "decided" and "reply_chunk"). Speculative transcripts that were dropped have
    no reply and are left out; so are replies to nothing heard."""
    heard: dict[int, str] = {}
    said: dict[int, list[str]] = {}
    whole: dict[int, str] = {}
    for event in events:
        kind, turn = event.get("event"), event.get("turn")
        if turn is None:
            continue
        if kind == EventKind.TRANSCRIPT:
            heard[turn] = str(event.get("text", ""))
        elif kind in (EventKind.DECIDED, EventKind.REPLY_CHUNK):
            said.setdefault(turn, []).append(str(event.get("text", "")))
        elif kind == EventKind.REPLY:
            whole[turn] = str(event.get("text", ""))
    exchanges = []
    for turn in sorted(set(whole) | set(said)):
        reply = whole.get(turn) or " ".join(said.get(turn, []))
        if heard.get(turn, "").strip() and reply.strip():
            exchanges.append((heard[turn], reply))
    return exchanges
