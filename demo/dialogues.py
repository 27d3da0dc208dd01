"""The demo's scripts, written for it: four everyday two-person conversations (the sources of
the annotators' clip pairs) and, per embedded system, what a scripted caller says in a call.

Timings follow human conversation: answers 0.1-0.5 s after the other stops, a few slight
overlaps (negative `after_s`), pauses of 0.4-0.9 s inside a turn (the same speaker goes on), and
backchannels ("yeah", "right") placed inside the other's longer lines. That gives the
perturbation builder every kind of candidate: clean shifts, holds, turns of 1-8 s, backchannels.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Line:
    speaker: int  # 0 or 1: the channel
    text: str
    # Start: this long after the end of the previous (non-backchannel) line; negative = overlap.
    after_s: float = 0.3
    # A backchannel: placed inside the previous line instead, at this share of its length.
    within: float | None = None


@dataclass(frozen=True)
class Dialogue:
    name: str
    topic: str
    lines: tuple[Line, ...]


DIALOGUES = (
    Dialogue("weekend-hike", "preparing for a hike", (
        Line(0, "Hey, are you still up for the hike on Saturday? I have been looking forward to it all week.", 0.5),
        Line(1, "mhm", within=0.7),
        Line(1, "Yes, definitely. I was thinking we could do the ridge trail this time.", 0.25),
        Line(0, "yeah", within=0.55),
        Line(0, "The ridge trail? Isn't that the long one with all the switchbacks near the top?", 0.3),
        Line(1, "yeah", within=0.6),
        Line(1, "It is long, about six hours, but the view from the top is really worth it.", 0.2),
        Line(0, "right", within=0.6),
        Line(1, "And we could start early, before it gets too hot.", 0.6),
        Line(0, "Okay. How early are we talking?", 0.35),
        Line(1, "Maybe seven? We could pick up coffee on the way.", 0.15),
        Line(0, "Seven works for me even though getting up at six on a Saturday is painful for someone "
                "like me.", 0.4),
        Line(1, "Great. I will bring the water and some snacks then.", -0.15),
        Line(0, "Good. Do you think I need proper boots, or are my running shoes fine?", 0.3),
        Line(1, "The top part is rocky and can be slippery after rain so boots would be much better for "
                "you.", 0.3),
        Line(1, "You can borrow my old pair if you like.", 0.5),
        Line(0, "Oh, thanks. That solves it.", 0.25),
        Line(0, "I will check the weather on Friday evening and text you.", 0.5),
        Line(1, "right", within=0.5),
        Line(1, "Perfect. If it rains we can do the lake loop instead.", 0.2),
        Line(0, "okay", within=0.6),
        Line(0, "The lake loop is nice too and it has that little cafe at the end where we could "
                "have lunch.", 0.3),
        Line(1, "yeah", within=0.45),
        Line(1, "Good idea. See you on Saturday then.", 0.25),
        Line(0, "right", within=0.5),
    )),
    Dialogue("dinner-plans", "places to eat in Manhattan", (
        Line(1, "So where do you want to eat tonight? I am starving after that long meeting.", 0.5),
        Line(0, "mhm", within=0.6),
        Line(0, "There is a new noodle place on Second Avenue that everyone keeps talking about.", 0.3),
        Line(1, "yeah", within=0.6),
        Line(1, "Is that the one with the long line outside every evening?", 0.2),
        Line(0, "That is the one. But they take reservations now, so we would not have to wait.", 0.25),
        Line(1, "okay", within=0.6),
        Line(1, "Then let us try it. What time should I book?", 0.4),
        Line(0, "right", within=0.6),
        Line(0, "Eight would be good because I have a call until half past seven that usually runs a "
                "bit over.", 0.3),
        Line(1, "Eight it is.", -0.1),
        Line(1, "Do you want to ask Sam as well? He loves noodles.", 0.7),
        Line(0, "Sure, I will message him. He might be late though, he always is.", 0.35),
        Line(1, "True. We can order some starters while we wait for him.", 0.2),
        Line(1, "They have dumplings that are supposed to be the best in the whole neighbourhood.", 0.55),
        Line(0, "Sounds like a plan. Should we walk there or take the subway?", 0.3),
        Line(1, "yeah", within=0.55),
        Line(1, "If the weather is nice, let us walk. It is only twenty minutes from here.", 0.25),
        Line(0, "okay", within=0.6),
        Line(0, "Great. I will meet you at the corner by the bakery at a quarter to eight then.", 0.3),
        Line(1, "right", within=0.55),
        Line(1, "See you there. And do not forget to message Sam.", 0.3),
        Line(0, "yeah", within=0.6),
    )),
    # Long turns heard out in silence in the middle, backchannels near both ends: the sources of
    # the excessive-backchannel pairs (2-3 extra backchannels need that many from outside a clip).
    # Pauses inside the turns around "Central Park" let a short clip (10-15 s) hold such a turn.
    Dialogue("city-trip", "sightseeing in New York", (
        Line(0, "So how was your trip to New York? I want to hear everything about it.", 0.5),
        Line(1, "It was amazing. We walked across the Brooklyn Bridge on the very first morning.", 0.3),
        Line(0, "oh yeah", within=0.55),
        Line(1, "Then we took the ferry to see the Statue of Liberty up close.", 0.5),
        Line(0, "all right", within=0.5),
        Line(1, "And in the evening we went up the Empire State Building.", 0.45),
        Line(0, "i see", within=0.5),
        Line(0, "That sounds like a very full first day. Were you not exhausted after all that walking?", 0.3),
        Line(1, "okay", within=0.6),
        Line(1, "Completely exhausted. My feet hurt so much that I took a taxi back to the hotel that "
                "night instead of the subway we had planned to take.", 0.35),
        Line(0, "I would have done exactly the same thing.", 0.4),
        Line(0, "Those long days in a big city are much harder on your feet than any hike in the "
                "mountains.", 0.6),
        Line(1, "That is true. The next day we just sat in Central Park most of the afternoon.", 0.35),
        Line(0, "Did you have good weather the whole time you were there?", 0.4),
        Line(1, "Mostly yes.", 0.3),
        Line(1, "It only rained on the last day, so we spent that one in a museum.", 0.6),
        Line(0, "oh yeah", within=0.6),
        Line(1, "The natural history museum has a huge whale hanging from the ceiling.", 0.5),
        Line(0, "i see", within=0.55),
        Line(0, "I have seen pictures of it. I really want to go there myself next spring.", 0.3),
        Line(1, "all right", within=0.55),
        Line(1, "You should. I can send you the list of places we liked the most.", 0.3),
        Line(0, "okay", within=0.6),
    )),
    Dialogue("learning-python", "learning Python", (
        Line(0, "How is your Python course going? You started last month, right?", 0.5),
        Line(1, "It is going well. This week we learned about lists and loops.", 0.3),
        Line(0, "yeah", within=0.6),
        Line(1, "The loops took me a while, but I think I understand them now.", 0.55),
        Line(0, "right", within=0.55),
        Line(0, "Loops are tricky at first. Did you write any small programs yet?", 0.25),
        Line(1, "okay", within=0.65),
        Line(1, "I wrote one that sorts my music files into folders by artist because my collection "
                "has been a mess for years.", 0.3),
        Line(0, "That is actually useful. Did it work the first time?", 0.2),
        Line(1, "Not at all. It put everything into one folder called none.", 0.3),
        Line(0, "That happens to everyone. Some of your files probably have no artist name at all so "
                "the program did not know where to put them.", 0.35),
        Line(1, "Exactly, some files had no tags at all, so I had to check for that.", -0.12),
        Line(0, "If you want, I can show you how to read the tags with a library.", 0.3),
        Line(1, "yeah", within=0.6),
        Line(0, "It saves a lot of work compared to doing it by hand.", 0.6),
        Line(1, "That would be great. Maybe on Thursday after work?", 0.25),
        Line(0, "right", within=0.6),
        Line(0, "Thursday is fine. Bring your laptop and we will go through your program together "
                "step by step.", 0.3),
        Line(1, "okay", within=0.6),
        Line(1, "Thank you so much. See you on Thursday.", 0.3),
        Line(0, "mhm", within=0.6),
    )),
)

# What the scripted caller says to each embedded system; the silence after each line leaves
# room for the system's reply (at most two sentences).
CALLER_GAP_S = 6.5
CALLS = (
    ("preparing for a hike", (
        "Hello! I am planning a day hike this weekend.",
        "What should I pack for a six hour hike?",
        "Thank you, that helps. Goodbye!",
    )),
    ("places to eat in Manhattan", (
        "Hi there. I am visiting New York next week.",
        "Can you recommend a good place for noodles in Manhattan?",
        "Great, thanks a lot. Bye!",
    )),
    ("a birthday present", (
        "Hello. My friend has her birthday on Friday.",
        "What could I give someone who loves cooking?",
        "Perfect, thank you. Goodbye!",
    )),
)
