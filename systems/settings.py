"""A system's settings: the `config` mapping a study file gives a system, as its kind's frozen
dataclass (each kind's is named in systems.kinds). The keys are the dataclass's fields;
any other key is refused, in one line that names it."""

from __future__ import annotations

from dataclasses import fields
from typing import Protocol, Self

from systems.base import SystemError_


class SystemSettings(Protocol):
    """What every kind's settings dataclass offers: its parse from a study file's mapping."""

    @classmethod
    def from_config(cls, config: dict) -> Self:
        """The settings of `config`; SystemError_ (one line) for an unknown key or a bad value."""
        ...


def settings_from_config(settings_class: type, config: dict):
    """`config` as a `settings_class` (its fields' defaults for the keys it lacks); SystemError_
    naming the unknown keys and the known ones."""
    if not isinstance(config, dict):
        raise SystemError_(f"config must be a mapping, got {type(config).__name__}")
    known = [f.name for f in fields(settings_class)]
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise SystemError_(f"unknown config key(s) {', '.join(unknown)} (known: {', '.join(known)})")
    return settings_class(**config)
