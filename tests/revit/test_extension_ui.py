"""startup.py, the three buttons and the dockable pane, run as pyRevit would run them (on the fake
Revit's main thread), against the real orchestrator."""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from tests.revit.conftest import EXTENSION, make_revit, runtime_module
from tests.revit.fake_revit import FakeRevit, uninstall
from tests.revit.fake_revit.pyrevit_fake import Guid
from tests.revit.fake_revit.ui import DockablePaneId
from tests.support.waiting import wait_until

PANEL = EXTENSION / "NexusAI.tab" / "NexusAI.panel"
PANE_ID = "5d3f8c1e-6b7a-4f2e-9c41-2a7e0b9d6f13"


def run_file(revit: FakeRevit, path: Path) -> dict:
    return revit.run_on_main(runpy.run_path, str(path), None, "__main__")


def press(revit: FakeRevit, button: str) -> dict:
    return run_file(revit, PANEL / f"{button}.pushbutton" / "script.py")


def pane_of(revit: FakeRevit):
    return revit.panes[DockablePaneId(Guid(PANE_ID))]


def tick(revit: FakeRevit) -> None:
    """One second of the pane's DispatcherTimer."""
    for timer in revit.timers:
        if timer.IsEnabled:
            revit.run_on_main(timer.Tick.fire, timer, None)




@pytest.fixture
def started(tmp_path, monkeypatch):
    """A fake Revit that ran startup.py like pyRevit does at load; yields (session, runtime)."""
    sessions = []

    def start(configure=None, **options):
        monkeypatch.setenv("APPDATA", str(tmp_path / "appdata"))
        monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "localappdata"))
        session = make_revit(**options)
        sessions.append(session)
        if configure:
            section = session.user_config.add_section("NexusAI")
            for key, value in configure.items():
                section.set_option(key, value)
        run_file(session, EXTENSION / "startup.py")
        session.startup_complete = True
        return session, runtime_module("registry").current_runtime()

    yield start
    for session in sessions:
        runtime = runtime_module("registry").current_runtime()
        if runtime is not None:
            session.run_on_main(runtime.shutdown)
            runtime_module("registry").set_runtime(None)
        session.stop()
        uninstall()


def test_startup_registers_the_pane_and_a_runtime_that_waits_for_settings(started, tmp_path):
    revit, runtime = started()
    assert pane_of(revit).GetTitle() == "NexusAI" and not pane_of(revit).IsShown()
    assert runtime is not None and runtime.status()["wanted"] is False
    assert "Not configured" in runtime.status()["summary"]
    assert len(revit.external_events) == 1  # created on the main thread at startup
    assert (tmp_path / "appdata" / "NexusAI").is_dir()


def test_settings_then_connect_reaches_the_server(started, server):
    token = server.token("alice")
    revit, runtime = started()
    revit.prompt_answers = [server.url + "/", token]
    press(revit, "Settings")
    assert runtime.settings.server_url == server.url and runtime.settings.token == token
    assert revit.user_config.get_section("NexusAI").get_option("token") == token
    assert revit.user_config.saved >= 1

    press(revit, "Connect")
    host_id = server.wait_for_host(token)
    wait_until(lambda: runtime.status()["state"] == "connected")
    assert runtime.status()["host_id"] == host_id and revit.button_icon_states == [True]
    hello = server.state.hosts.get(host_id).hello
    assert hello["host_app"] == "revit" and hello["document"]["title"] == "Tower A"
    assert hello["host_version"].startswith("2026") and hello["python_version"].startswith("3.")

    press(revit, "Connect")
    assert revit.button_icon_states == [True, False]
    wait_until(lambda: not server.state.hosts.for_user("alice"))


def test_settings_refuses_a_bad_url_and_cancel_changes_nothing(started):
    revit, runtime = started()
    revit.prompt_answers = ["ftp://example.com", "t"]
    press(revit, "Settings")
    assert "http://" in revit.alerts[-1][1] and runtime.settings.token == ""
    revit.prompt_answers = [None]
    press(revit, "Settings")
    assert runtime.settings.token == "" and len(revit.prompts) == 3


def test_connect_without_settings_explains_what_to_do(started):
    revit, runtime = started()
    press(revit, "Connect")
    assert "Settings" in revit.alerts[-1][1] and runtime.status()["wanted"] is False


def test_auto_connect_at_startup_and_the_chat_pane_binds_to_this_host(started, server):
    token = server.token("bob")
    revit, runtime = started({"server_url": server.url, "token": token})
    host_id = server.wait_for_host(token)
    wait_until(lambda: runtime.status()["state"] == "connected")

    press(revit, "Chat")
    pane = pane_of(revit)
    assert pane.IsShown()
    panel = pane._data.FrameworkElement
    tick(revit)
    assert host_id in panel.status_text.Text and panel.connect_button.Content == "Disconnect"

    revit.run_on_main(panel.open_browser_button.click)
    assert revit.opened_urls == [f"{server.url}/?host={host_id}"]

    webview = revit.webviews[0]  # runtime 150 with the assemblies present: embedded
    assert webview.environment.Options.AdditionalBrowserArguments == "--edge-webview-unique-window-class"
    assert "localappdata" in webview.environment.UserDataFolder
    assert webview.implicitly_initialised is False
    assert webview.Source.OriginalString == f"{server.url}/?host={host_id}"


