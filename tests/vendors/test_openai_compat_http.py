"""Issue 13 H1 against the real server over loopback: `openai-compat` endpoints come from the server's
configuration, the key never reaches a URL a user typed, and an endpoint's error text is not echoed."""
from __future__ import annotations

import pytest

from tests.vendors.replay.base import HttpError, Turn
from tests.vendors.replay.chat_completions import ChatCompletionsReplay

KEY = "compat-secret-key"


@pytest.fixture
def allowed(monkeypatch):
    """The endpoint the server's operator configured, named `local`."""
    with ChatCompletionsReplay() as replay:
        monkeypatch.setenv("NEXUS_OPENAI_COMPAT_ENDPOINTS", f"local={replay.url}/v1")
        monkeypatch.delenv("OPENAI_COMPAT_BASE_URL", raising=False)
        monkeypatch.setenv("OPENAI_COMPAT_API_KEY", KEY)
        yield replay


@pytest.fixture
def attacker():
    """Somewhere a user would like the server to POST its prompt and key to."""
    with ChatCompletionsReplay() as replay:
        replay.default = Turn([{"text": "thanks for the transcript"}])
        yield replay


def test_a_url_the_server_does_not_list_is_refused_with_403_and_never_contacted(server, alice, host, allowed,
                                                                                attacker, scripts_dir):
    spec = f"openai-compat:x@{attacker.url}/v1"
    created = alice.call("POST", "/api/sessions", json={"host_id": host.host_id, "model": spec})
    assert created.status_code == 403
    error = created.json()["error"]
    assert "does not reach URLs given in a request" in error and "local" in error
    assert alice.call("POST", "/api/sessions", json={"model": "openai-compat:x@elsewhere"}).status_code == 403

    session_id = alice.new_session(host.host_id, "openai-compat:qwen3@local")
    switched = alice.call("POST", f"/api/sessions/{session_id}/messages", json={"text": "hi", "model": spec})
    assert switched.status_code == 403
    assert attacker.requests == []


def test_a_named_endpoint_works_over_http_and_only_it_receives_the_key(server, alice, host, allowed, attacker):
    allowed.enqueue(Turn([{"text": "Two storeys."}]))
    session_id = alice.new_session(host.host_id, "openai-compat:qwen3@local")
    stream = alice.run(session_id, "how many storeys?")
    assert stream.last == {"type": "Complete", "content": "Two storeys."}
    assert allowed.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert attacker.requests == []
    # The session shows the endpoint by name: its URL stays in the server's configuration.
    session = alice.call("GET", f"/api/sessions/{session_id}").json()
    assert session["model"] == "openai-compat:qwen3@local" and allowed.url not in str(session)


def test_the_endpoints_error_text_does_not_reach_the_client(server, alice, host, allowed):
    allowed.enqueue(HttpError(404, "model 'x' not found; admin console at http://10.1.2.3:9000"))
    session_id = alice.new_session(host.host_id, f"openai-compat:x@{allowed.url}/v1")  # an allowed URL
    stream = alice.run(session_id, "hi")
    [error] = stream.of("Error")
    assert "10.1.2.3" not in error["content"] and "admin console" not in error["content"]
    assert "HTTP 404" in error["content"] and "'local'" in error["content"]


def test_nexus_run_reaches_a_url_typed_on_its_own_command_line_without_the_key(tmp_path, attacker):
    import os
    import subprocess
    import sys

    from ifc_host.sample import write_sample_model

    model_path = tmp_path / "sample.ifc"
    write_sample_model(model_path, storeys=1)
    env = {**os.environ, "OPENAI_COMPAT_API_KEY": KEY, "NEXUS_OPENAI_COMPAT_ENDPOINTS": ""}
    env.pop("OPENAI_COMPAT_BASE_URL", None)
    done = subprocess.run([sys.executable, "-m", "cloud.cli", "run", "hi", "--ifc", str(model_path), "--db",
                           str(tmp_path / "cli.db"), "--model", f"openai-compat:qwen3@{attacker.url}/v1", "--json"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "thanks for the transcript" in done.stdout
    assert attacker.requests and attacker.requests[0].headers["authorization"] == "Bearer not-needed"
