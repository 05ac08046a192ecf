"""The chat page and the admin console (HTML shells; their data comes from the JSON API)."""
from __future__ import annotations

from urllib.parse import urlencode

from flask import Blueprint, make_response, redirect, render_template, request

from cloud.web.auth import COOKIE, current_user
from cloud.web.state import nexus

pages = Blueprint("pages", __name__)

# Defence in depth behind the pages' own rule (model and host output only ever enters the DOM as text,
# or as Markdown through DOMPurify): no inline script, no script from anywhere but this server.
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                           "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                           "form-action 'self'; frame-ancestors 'self'")


@pages.after_request
def _page_headers(response):
    if response.mimetype == "text/html":
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
    return response


def _local_path(target: str | None) -> str:
    """Only a path on this server is a valid place to go after sign-in (no open redirect)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def _signin(status: int, problem: str | None = None):
    target = request.full_path.rstrip("?") if request.method == "GET" else request.form.get("next")
    return make_response(render_template("signin.html", problem=problem, next=_local_path(target)), status)


def _set_cookie(response, token: str) -> None:
    response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", secure=request.is_secure)


@pages.get("/")
def chat():
    token = request.args.get("token")
    if token:
        # The demo's link: exchange the token for a cookie and drop it from the address bar.
        if nexus().store.user_for_token(token) is None:
            return _signin(401, "That sign-in link is not valid.")
        host = request.args.get("host")
        response = redirect("/" + (f"?{urlencode({'host': host})}" if host else ""))
        _set_cookie(response, token)
        return response
    user = current_user()
    if user is None:
        return _signin(401)
    return render_template("chat.html", user=user)


@pages.post("/signin")
def signin():
    token = (request.form.get("token") or "").strip()
    if not token or nexus().store.user_for_token(token) is None:
        return _signin(401, "That token is not valid.")
    response = redirect(_local_path(request.form.get("next")))
    _set_cookie(response, token)
    return response


@pages.post("/signout")
def signout():
    response = redirect("/")
    response.delete_cookie(COOKIE)
    return response


@pages.get("/admin")
def admin():
    user = current_user()
    if user is None:
        return _signin(401)
    if not user.is_admin:
        return make_response(render_template("forbidden.html", user=user), 403)
    return render_template("admin.html", user=user)
