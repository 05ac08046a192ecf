"""Validation after automations: `warn` reports the schema and model-rule findings a script introduced,
`block` rolls the script back when it introduced any. The session's choice and the admin's per-user choice:
the stricter wins, as for the run policy. An IDS per session (uploaded through the API or `nexus run --ids`)
adds its failures introduced by a script to those findings."""
from __future__ import annotations

from cloud.store import Store

VALIDATION_STRICTNESS = {"warn": 0, "block": 1}
DEFAULT_VALIDATION = "warn"


def stricter_validation(a: str | None, b: str | None) -> str:
    return max(a or DEFAULT_VALIDATION, b or DEFAULT_VALIDATION, key=lambda v: VALIDATION_STRICTNESS.get(v, 0))


def effective_validation(store: Store, session_id: str, user_name: str) -> str:
    """Read fresh from the store when a script is sent: either setting may change between runs."""
    session = store.sessions.get_session(session_id)
    return stricter_validation(session.get("validation") if session else None, store.user_settings.user_validation(user_name))


def session_ids(store: Store, session_id: str) -> str | None:
    """The session's IDS (XML), sent with every automation so the host reports the failures a script introduced."""
    session = store.sessions.get_session(session_id)
    return (session.get("ids") or None) if session else None
