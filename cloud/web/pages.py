"""The chat page and the admin console (HTML shells; their data comes from the JSON API)."""
from __future__ import annotations

from flask import Blueprint, make_response, redirect, render_template, request

from cloud.web.auth import COOKIE, current_user
from cloud.web.state import nexus

pages = Blueprint("pages", __name__)


def _signin(status: int, problem: str | None = None):
    return make_response(render_template("signin.html", problem=problem), status)


@pages.get("/")
def chat():
    token = request.args.get("token")
    if token:
        # The demo's link: exchange the token for a cookie and drop it from the address bar.
        if nexus().store.user_for_token(token) is None:
            return _signin(401, "That sign-in link is not valid.")
        target = "/" + (f"?host={request.args['host']}" if request.args.get("host") else "")
        response = redirect(target)
        response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", secure=request.is_secure)
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
    response = redirect(request.form.get("next") or "/")
    response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", secure=request.is_secure)
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
