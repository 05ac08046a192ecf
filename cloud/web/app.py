"""The Flask application factory."""
from __future__ import annotations

import logging

from flask import Flask, g, request
from flask_sock import Sock

from cloud.assembly import recover_interrupted_runs
from cloud.config import Settings
from cloud.hostlink import HostDirectory
from cloud.rendezvous import ToolResultChannel
from cloud.runs import RunRegistry
from cloud.store import Store
from cloud.web.admin import admin_api
from cloud.web.api import api
from cloud.web.auth import api_error, current_user
from cloud.web.host_ws import serve_host
from cloud.web.pages import pages
from cloud.web.state import NexusState, nexus

HOST_WS_PATH = "/ws/host"
PUBLIC_PATHS = {"/", "/signin", "/signout", "/admin"}  # these answer 401 with a sign-in page themselves


def create_app(store: Store, settings: Settings | None = None, default_model: str | None = None) -> Flask:
    settings = settings or Settings()
    app = Flask("cloud", static_folder="static", template_folder="templates")
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024 * 1024
    app.config["SOCK_SERVER_OPTIONS"] = {"ping_interval": 25, "max_message_size": 64 * 1024 * 1024}
    app.extensions["nexus"] = NexusState(store=store, settings=settings, hosts=HostDirectory(),
                                         channel=ToolResultChannel(),
                                         runs=RunRegistry(settings.detach_grace_s), default_model=default_model)
    recover_interrupted_runs(store)  # runs a dead process left `running` end with every call answered
    app.register_blueprint(api)
    app.register_blueprint(admin_api)
    app.register_blueprint(pages)
    sock = Sock(app)

    @app.before_request
    def authenticate_everything():
        # Static assets and the websocket need a token too; API routes check it in their decorator.
        if request.path in PUBLIC_PATHS or request.path.startswith("/api/"):
            return None
        user = current_user()
        if user is None:
            return api_error(401, "missing or invalid bearer token")
        g.user = user
        return None

    @sock.route(HOST_WS_PATH)
    def host_socket(ws):
        serve_host(nexus(), ws)

    @app.errorhandler(404)
    def not_found(_exc):
        return api_error(404, f"no route {request.method} {request.path}")

    @app.errorhandler(405)
    def wrong_method(_exc):
        return api_error(405, f"{request.method} is not allowed on {request.path}")

    @app.errorhandler(413)
    def too_large(_exc):
        return api_error(413, "request body too large")

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    return app
