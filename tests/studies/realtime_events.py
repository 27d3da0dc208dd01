"""Every Realtime event a test sees, checked against the `openai` package's own pydantic event
types: the GA ones (`openai.types.realtime`) or the beta ones (`openai.types.beta.realtime`).

The package's models allow unknown fields (a newer server may add some), so a misspelt or
beta-only field would pass them silently: here any field the types do not name, at any depth,
is an error too.
"""

from __future__ import annotations

import json

from openai.types.beta.realtime import RealtimeClientEvent as BetaClientEvent
from openai.types.beta.realtime import RealtimeServerEvent as BetaServerEvent
from openai.types.realtime import RealtimeClientEvent, RealtimeServerEvent
from pydantic import BaseModel, TypeAdapter

ADAPTERS = {
    ("ga", "client"): TypeAdapter(RealtimeClientEvent),
    ("ga", "server"): TypeAdapter(RealtimeServerEvent),
    ("beta", "client"): TypeAdapter(BetaClientEvent),
    ("beta", "server"): TypeAdapter(BetaServerEvent),
}


def unknown_fields(value, path: str = "") -> list[str]:
    """The fields of a validated event that its type does not declare."""
    if isinstance(value, BaseModel):
        found = [f"{path}.{name}" for name in (value.model_extra or {})]
        for name in type(value).model_fields:
            found += unknown_fields(getattr(value, name), f"{path}.{name}")
        return found
    if isinstance(value, (list, tuple)):
        return [field for k, item in enumerate(value) for field in unknown_fields(item, f"{path}[{k}]")]
    if isinstance(value, dict):
        return [field for key, item in value.items() for field in unknown_fields(item, f"{path}.{key}")]
    return []


def validated(event: dict | str | bytes, side: str, dialect: str = "ga") -> BaseModel:
    """The event as the package's type for it (`side`: "client" or "server"); raises
    pydantic.ValidationError for a wrong event, ValueError for a field the type lacks."""
    if isinstance(event, (str, bytes)):
        event = json.loads(event)
    model = ADAPTERS[(dialect, side)].validate_python(event)
    extra = unknown_fields(model, event.get("type", "?"))
    if extra:
        raise ValueError(f"fields the {dialect} {side} event type does not declare: {', '.join(extra)}")
    return model
