"""Study configuration files (YAML or TOML) -> the database, and the order of systems a participant gets.

A study file names the dialogue systems to compare and how participants meet them:

    name: pilot
    title: Talk to two dialogue systems
    session_seconds: 300            # default 5 minutes
    min_call_seconds: 10            # a shorter call is not analysed (default: 10 s, at most half of session_seconds)
    short_calls: repeat             # a call shorter than that: "repeat" (default) or "skip" (see below)
    network_limits: {max_loss: 0.05, max_rtt_ms: 400, max_late_blocks: 25}   # the defaults (null: not checked)
    assignment: counterbalanced     # or "choice": the participant picks the next system
    topics: [...]                   # default: the paper's six topics
    consent: "..."                  # shown before anything is recorded
    instructions: "..."             # shown before each call
    completion_code: "C0DE"         # shown after the last call (default: a code per participant)
    completion_url: "https://app.prolific.com/submissions/complete?cc={code}"   # link shown with it
    could_not_take_part_code: "NOCONN"   # shown when the connection check fails (default: none)
    could_not_take_part_url: "https://app.prolific.com/submissions/complete?cc={code}"   # link shown with it
    withdrawn_code: "WITHDRAWN"     # shown to one who withdraws (Prolific: a return, not a completion)
    withdrawn_url: "https://app.prolific.com/submissions/complete?cc={code}"   # link shown with it
    consent_items:                  # optional consents beside the one to take part, each asked and stored on its own
      - {id: share_researchers, text: "My recordings may be shared with other researchers.", share: researchers}
      - {id: publish, text: "My recordings may be published.", share: public}
    retention: {identifiers_days: 30, recordings_days: 365, all_days: 1825}   # when data expires (default: never)
    max_wait_seconds: 600           # the longest wait in line for a call slot (default 10 minutes), then the could-not-take-part code
    clip_seconds: [8, 15]           # annotation clip length for `annotation build-pairs --study` (default 20-25)
    questionnaire: {after_call: [...], after_last: [...]}   # default: turn-taking items (studies/questionnaire.py)
    systems:
      - {name: cascaded, kind: cascaded, config: {llm: ..., barge_in: ignore}}
      - {name: backchannel, kind: cascade-backchannel}
      - {name: remote, kind: realtime, config: {url: "wss://box/v1/realtime", api_key_env: BOX_KEY}}

A call counts for the participant when it ended complete and its two-channel recording lasts at
least `min_call_seconds`. After a shorter one the page says so and, with `short_calls: repeat`,
asks for a call to the same system again (it stays the next one); with `skip` the participant
moves on: that system is met but its call does not count, and it is not offered again. The
completion code comes once every system of the study is met: with `repeat` every one by a call
that counts, with `skip` every one by a complete call of any length.

Each system's `config` is parsed into its kind's settings (systems.kinds) here, so a bad
key or value is refused when the file is loaded, not at a participant's call.

`apply_config` creates the study or updates it in place (systems are added or their config
replaced; systems no longer in the file stay in the database because sessions refer to them).
A system's API key is named (api_key_env / api_key_file), never written in: system configs are
stored and exported, so both refuse a literal `api_key` (systems/api_keys.py).
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields
from itertools import permutations
from pathlib import Path

import yaml
from sqlmodel import Session, select

from storage.demo import DEMO_TOPICS
from storage.models import DialogueSystem, Study
from storage.records import get_or_create_study
from studies.call_quality import NetworkLimits
from studies.questionnaire import Questionnaire, QuestionnaireError, parse_questionnaire
from systems.api_keys import key_reference_problem
from systems import SystemError_
from systems.kinds import KIND_NAMES, system_kind, system_spec
from systems.settings import SystemSettings
from turntaking.events import EventParams

DEFAULT_SESSION_SECONDS = 300
# A call shorter than this is no conversation to analyse (studies.call_quality); a study with short
# sessions gets at most half its session length as the default.
DEFAULT_MIN_CALL_SECONDS = 10.0
# How long a participant waits in line for a call slot at most (studies.call_slots).
DEFAULT_MAX_WAIT_SECONDS = 600.0
MAX_WAIT_LIMIT_S = 7200
ASSIGNMENTS = ("counterbalanced", "choice")
# What a call shorter than the study's minimum means for the participant (see the docstring).
SHORT_CALL_RULES = ("repeat", "skip")
DEFAULT_CONSENT = (
    "This study records your voice while you talk with a computer system about a topic. "
    "The recording is stored under a pseudonymous id and used for research on turn-taking. "
    "You can stop at any time. Do you agree to take part and to be recorded?"
)
DEFAULT_INSTRUCTIONS = (
    "Talk with the system about your topic as you would with a person: you can interrupt it, "
    "pause, or change the subject. Use headphones if you can."
)  # how the call ends is the call page's own line (its length, the timer, End call): said once


# What a consent item may open: `export --share-level researchers|public` includes the recordings of
# those who agreed to an item of that level (public implies researchers).
SHARE_LEVELS = ("researchers", "public")
# Retention periods (studies.retention): identifiers (Prolific IDs, Prolific session ids) dropped
# with the pseudonyms kept; recordings (audio, transcripts) deleted with the measures kept; all of a
# person's data erased. Days after the participant's consent (an annotator's start).
RETENTION_KEYS = ("identifiers_days", "recordings_days", "all_days")
ITEM_ID_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_-")


# A topic entry that lets the participant type a topic of their own (the page shows a text box).
OWN_TOPIC = "a topic of your choice"
OWN_TOPIC_MAX = 200


class StudyConfigError(ValueError):
    """A study file that cannot be used; the message names the file and the problem."""


@dataclass
class SystemConfig:
    name: str
    kind: str  # a name in systems.kinds
    config: dict = field(default_factory=dict)  # as the file writes it (stored so)
    settings: SystemSettings | None = None  # `config` parsed into the kind's settings dataclass


@dataclass
class StudyConfig:
    name: str
    title: str = ""
    systems: list[SystemConfig] = field(default_factory=list)
    topics: list[str] = field(default_factory=lambda: list(DEMO_TOPICS))
    session_seconds: int = DEFAULT_SESSION_SECONDS
    consent: str = DEFAULT_CONSENT
    instructions: str = DEFAULT_INSTRUCTIONS
    assignment: str = "counterbalanced"
    events: dict = field(default_factory=dict)  # turntaking.events.EventParams, as_dict form; {} = defaults
    completion_code: str | None = None
    completion_url: str | None = None
    could_not_take_part_code: str | None = None  # for one whose browser or network fails the connection check
    could_not_take_part_url: str | None = None
    clip_seconds: list[float] | None = None  # [min, max] s of annotation clips; None = the builder's default
    min_call_seconds: float | None = None  # None: the default (`call_minimum_s`)
    network_limits: dict | None = None  # studies.call_quality.NetworkLimits as the file writes it; None: the defaults
    # The longest a participant waits in line for a call slot (studies.call_slots); then they are
    # told and given the could-not-take-part code.
    max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS
    short_calls: str = "repeat"  # SHORT_CALL_RULES: a too-short call is asked again, or moved past
    # The questions after each call and after the last (studies.questionnaire, as_dict form);
    # None: the default set.
    questionnaire: dict | None = None
    # Shown to a participant who withdraws (Prolific: the study's "return" code, not a completion).
    withdrawn_code: str | None = None
    withdrawn_url: str | None = None
    # Optional consent items, each {"id", "text", "share": None | "researchers" | "public"}.
    consent_items: list[dict] = field(default_factory=list)
    # RETENTION_KEYS -> days; {} = nothing expires.
    retention: dict = field(default_factory=dict)

    def call_questionnaire(self, n_systems: int) -> Questionnaire:
        """The questionnaire the study's participants answer (its own, or the default)."""
        return parse_questionnaire(self.questionnaire, n_systems)

    @property
    def call_network_limits(self) -> NetworkLimits:
        """How poor a call's network may be for the call to be analysed."""
        return NetworkLimits.from_dict(self.network_limits or {})

    @property
    def call_minimum_s(self) -> float:
        """How long a call must last to be analysed."""
        if self.min_call_seconds is not None:
            return float(self.min_call_seconds)
        return min(DEFAULT_MIN_CALL_SECONDS, self.session_seconds / 2)

    def study_json(self) -> dict:
        """What Study.config stores (the systems have their own table)."""
        data = asdict(self)
        for key in ("name", "title", "systems"):
            data.pop(key)
        for key in ("completion_code", "completion_url", "could_not_take_part_code", "could_not_take_part_url",
                    "clip_seconds", "min_call_seconds", "network_limits", "questionnaire", "withdrawn_code",
                    "withdrawn_url", "consent_items", "retention"):  # stored only when set
            if data[key] is None or data[key] in ([], {}):
                data.pop(key)
        return data


