"""The chat page and the admin console (HTML shells; their data comes from the JSON API), and sign-in.

Sign-in is a same-origin POST of a token (or the one-time `/?signin=CODE` link `nexus demo` prints);
it sets a cookie holding a server-side web session id. A token in a URL (`/?token=`) signs no one in:
a link from another site must not be able to sign a victim in as someone else (login CSRF).
"""
from __future__ import annotations

from urllib.parse import urlencode

from flask import Blueprint, make_response, redirect, render_template, request

from cloud.store import User
from cloud.web.auth import COOKIE, current_user, same_origin
from cloud.web.state import nexus

pages = Blueprint("pages", __name__)


def _local_path(target: str | None) -> str:
    """Only a path on this server is a valid place to go after sign-in (no open redirect).

    Browsers drop tabs and newlines from URLs, so `/\\t/evil.example` would become `//evil.example`:
    any control character, backslash or leading `//` sends the person to `/` instead.
    """
    if (not target or not target.startswith("/") or target.startswith("//") or "\\" in target
            or any(ord(c) < 32 or ord(c) == 127 for c in target)):
        return "/"
    return target


def _signin(status: int, problem: str | None = None):
    target = request.full_path.rstrip("?") if request.method == "GET" else request.form.get("next")
    if request.method == "GET" and request.args.get("token"):
        target = "/"  # never carry a token along in `next`
    return make_response(render_template("signin.html", problem=problem, next=_local_path(target)), status)


def _signed_in(response, token_id: str):
    settings = nexus().settings
    session_id = nexus().store.auth.create_web_session(token_id, settings.web_session_hours * 3600)
    response.set_cookie(COOKIE, session_id, max_age=int(settings.web_session_hours * 3600), httponly=True,
                        samesite="Strict", secure=request.is_secure, path="/")
    return response


def _page_user() -> User | None:
    user = current_user()
    return user if user is not None and user.scope == "user" else None


@pages.get("/")
def chat():
    code = request.args.get("signin")
    if code:
        # The demo's one-time link: exchange the code for a web session and drop it from the address bar.
        token_id = nexus().store.auth.redeem_signin_code(code)
        if token_id is None:
            return _signin(401, "That sign-in link is not valid any more (each link works once).")
        host = request.args.get("host")
        return _signed_in(redirect("/" + (f"?{urlencode({'host': host})}" if host else "")), token_id)
    if request.args.get("token"):
        return _signin(401, "Tokens in links are not accepted: paste the token here instead.")
    user = _page_user()
    if user is None:
        return _signin(401)
    return render_template("chat.html", user=user)


@pages.post("/signin")
def signin():
    if not same_origin():
        return _signin(403, "Sign-in is only accepted from this server's own page.")
    token = (request.form.get("token") or "").strip()
    user = nexus().store.auth.user_for_token(token) if token else None
    if user is None:
        return _signin(401, "That token is not valid.")
    if user.scope != "user" or user.token_id is None:
        return _signin(403, "That is a host token: it connects a host runtime but cannot sign in.")
    return _signed_in(redirect(_local_path(request.form.get("next"))), user.token_id)


@pages.post("/signout")
def signout():
    response = redirect("/")
    session_id = request.cookies.get(COOKIE)
    if session_id and same_origin():
        nexus().store.auth.end_web_session(session_id)
    response.delete_cookie(COOKIE, path="/")
    return response


@pages.get("/admin")
def admin():
    user = _page_user()
    if user is None:
        return _signin(401)
    if not user.is_admin:
        return make_response(render_template("forbidden.html", user=user), 403)
    return render_template("admin.html", user=user)
