"""Authentication for every route: a bearer token for API clients and hosts, a web session for browsers.

API clients send `Authorization: Bearer TOKEN`. Browsers sign in once (POST /signin, same origin only)
and then carry an HttpOnly, SameSite=Strict cookie holding a server-side web session id, never the
token: it expires, and ends at sign-out and when its token is revoked (the model is Django's and
Rails' session cookie). Requests that change state with only the cookie must also carry
`X-Requested-With: nexus` (a CSRF guard). A host token (`nexus token create USER --host`) connects a
host runtime to /ws/host and opens nothing else.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

from flask import g, jsonify, request

from cloud.store import User
from cloud.web.state import nexus

COOKIE = "nexus_session"
CSRF_HEADER = "X-Requested-With"
CSRF_VALUE = "nexus"
HOST_ONLY = "this is a host token: it can only connect a host runtime to /ws/host"


def bearer_token() -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def current_user(cookie: bool = True) -> User | None:
    """The signed-in user, or None. Sets g.auth_via to 'bearer' or 'cookie'."""
    auth = nexus().store.auth  # of the store, sign-in needs only tokens and web sessions
    token = bearer_token()
    if token is not None:
        user, via = auth.user_for_token(token), "bearer"
    elif cookie and request.cookies.get(COOKIE):
        user, via = auth.user_for_web_session(request.cookies[COOKIE]), "cookie"
    else:
        return None
    if user is not None:
        g.auth_via = via
    return user


def same_origin() -> bool:
    """False when a browser says the request came from another site (Origin, else Sec-Fetch-Site).

    Clients that are not browsers send neither header and pass; browsers send Origin on every POST
    and on websocket upgrades (the check Django's CSRF middleware and Rails' forgery protection make).
    `any_scheme` compares host and port only: a host runtime's websocket library may send the https
    origin it dialled while a TLS proxy hands the server plain http.
    """
    origin = request.headers.get("Origin")
    fetch_site = request.headers.get("Sec-Fetch-Site")
    if origin == "null":
        # An opaque origin: a sandboxed frame, or a page whose referrer policy hides it; only the
        # browser's own Sec-Fetch-Site can say it is this server's page.
        return fetch_site == "same-origin"
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return False
    if origin is not None:
        parts = urlsplit(origin)
        return parts.scheme == request.scheme and parts.netloc == request.host
    return True


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
            if user.scope != "user":
                return api_error(403, HOST_ONLY)
            if (g.auth_via == "cookie" and request.method not in ("GET", "HEAD")
                    and (request.headers.get(CSRF_HEADER) != CSRF_VALUE or not same_origin())):
                return api_error(403, f"cookie-authenticated requests must send {CSRF_HEADER}: {CSRF_VALUE}")
            if admin and not user.is_admin:
                return api_error(403, "admin token required")
            nexus().request_rate.admit(user.name)
            g.user = user
            return view(*args, **kwargs)
        return wrapped
    return decorator
