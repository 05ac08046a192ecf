"""WSGI entry point for production servers: `gunicorn -k gevent -w 1 'cloud.wsgi:app'`."""
from __future__ import annotations

from cloud.cli.common import default_db
from cloud.config import Settings
from cloud.store import Store
from cloud.vendors.registry import default_model_spec
from cloud.web.app import create_app

app = create_app(Store(default_db()), Settings.from_env(), default_model=default_model_spec())
