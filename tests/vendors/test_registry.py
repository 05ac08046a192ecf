"""The vendor registry: a vendor is one module plus one registration, and the model list the chat page
offers comes from it (GET /api/models), never with a key or an endpoint's URL."""
from __future__ import annotations

import threading

import pytest

from cloud.transcript import user_text
from cloud.vendors import registry
from cloud.vendors.base import ModelSpecError, TurnRequest
from tests.e2e.conftest import browser, browser_factory, playwright_driver  # noqa: F401  (browser fixtures)
from tests.support.client import Client
from tests.vendors.replay.base import drain

VENDOR_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
               "OPENAI_COMPAT_BASE_URL", "NEXUS_OPENAI_COMPAT_ENDPOINTS", "ECHO_API_KEY")


@pytest.fixture(autouse=True)
def no_keys(monkeypatch):
    for key in VENDOR_KEYS:
        monkeypatch.delenv(key, raising=False)


@pytest.fixture
def echo_vendor():
    registry.register_vendor("echo", "tests.vendors.echo_vendor")
    yield
    registry.unregister_vendor("echo")


def test_a_vendor_defined_only_under_tests_is_one_module_and_one_registration(echo_vendor, monkeypatch):
    model = registry.create_model("echo:parrot")
    assert (model.vendor, model.spec, model.image_max_px, model.context_window) == ("echo", "echo:parrot", 640, 8000)
    assert model.key_env == "ECHO_API_KEY" and not model.configured and "echo" not in registry.configured_vendors()
    chunks, turn = drain(model.stream(TurnRequest("s", [user_text("hello there")], (), 100, "s"), threading.Event()))
    assert turn.text == "parrot: hello there" and [c.content for c in chunks] == ["parrot:", " hello", " there"]
    monkeypatch.setenv("ECHO_API_KEY", "k")
    assert "echo" in registry.configured_vendors() and registry.default_model_spec() == "echo:echo"
    registry.unregister_vendor("echo")
    with pytest.raises(ModelSpecError, match="unknown vendor 'echo'"):
        registry.create_model("echo:parrot")


def test_the_test_vendor_runs_over_http_and_is_listed(echo_vendor, monkeypatch, server, alice, host):
    monkeypatch.setenv("ECHO_API_KEY", "k")
    listed = alice.call("GET", "/api/models").json()
    echo = next(v for v in listed["vendors"] if v["name"] == "echo")
    assert echo["configured"] and echo["suggested"] == ["echo:echo", "echo:parrot"]
    assert listed["models"] == ["echo:echo", "echo:parrot"] and listed["configured_vendors"] == ["echo"]
    stream = alice.run(alice.new_session(host.host_id, "echo:parrot"), "two doors")
    assert stream.last == {"type": "Complete", "content": "parrot: two doors"}


def test_the_model_list_needs_a_token_and_shows_no_key_or_endpoint_url(server, alice, monkeypatch):
    assert Client(server.url, None).call("GET", "/api/models").status_code == 401
    monkeypatch.setenv("ANTHROPIC_API_KEY", "anthropic-very-secret")
    monkeypatch.setenv("OPENAI_COMPAT_API_KEY", "compat-very-secret")
    monkeypatch.setenv("NEXUS_OPENAI_COMPAT_ENDPOINTS",
                       "local=http://127.0.0.1:11434/v1,gpu=https://svc:hunter2@gpu.internal:8000/v1")
    response = alice.call("GET", "/api/models")
    body = response.json()
    assert body["openai_compat_endpoints"] == ["gpu", "local"]
    assert body["configured_vendors"] == ["anthropic", "openai-compat"]
    assert body["models"][0] == "anthropic:claude-sonnet-4-6" and "openai:gpt-5.1" not in body["models"]
    anthropic = next(v for v in body["vendors"] if v["name"] == "anthropic")
    assert anthropic["key_env"] == "ANTHROPIC_API_KEY" and anthropic["configured"]
    assert "scripted" not in [v["name"] for v in body["vendors"]]
    for secret in ("very-secret", "hunter2", "gpu.internal", "11434"):
        assert secret not in response.text


def test_the_chat_page_offers_the_models_the_api_lists(echo_vendor, server, alice, browser, monkeypatch):  # noqa: F811
    monkeypatch.setenv("ECHO_API_KEY", "k")
    monkeypatch.setenv("GEMINI_API_KEY", "g")
    monkeypatch.setenv("NEXUS_OPENAI_COMPAT_ENDPOINTS", "local=http://127.0.0.1:11434/v1")
    browser.sign_in(server.url, alice.token)
    browser.ready()
    page = browser.page
    page.wait_for_function("document.querySelectorAll('#model-options option').length > 0")
    offered = page.eval_on_selector_all("#model-options option", "options => options.map(o => o.value)")
    assert offered == ["gemini:gemini-2.5-pro", "gemini:gemini-2.5-flash", "echo:echo", "echo:parrot",
                       "openai-compat:MODEL@local"]


def test_nexus_models_names_endpoints_and_missing_keys_without_urls(monkeypatch):
    import subprocess
    import sys

    monkeypatch.setenv("GEMINI_API_KEY", "g")
    monkeypatch.setenv("NEXUS_OPENAI_COMPAT_ENDPOINTS", "gpu=https://svc:hunter2@gpu.internal:8000/v1")
    out = subprocess.run([sys.executable, "-m", "cloud.cli", "models"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    assert "no key: set ANTHROPIC_API_KEY" in out and "openai-compat endpoints: gpu" in out
    assert "default: gemini:gemini-2.5-pro" in out and "hunter2" not in out and "gpu.internal" not in out
