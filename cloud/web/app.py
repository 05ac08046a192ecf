"""The Flask application factory."""
from __future__ import annotations

import logging

from flask import Flask, g, request
from flask_sock import Sock
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from cloud.assembly import recover_interrupted_runs
from cloud.config import Settings
from cloud.distributed import build_parts, start_recovery_sweep
from cloud.store import Store
from cloud.web.admin import admin_api
from cloud.web.api import api
from cloud.web.auth import HOST_ONLY, api_error, current_user, same_origin
from cloud.web.batches_api import batches_api
from cloud.web.host_ws import serve_host
from cloud.web.models_api import models_api
from cloud.web.pages import pages
from cloud.web.quotas import QuotaExceeded, RequestRate, check_limit
from cloud.web.skills_api import skills_api
from cloud.web.state import NexusState, nexus

log = logging.getLogger(__name__)

HOST_WS_PATH = "/ws/host"
PUBLIC_PATHS = {"/", "/signin", "/signout", "/admin"}  # these answer 401 with a sign-in page themselves

# Defence in depth behind the pages' own rule (model and host output only ever enters the DOM as text,
# or as Markdown through DOMPurify): no inline script, no script from anywhere but this server. Sent
# with every response, JSON and images included, with nosniff, so nothing is ever read as a page.
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                           "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                           "form-action 'self'; frame-ancestors 'self'")


def create_app(store: Store, settings: Settings | None = None, default_model: str | None = None) -> Flask:
    settings = settings or Settings()
    app = Flask("cloud", static_folder="static", template_folder="templates")
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024 * 1024
    app.config["SOCK_SERVER_OPTIONS"] = {"ping_interval": 25, "max_message_size": 64 * 1024 * 1024}
    if settings.trusted_proxies > 0:
        # Behind N reverse proxies: believe their X-Forwarded-For/Proto/Host/Port (so a request that came
        # over TLS gets a Secure cookie); never without the setting, or any client could claim https.
        n = settings.trusted_proxies
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n, x_port=n)  # type: ignore[method-assign]
    hosts, channel, runs = build_parts(store)  # in Redis with NEXUS_REDIS_URL, else in this process
    app.extensions["nexus"] = NexusState(store=store, settings=settings, hosts=hosts, channel=channel,
                                         runs=runs, default_model=default_model,
                                         request_rate=RequestRate(settings.quota_requests_per_minute))
    # Runs a dead process left `running` end with every call answered; held changes are discarded on reconnect.
    recover_interrupted_runs(store, app.extensions["nexus"].hosts)
    start_recovery_sweep(store, hosts, runs)  # and later, runs whose process died (their lease expired)
    app.register_blueprint(api)
    app.register_blueprint(admin_api)
    app.register_blueprint(models_api)
    app.register_blueprint(pages)
    app.register_blueprint(skills_api)
    app.register_blueprint(batches_api)
    sock = Sock(app)

    @app.before_request
    def authenticate_everything():
        # Static assets and the websocket need a token too; API routes check it in their decorator.
        if request.path in PUBLIC_PATHS or request.path.startswith("/api/"):
            return None
        if request.path == HOST_WS_PATH:
            # Hosts send their token in the Authorization header and no Origin (or their own server's);
            # a page of another origin must not reach this socket with the person's cookie.
            if not same_origin(any_scheme=True):
                return api_error(403, "cross-origin websocket connections are refused")
            user = current_user(cookie=False)
        else:
            user = current_user()
            if user is not None and user.scope != "user":
                return api_error(403, HOST_ONLY)
        if user is None:
            return api_error(401, "missing or invalid bearer token")
        if request.path == HOST_WS_PATH:
            state = nexus()
            check_limit("hosts", len(state.hosts.for_user(user.name)), state.settings.quota_hosts, retry_after_s=30)
        g.user = user
        return None

    @app.after_request
    def security_headers(response):
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers["X-Content-Type-Options"] = "nosniff"
        # same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on the sign-in POST.
        response.headers.setdefault("Referrer-Policy", "same-origin")
        if response.mimetype == "text/html":
            response.headers["Cache-Control"] = "no-store"
        return response

    @sock.route(HOST_WS_PATH)
    def host_socket(ws):
        serve_host(nexus(), ws)

    @app.errorhandler(QuotaExceeded)
    def over_quota(exc: QuotaExceeded):
        response = api_error(429, str(exc), quota=exc.quota, limit=exc.limit)
        response.headers["Retry-After"] = str(exc.retry_after_s)
        return response

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        messages = {404: f"no route {request.method} {request.path}",
                    405: f"{request.method} is not allowed on {request.path}", 413: "request body too large"}
        return api_error(exc.code or 500, messages.get(exc.code or 500, exc.description or exc.name))

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        # Never an HTML 500 page: the error is logged here, the client gets JSON without internals.
        log.exception("unhandled error on %s %s", request.method, request.path)
        return api_error(500, "internal server error (logged on the server)")

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    return app
