"""Every /api/ route, with malformed bodies: always a JSON answer, never a 500 (and never an HTML page)."""
from __future__ import annotations

import re

import pytest
import requests

from tests.support.client import Client, write_script
from tests.support.server import running_server
from tests.support.spine import say

FIELDS = ["policy", "validation", "host_id", "model", "text", "tool_call_id", "result", "decision", "comment",
          "user", "admin", "host", "files", "out", "script", "prompt", "script_sha256", "file", "ids"]
ODD_VALUES = [["auto"], {"a": 1}, "bad\x00value", 12345, None, "x" * 300]
ODD_BODIES = [None, "[]", '"text"', "{", "null", '{"a": {"b": {"c": []}}}']


@pytest.fixture
def roomy(tmp_path, scripts_dir, monkeypatch):
    monkeypatch.setenv("NEXUS_BATCH_ROOT", str(tmp_path / "batch-root"))  # the batch routes validate too
    (tmp_path / "batch-root").mkdir()
    with running_server(tmp_path, quota_requests_per_minute=0, quota_sessions_per_hour=0) as srv:
        yield srv


def test_malformed_input_on_every_api_route_gets_a_json_error(roomy, scripts_dir):
    admin = Client(roomy.url, roomy.token("root", admin=True))
    session_id = admin.new_session(None, write_script(scripts_dir / "f.json", [say("x")]))
    values = {"session_id": session_id, "tool_call_id": "call_x", "image_id": "img", "token_id": "tok",
              "user_name": "root", "host_id": "h_000000000000"}
    routes = [(method, rule.rule) for rule in roomy.handle.server.app.url_map.iter_rules()
              if rule.rule.startswith("/api/") for method in sorted(rule.methods - {"HEAD", "OPTIONS"})]
    assert len(routes) > 20
    checked = 0
    for method, rule in routes:
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", lambda m: values.get(m.group(1), "x"), rule)
        attempts = [{"data": body, "headers": {"Content-Type": "application/json"}} for body in ODD_BODIES]
        attempts += [{"json": {field: value}} for field in FIELDS for value in ODD_VALUES]
        for attempt in attempts:
            if method == "GET" and "json" in attempt and attempt["json"] != {FIELDS[0]: ODD_VALUES[0]}:
                continue  # a GET has no body to vary; once is enough
            response = admin.call(method, path, timeout=30, stream=True, **attempt)
            kind = response.headers.get("Content-Type", "")
            if response.status_code == 200 and not kind.startswith("application/json"):
                response.close()  # an image or an event stream: a real answer, not an error page
                continue
            assert response.status_code < 500, (method, path, attempt, response.status_code, response.text[:300])
            assert kind.startswith("application/json"), (method, path, attempt, kind, response.text[:300])
            checked += 1
    assert checked > 500
    # The odd requests changed nothing they should not have: the session is still there and still idle.
    assert admin.call("GET", f"/api/sessions/{session_id}").json()["status"] == "idle"
    assert requests.get(roomy.url + "/api/me", timeout=10).status_code == 401
