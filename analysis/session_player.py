"""The session view's player of a call's recording: the browser's own audio element, with the
session and its length written beside it.

Gradio's Audio component was not used: its time readout rounds the seconds without carrying into
the minutes (299.9 s shows as 4:00, 59.8 s as 0:00), and its value is a whole WAV made from the
samples on each choice. Here the player's value names the stored recording file, which Gradio
serves behind the researcher login like any other output file.

Its value (one of):
    None                                         no session chosen, or none with a recording
    {"session": ID, "loading": True}             chosen, its recording not there yet
    {"session": ID, "length": "4:59.9", "recording": <Gradio file data of the recording>}
"""

from __future__ import annotations

import math
from pathlib import Path

# Handlebars, as gr.HTML fills it in; its values are escaped. The data attributes say which
# session is on show (a test, or a person reading the page source, can tell).
PLAYER_TEMPLATE = """{{#if value}}<div class="session-player" data-session="{{value.session}}">
{{#if value.loading}}<p class="session-player-caption">Session {{value.session}}: loading its recording…</p>
{{else}}<audio controls preload="metadata" src="{{value.recording.url}}" data-session="{{value.session}}"
  aria-label="Recording of session {{value.session}}"></audio>
<p class="session-player-caption">Recording of session {{value.session}} (both channels): {{value.length}} long</p>
{{/if}}</div>{{/if}}"""


def clock(seconds: float) -> str:
    """A length as m:ss.s (h:mm:ss.s from an hour on), to the tenth of a second: 299.96 is 5:00.0."""
    tenths = math.floor(seconds * 10 + 0.5)  # rounded once, so the carry reaches the minutes
    hours, rest = divmod(tenths, 36000)
    minutes, rest = divmod(rest, 600)
    text = f"{minutes}:{rest // 10:02d}.{rest % 10}"
    return f"{hours}:{minutes:02d}:{rest // 10:02d}.{rest % 10}" if hours else text


def loading(session_id) -> dict | None:
    """The player's value the moment a session is chosen: never the previous session's recording
    while this one's view is made."""
    return None if session_id is None else {"session": int(session_id), "loading": True}


def player_value(session_id: int, recording: Path | None, seconds: float | None) -> dict | None:
    """The player's value for a session's stored recording (None: the session has none)."""
    if recording is None or seconds is None:
        return None
    # Gradio's file data: on output Gradio copies the file into its cache and adds the URL
    return {"session": int(session_id), "length": clock(seconds),
            "recording": {"path": str(recording), "orig_name": Path(recording).name,
                          "meta": {"_type": "gradio.FileData"}}}