def test_without_webview2_the_pane_offers_the_browser_only(started, server):
    token = server.token("carol")
    revit, runtime = started({"server_url": server.url, "token": token}, webview2_assemblies=False)
    host_id = server.wait_for_host(token)
    wait_until(lambda: runtime.status()["state"] == "connected")
    panel = pane_of(revit)._data.FrameworkElement
    tick(revit)
    assert revit.webviews == [] and "not available" in panel.browser_note.Text
    revit.run_on_main(panel.open_browser_button.click)
    assert revit.opened_urls == [f"{server.url}/?host={host_id}"]


def test_an_old_webview2_runtime_is_not_embedded(started):
    revit, _runtime = started(webview2_runtime="120.0.2210.91")
    assert revit.webviews == [] and "older than 149" in pane_of(revit)._data.FrameworkElement.browser_note.Text


def test_the_pane_connect_button_toggles_the_connection(started, server):
    token = server.token("dave")
    revit, runtime = started({"server_url": server.url, "token": token, "auto_connect": False})
    panel = pane_of(revit)._data.FrameworkElement
    assert runtime.status()["wanted"] is False
    revit.run_on_main(panel.connect_button.click)
    server.wait_for_host(token)
    assert runtime.status()["wanted"] is True
    revit.run_on_main(panel.connect_button.click)
    assert runtime.status()["wanted"] is False and panel.connect_button.Content == "Connect"


def test_chat_before_any_document_is_open_explains_instead_of_failing(started):
    revit, _runtime = started(with_document=False)
    press(revit, "Chat")
    assert "once a document is open" in revit.alerts[-1][1]


def test_a_pyrevit_reload_replaces_the_runtime_without_a_second_pane(started, server):
    token = server.token("erin")
    revit, first = started({"server_url": server.url, "token": token})
    server.wait_for_host(token)
    run_file(revit, EXTENSION / "startup.py")  # pyRevit reload: startup.py runs again
    second = runtime_module("registry").current_runtime()
    assert second is not first
    assert first.connection.state == "stopped" and first.event._disposed
    assert len(revit.panes) == 1
    wait_until(lambda: second.status()["state"] == "connected")


def test_the_extension_follows_pyrevit_s_layout():
    import json

    from PIL import Image

    manifest = json.loads((EXTENSION / "extension.json").read_text())
    assert manifest["type"] == "extension" and manifest["name"] == "NexusAI"
    assert (EXTENSION / "startup.py").is_file() and (EXTENSION / "lib" / "nexus_runtime" / "__init__.py").is_file()
    expected_icons = {"Chat": ["icon"], "Settings": ["icon"], "Connect": ["icon", "on", "off"]}
    for button, icons in expected_icons.items():
        bundle = PANEL / f"{button}.pushbutton"
        settings = dict(line.split(":", 1) for line in (bundle / "bundle.yaml").read_text().splitlines()
                        if ":" in line and not line.startswith(" "))
        assert settings["title"].strip() == button and settings["tooltip"].strip()
        assert (bundle / "script.py").is_file()
        for icon in icons:
            for variant in ("", ".dark"):
                with Image.open(bundle / f"{icon}{variant}.png") as image:
                    assert image.format == "PNG" and image.size == (96, 96)


def test_open_in_browser_goes_through_the_shell_on_net8(started):
    """Issue 16, item 3: on Revit 2025+ (.NET 8) Process.Start(url) throws; the click must not."""
    revit, _runtime = started({"server_url": "http://127.0.0.1:9", "token": "t", "auto_connect": False})
    panel = pane_of(revit)._data.FrameworkElement
    revit.run_on_main(panel.open_browser_button.click)
    assert revit.opened_urls == ["http://127.0.0.1:9/"]


def test_webview2_starts_when_the_pane_is_loaded_not_during_startup(started):
    """Issue 16, item 5: no synchronization context during OnStartup; the pane's Loaded event has one."""
    revit, _runtime = started()
    assert revit.webviews == []  # nothing was tried while Revit started up
    press(revit, "Chat")
    wait_until(lambda: revit.webviews and revit.webviews[0].environment is not None)
    folder = revit.webviews[0].environment.UserDataFolder
    assert folder.endswith("Revit 2026") and "localappdata" in folder
    assert "could not start" not in pane_of(revit)._data.FrameworkElement.browser_note.Text


def test_a_webview2_start_that_fails_is_tried_again_when_the_pane_is_shown_again(started):
    revit, _runtime = started()
    revit.webview2_start_failures = 1
    press(revit, "Chat")
    panel = pane_of(revit)._data.FrameworkElement
    wait_until(lambda: "could not start" in panel.browser_note.Text)
    assert revit.webviews == [] or revit.webviews[-1].environment is None
    revit.run_on_main(pane_of(revit).Hide)
    press(revit, "Chat")  # shown again: Loaded again
    wait_until(lambda: revit.webviews and revit.webviews[-1].environment is not None)
    assert len(panel.browser_host.Children) == 1  # the failed WebView2 was removed
