"""JSON errors everywhere under /api/, the scripted-file check at use, and security headers on everything."""
from __future__ import annotations

import os

import requests

from tests.support.client import write_script
from tests.support.spine import say


def test_bad_input_gets_a_json_error_never_an_html_500(server, alice, host, scripts_dir):
    session_id = alice.new_session(host.host_id, write_script(scripts_dir / "e.json", [say("x")]))
    cases = [
        ("PUT", f"/api/sessions/{session_id}/policy", {"policy": ["auto"]}, 400),
        ("PUT", f"/api/sessions/{session_id}/policy", {"policy": {"a": 1}}, 400),
        ("POST", "/api/sessions", {"model": f"scripted:{scripts_dir}/e\x00.json"}, 400),
        ("POST", f"/api/sessions/{session_id}/messages", {"text": "x", "model": "scripted:/etc/\x00passwd"}, 400),
        ("POST", "/api/sessions", {"host_id": ["h"]}, 400),
        ("GET", "/api/no-such-route", None, 404),
        ("DELETE", "/api/me", None, 405),
    ]
    for method, path, body, status in cases:
        response = alice.call(method, path, json=body)
        assert response.status_code == status, (path, body, response.status_code, response.text[:200])
        assert response.headers["Content-Type"].startswith("application/json"), (path, body)
        assert response.json()["error"]
    root = requests.Session()
    root.headers["Authorization"] = f"Bearer {server.token('root', admin=True)}"
    bad = root.put(server.url + "/api/admin/users/alice/policy", json={"policy": ["auto"]}, timeout=10)
    assert bad.status_code == 400 and bad.json()["error"]


def test_an_unexpected_failure_is_a_json_500(server, alice, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(server.state.store.sessions, "list_sessions", broken)
    response = alice.call("GET", "/api/sessions")
    assert response.status_code == 500 and response.headers["Content-Type"].startswith("application/json")
    assert "disk on fire" not in response.text and response.json()["error"]


def test_the_scripted_directory_check_is_made_again_when_the_model_is_used(server, alice, host, scripts_dir,
                                                                        tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text('{"turns": [[{"text": "read from outside the allowed directory"}]]}')
    inside = scripts_dir / "later.json"
    spec = write_script(inside, [say("inside")])
    session_id = alice.new_session(host.host_id, spec)
    inside.unlink()
    os.symlink(outside, inside)  # the file becomes a symlink out of the allowed directory after the check
    response = alice.call("POST", f"/api/sessions/{session_id}/messages", json={"text": "hi"})
    assert response.status_code == 403 and "NEXUS_SCRIPTED_DIRS" in response.json()["error"]
    assert "read from outside" not in response.text


def test_every_response_carries_csp_and_nosniff(server, alice, host, scripts_dir):
    session_id = alice.new_session(host.host_id, write_script(scripts_dir / "h.json", [say("x")]))
    for method, path in [("GET", "/api/me"), ("GET", f"/api/sessions/{session_id}"), ("GET", "/api/nothing"),
                         ("GET", "/static/js/api.js"), ("GET", "/"), ("POST", "/api/sessions")]:
        response = alice.call(method, path, json={} if method == "POST" else None)
        assert response.headers.get("X-Content-Type-Options") == "nosniff", path
        assert "default-src 'self'" in response.headers.get("Content-Security-Policy", ""), path
    anonymous = requests.get(server.url + "/api/me", timeout=10)
    assert anonymous.status_code == 401 and anonymous.headers["X-Content-Type-Options"] == "nosniff"


def test_an_admin_can_view_another_users_images(server, alice, host, scripts_dir):
    session_id = alice.new_session(host.host_id, write_script(scripts_dir / "i.json", [say("x")]))
    image_id = server.state.store.save_image(session_id, b"\x89PNG\r\n\x1a\nfake")
    root = requests.Session()
    root.headers["Authorization"] = f"Bearer {server.token('root', admin=True)}"
    image = root.get(f"{server.url}/api/admin/sessions/{session_id}/images/{image_id}", timeout=10)
    assert image.status_code == 200 and image.headers["Content-Type"] == "image/png"
    assert image.content.startswith(b"\x89PNG")
    assert root.get(f"{server.url}/api/admin/sessions/{session_id}/images/nope", timeout=10).status_code == 404
    assert alice.call("GET", f"/api/admin/sessions/{session_id}/images/{image_id}").status_code == 403
