"""Bearer-token authentication for every route, with a cookie for page navigation.

API clients send `Authorization: Bearer TOKEN`. The pages (which a browser navigates to, and whose
<img> tags cannot carry headers) use an HttpOnly, SameSite=Strict cookie set at sign-in; requests
that change state with only the cookie must also carry `X-Requested-With: nexus` (a CSRF guard).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from flask import g, jsonify, request

from cloud.store import User
from cloud.web.state import nexus

COOKIE = "nexus_token"
CSRF_HEADER = "X-Requested-With"
CSRF_VALUE = "nexus"


def bearer_token() -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def current_user() -> User | None:
    """The signed-in user, or None. Sets g.auth_via to 'bearer' or 'cookie'."""
    token = bearer_token()
    via = "bearer"
    if token is None:
        token, via = request.cookies.get(COOKIE), "cookie"
    if not token:
        return None
    user = nexus().store.user_for_token(token)
    if user is not None:
        g.auth_via = via
    return user


def api_error(status: int, message: str, **extra: Any):
    response = jsonify({"error": message, **extra})
    response.status_code = status
    return response


def require_user(admin: bool = False) -> Callable:
    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(*args: Any, **kwargs: Any):
            user = current_user()
            if user is None:
                return api_error(401, "missing or invalid bearer token")
            if (g.auth_via == "cookie" and request.method not in ("GET", "HEAD")
                    and request.headers.get(CSRF_HEADER) != CSRF_VALUE):
                return api_error(403, f"cookie-authenticated requests must send {CSRF_HEADER}: {CSRF_VALUE}")
            if admin and not user.is_admin:
                return api_error(403, "admin token required")
            g.user = user
            return view(*args, **kwargs)
        return wrapped
    return decorator