def _parse_file(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise StudyConfigError(f"cannot read study file {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise StudyConfigError(f"study file {path} is not UTF-8 text (byte {e.start} cannot be decoded)") from None
    try:
        if path.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        elif path.suffix.lower() in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        else:
            raise StudyConfigError(f"study file {path} must end in .yaml, .yml or .toml")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as e:
        first = str(e).strip().splitlines()[0]
        raise StudyConfigError(f"study file {path} is not valid {path.suffix[1:].upper()}: {first}") from None
    if not isinstance(data, dict):
        raise StudyConfigError(f"study file {path} must contain a mapping of settings at the top level")
    return data


def parse_config(data: dict, source: str = "study config") -> StudyConfig:
    """Check the settings and fill in the defaults."""
    known = {"name", "title", "systems", "topics", "session_seconds", "consent", "instructions", "assignment",
             "events", "completion_code", "completion_url", "could_not_take_part_code", "could_not_take_part_url",
             "clip_seconds", "min_call_seconds", "max_wait_seconds", "network_limits", "short_calls",
             "questionnaire", "withdrawn_code", "withdrawn_url", "consent_items", "retention"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise StudyConfigError(f"{source}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise StudyConfigError(f"{source}: 'name' (the study's short name, used in links) is required")
    if not name.replace("-", "").replace("_", "").isalnum():
        raise StudyConfigError(f"{source}: study name {name!r} may only contain letters, digits, '-' and '_'")

    systems_data = data.get("systems")
    if not isinstance(systems_data, list) or not systems_data:
        raise StudyConfigError(f"{source}: 'systems' must list at least one dialogue system")
    systems = []
    for i, entry in enumerate(systems_data):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise StudyConfigError(f"{source}: system #{i + 1} needs a 'name'")
        named = entry.get("kind", entry["name"])
        try:  # a kind's former name (an alias) still loads, as the kind's name
            kind = system_kind(str(named)).name
        except SystemError_:
            raise StudyConfigError(
                f"{source}: system {entry['name']!r} has unknown kind {named!r} (known: {', '.join(KIND_NAMES)})"
            ) from None
        extra = sorted(set(entry) - {"name", "kind", "config"})
        if extra:
            raise StudyConfigError(f"{source}: system {entry['name']!r} has unknown key(s) {', '.join(extra)}")
        config = entry.get("config") or {}
        if not isinstance(config, dict):
            raise StudyConfigError(f"{source}: system {entry['name']!r}: 'config' must be a mapping")
        systems.append(SystemConfig(entry["name"], kind, dict(config)))
    _refuse_literal_keys(systems, source)
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        raise StudyConfigError(f"{source}: system names must be unique, got {names}")
    for system in systems:
        try:
            system.settings = system_spec(system.kind, system.config).settings  # remembered: its calls parse nothing
        except SystemError_ as e:
            raise StudyConfigError(f"{source}: system {system.name!r}: {e}") from None

    config = StudyConfig(name=name, title=str(data.get("title", "")), systems=systems)
    if "topics" in data:
        topics = data["topics"]
        if not isinstance(topics, list) or not topics or not all(isinstance(t, str) and t.strip() for t in topics):
            raise StudyConfigError(f"{source}: 'topics' must be a non-empty list of texts")
        config.topics = [t.strip() for t in topics]
    if "session_seconds" in data:
        seconds = data["session_seconds"]
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 10 <= seconds <= 3600:
            raise StudyConfigError(f"{source}: 'session_seconds' must be a number from 10 to 3600, got {seconds!r}")
        config.session_seconds = int(seconds)
    if "min_call_seconds" in data:
        minimum = data["min_call_seconds"]
        if isinstance(minimum, bool) or not isinstance(minimum, (int, float)) or not 0 <= minimum <= config.session_seconds:
            raise StudyConfigError(f"{source}: 'min_call_seconds' must be a number from 0 to session_seconds "
                                   f"({config.session_seconds}), got {minimum!r}")
        config.min_call_seconds = float(minimum)
    if "network_limits" in data:
        try:
            NetworkLimits.from_dict(data["network_limits"])
        except ValueError as exc:
            raise StudyConfigError(f"{source}: 'network_limits': {exc}") from None
        config.network_limits = dict(data["network_limits"])
    if "max_wait_seconds" in data:
        wait = data["max_wait_seconds"]
        if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not 0 <= wait <= MAX_WAIT_LIMIT_S:
            raise StudyConfigError(f"{source}: 'max_wait_seconds' must be a number from 0 to {MAX_WAIT_LIMIT_S}, "
                                   f"got {wait!r}")
        config.max_wait_seconds = float(wait)
    for key in ("consent", "instructions", "completion_code", "completion_url", "could_not_take_part_code",
                "could_not_take_part_url", "withdrawn_code", "withdrawn_url"):
        if key in data:
            if not isinstance(data[key], str) or not data[key].strip():
                raise StudyConfigError(f"{source}: {key!r} must be a non-empty text")
            setattr(config, key, data[key].strip())
    url = config.could_not_take_part_url
    if url is not None and not url.startswith(("https://", "http://")):
        raise StudyConfigError(f"{source}: 'could_not_take_part_url' must be an http(s) link, got {url!r}")
    if url is not None and "{code}" in url and config.could_not_take_part_code is None:
        raise StudyConfigError(f"{source}: 'could_not_take_part_url' has {{code}} but there is no "
                               "'could_not_take_part_code' to put in it")
    link = config.withdrawn_url
    if link is not None and not link.startswith(("https://", "http://")):
        raise StudyConfigError(f"{source}: 'withdrawn_url' must be an http(s) link, got {link!r}")
    if config.withdrawn_url and "{code}" in config.withdrawn_url and config.withdrawn_code is None:
        raise StudyConfigError(f"{source}: 'withdrawn_url' has {{code}} but there is no 'withdrawn_code' to put in it")
    if "consent_items" in data:
        config.consent_items = _consent_items(data["consent_items"], source)
    if "retention" in data:
        config.retention = _retention(data["retention"], source)
    if "assignment" in data:
        if data["assignment"] not in ASSIGNMENTS:
            raise StudyConfigError(
                f"{source}: 'assignment' must be one of {', '.join(ASSIGNMENTS)}, got {data['assignment']!r}"
            )
        config.assignment = data["assignment"]
    if "short_calls" in data:
        if data["short_calls"] not in SHORT_CALL_RULES:
            raise StudyConfigError(f"{source}: 'short_calls' must be one of {', '.join(SHORT_CALL_RULES)}, "
                                   f"got {data['short_calls']!r}")
        config.short_calls = data["short_calls"]
    if "clip_seconds" in data:
        bounds = data["clip_seconds"]
        if (not isinstance(bounds, list) or len(bounds) != 2 or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in bounds)
                or not 4 <= bounds[0] <= bounds[1] <= 120):
            raise StudyConfigError(f"{source}: 'clip_seconds' must be [min, max] seconds within 4-120, got {bounds!r}")
        config.clip_seconds = [float(x) for x in bounds]
    if "questionnaire" in data:
        try:
            config.questionnaire = parse_questionnaire(data["questionnaire"], len(systems)).as_dict()
        except QuestionnaireError as exc:
            raise StudyConfigError(f"{source}: 'questionnaire': {exc}") from None
    if "events" in data:
        if not isinstance(data["events"], dict):
            raise StudyConfigError(f"{source}: 'events' must be a mapping of event parameters")
        try:
            config.events = EventParams.from_dict(data["events"]).as_dict()
        except (ValueError, TypeError) as exc:
            raise StudyConfigError(f"{source}: 'events': {exc}") from None
    return config


def _consent_items(items, source: str) -> list[dict]:
    """The optional consent items, checked: unique ids, a text each, a known sharing level."""
    if not isinstance(items, list):
        raise StudyConfigError(f"{source}: 'consent_items' must be a list of {{id, text, share}} items")
    parsed, seen = [], set()
    for i, item in enumerate(items, 1):
        if not isinstance(item, dict) or set(item) - {"id", "text", "share"}:
            raise StudyConfigError(f"{source}: consent item #{i} must be a mapping of id, text and (optional) share")
        item_id, text, share = item.get("id"), item.get("text"), item.get("share")
        if not isinstance(item_id, str) or not item_id or not set(item_id) <= ITEM_ID_CHARS or len(item_id) > 40:
            raise StudyConfigError(f"{source}: consent item #{i} needs an 'id' of lower-case letters, digits, '_' "
                                   f"and '-' (at most 40), got {item_id!r}")
        if item_id in seen:
            raise StudyConfigError(f"{source}: consent item id {item_id!r} appears twice")
        if not isinstance(text, str) or not text.strip():
            raise StudyConfigError(f"{source}: consent item {item_id!r} needs a 'text' (what the participant agrees to)")
        if share is not None and share not in SHARE_LEVELS:
            raise StudyConfigError(f"{source}: consent item {item_id!r}: 'share' must be one of "
                                   f"{', '.join(SHARE_LEVELS)}, got {share!r}")
        seen.add(item_id)
        parsed.append({"id": item_id, "text": text.strip(), "share": share})
    return parsed


def _retention(data, source: str) -> dict:
    if not isinstance(data, dict) or not data or set(data) - set(RETENTION_KEYS):
        raise StudyConfigError(f"{source}: 'retention' must be a mapping of {', '.join(RETENTION_KEYS)} "
                               f"(days), got {data!r}")
    for key, days in data.items():
        if isinstance(days, bool) or not isinstance(days, (int, float)) or not 0 < days <= 36500:
            raise StudyConfigError(f"{source}: 'retention': {key} must be a number of days from 1 to 36500, "
                                   f"got {days!r}")
    return {key: float(days) for key, days in data.items()}


def _refuse_literal_keys(systems: list[SystemConfig], source: str) -> None:
    for system in systems:
        problem = key_reference_problem(system.config)
        if problem:
            raise StudyConfigError(f"{source}: system {system.name!r} {problem}")


def load_config(path: Path | str) -> StudyConfig:
    path = Path(path)
    return parse_config(_parse_file(path), source=f"study file {path}")


def apply_config(session: Session, config: StudyConfig) -> Study:
    """Create or update the study and its systems. Flushes, does not commit."""
    _refuse_literal_keys(config.systems, f"study {config.name!r}")  # also for a config not made by parse_config
    study = get_or_create_study(session, config.name, title=config.title, config=config.study_json())
    study.title = config.title
    # Settings the file does not own stay: `annotation register` keeps the annotation settings there.
    owned = {f.name for f in fields(StudyConfig)}
    kept = {k: v for k, v in (study.config or {}).items() if k not in owned}
    study.config = {**kept, **config.study_json()}
    session.add(study)
    for system in config.systems:
        row = session.exec(
            select(DialogueSystem).where(DialogueSystem.study_id == study.id, DialogueSystem.name == system.name)
        ).first()
        if row is None:
            row = DialogueSystem(study_id=study.id, name=system.name, kind=system.kind, config=system.config)
        else:
            row.kind, row.config = system.kind, dict(system.config)
        session.add(row)
        session.flush()  # one at a time: ids follow the file's order
    return study


def study_settings(study: Study) -> StudyConfig:
    """The study's settings with defaults for whatever its stored config lacks (e.g. the demo study)."""
    return stored_settings(study.name, study.title, study.config)


def stored_settings(name: str, title: str, stored: dict | None) -> StudyConfig:
    """A study's settings from its stored config (Study.config), with defaults for what it lacks."""
    stored = dict(stored or {})
    config = StudyConfig(name=name, title=title)
    for key in ("topics", "session_seconds", "consent", "instructions", "assignment", "completion_code",
                "completion_url", "could_not_take_part_code", "could_not_take_part_url", "clip_seconds",
                "min_call_seconds", "max_wait_seconds", "network_limits", "short_calls", "questionnaire",
                "withdrawn_code", "withdrawn_url", "consent_items", "retention"):
        if key in stored:
            setattr(config, key, stored[key])
    return config


def counterbalanced_order(system_names: list[str], participant_index: int) -> list[str]:
    """The order of systems for the participant_index-th participant (0-based) of a study.

    Cycles through all orderings of the systems (2 systems: AB, BA, AB, ...), so with a
    multiple of n! participants every system appears equally often at every position.
    """
    orders = list(permutations(system_names))
    return list(orders[participant_index % len(orders)])


def next_systems(
    system_names: list[str], assignment: str, participant_index: int, done: set[str]
) -> list[str]:
    """Systems the participant may do next: one (counterbalanced) or all remaining (choice)."""
    if assignment == "choice":
        return [name for name in system_names if name not in done]
    remaining = [name for name in counterbalanced_order(system_names, participant_index) if name not in done]
    return remaining[:1]
