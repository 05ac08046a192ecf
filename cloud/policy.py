"""Run policies: `auto` commits a successful script, `ask` lets the person keep or discard it first,
`readonly` refuses automation. The session's choice and the admin's per-user choice: the stricter wins."""
from __future__ import annotations

from cloud.store import UserSettings

POLICY_STRICTNESS = {"auto": 0, "ask": 1, "readonly": 2}


def stricter(a: str, b: str) -> str:
    return max(a, b, key=lambda p: POLICY_STRICTNESS.get(p, 0))


def effective_policy(settings: UserSettings, session_id: str, user_name: str) -> str:
    """Read fresh from the store: the person or an admin may change it while a script runs."""
    session_policy, user_policy = settings.policies(session_id, user_name)
    return stricter(session_policy or "auto", user_policy or "auto")
