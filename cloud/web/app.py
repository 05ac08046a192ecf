"""The Flask application factory."""
from __future__ import annotations

import logging
from dataclasses import fields

from flask import Flask, g, request
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from cloud.config import Settings
from cloud.core_state import CoreState, start_core_state
from cloud.gate.wsgi import HostGate
from cloud.store import Store
from cloud.web.admin import admin_api
from cloud.web.api import api
from cloud.web.approvals_api import approvals_api
from cloud.web.auth import HOST_ONLY, api_error, current_user
from cloud.web.batches_api import batches_api
from cloud.web.coordination_api import coordination_api
from cloud.web.models_api import models_api
from cloud.web.pages import pages
from cloud.web.quotas import QuotaExceeded, RequestRate
from cloud.web.scene_api import scene_api
from cloud.web.show_api import show_api
from cloud.web.skills_api import skills_api
from cloud.web.state import NexusState

log = logging.getLogger(__name__)

PUBLIC_PATHS = {"/", "/signin", "/signout", "/admin"}  # these answer 401 with a sign-in page themselves

# Defence in depth behind the pages' own rule (model and host output only ever enters the DOM as text,
# or as Markdown through DOMPurify): no inline script, no script from anywhere but this server. Sent
# with every response, JSON and images included, with nosniff, so nothing is ever read as a page.
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                           "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                           "form-action 'self'; frame-ancestors 'self'")


def create_app(store: Store, settings: Settings | None = None, default_model: str | None = None,
               core: CoreState | None = None) -> Flask:
    """The chat app with the host gate mounted at /ws/host, on `core` (started here when not given)."""
    settings = core.settings if core is not None else settings or Settings()
    core = core or start_core_state(store, settings)
    app = Flask("cloud", static_folder="static", template_folder="templates")
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024 * 1024
    state = NexusState(**{f.name: getattr(core, f.name) for f in fields(CoreState)}, default_model=default_model,
                       request_rate=RequestRate(settings.quota_requests_per_minute))
    app.extensions["nexus"] = state
    app.wsgi_app = HostGate(state, app.wsgi_app)  # type: ignore[method-assign]
    if settings.trusted_proxies > 0:
        # Behind N reverse proxies: believe their X-Forwarded-For/Proto/Host/Port (so a request that came
        # over TLS gets a Secure cookie); never without the setting, or any client could claim https.
        n = settings.trusted_proxies
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n, x_port=n)  # type: ignore[method-assign]
    app.register_blueprint(api)
    app.register_blueprint(admin_api)
    app.register_blueprint(models_api)
    app.register_blueprint(pages)
    app.register_blueprint(skills_api)
    app.register_blueprint(batches_api)
    app.register_blueprint(scene_api)
    app.register_blueprint(show_api)
    app.register_blueprint(approvals_api)
    app.register_blueprint(coordination_api)

    @app.before_request
    def authenticate_everything():
        # Static assets need a token too; API routes check it in their decorator; /ws/host is the gate's.
        if request.path in PUBLIC_PATHS or request.path.startswith("/api/"):
            return None
        user = current_user()
        if user is not None and user.scope != "user":
            return api_error(403, HOST_ONLY)
        if user is None:
            return api_error(401, "missing or invalid bearer token")
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

    return app
