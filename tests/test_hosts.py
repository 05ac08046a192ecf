"""Host capability providers: one module per host owns everything host-specific; the runtimes and the
wire contract stand alone."""
from __future__ import annotations

import ast
import configparser
import fnmatch
import subprocess
import sys
from pathlib import Path

import pytest

from cloud.contract import ContractError
from cloud.hosts.hello import Hello
from cloud.hosts.registry import PROVIDER_MODULES, get_provider, host_labels, host_tool_definitions
from shared_contract import SCHEMA_DIR
from shared_contract.validate import tool_definitions
from tests.support.client import write_script

ROOT = Path(__file__).resolve().parents[1]
IRONPYTHON = "2.7.12 (IronPython 2.7.12 (2.7.12.1000) on .NET 4.0.30319.42000 (64-bit))"


def hello_of(host_app: str, **fields) -> dict:
    return {"type": "hello", "host_app": host_app, "host_version": "2026 (26.0.4.409)", "runtime_version": "1.0",
            "python_version": "3.11.7", "document": {"title": "Tower A", "schema": "IFC4"},
            "capabilities": ["hold", "context"], **fields}


def test_hello_is_parsed_once_into_a_typed_value():
    message = hello_of("revit", python_version=IRONPYTHON, host_id="h_1")
    hello = Hello.parse(message)
    assert (hello.host_app, hello.host_version, hello.runtime_version) == ("revit", "2026 (26.0.4.409)", "1.0")
    assert hello.python_version == IRONPYTHON and hello.python_major == 2
    assert hello.title == "Tower A" and hello.document["schema"] == "IFC4" and hello.host_id == "h_1"
    assert hello.has("hold") and hello.has("context") and not hello.has("review")
    # It still reads as the message it came from, for code that wants the wire form.
    assert hello.raw == message and hello.as_message() == message and hello["host_app"] == "revit"
    assert hello.get("capabilities") == ["hold", "context"] and dict(hello) == message
    with pytest.raises(TypeError, match="Hello.parse takes the hello message"):
        Hello.parse(hello)  # one way in: the wire dict; code that has a Hello passes it on as it is
    assert hello == message and message == hello and hello == Hello.parse(dict(message))
    assert hello != {**message, "host_version": "2025"}
    assert Hello.parse(hello_of("ifc", python_version="unknown")).python_major is None
    assert not Hello.parse({k: v for k, v in message.items() if k != "capabilities"}).has("hold")


def test_a_malformed_hello_is_refused_naming_the_field():
    with pytest.raises(ContractError, match="invalid hello message: python_version"):
        Hello.parse(hello_of("ifc", python_version=""))
    with pytest.raises(ContractError, match="'document' is a required property"):
        Hello.parse({k: v for k, v in hello_of("ifc").items() if k != "document"})


@pytest.mark.parametrize("host_app", ["ifc", "revit", "test"])
def test_every_provider_owns_everything_host_specific(host_app):
    provider = get_provider(host_app)
    hello = Hello.parse(hello_of(host_app))
    assert provider.host_app == host_app and provider.capability_version
    assert host_labels(host_app) == {"display_name": provider.display_name, "referred_to_as": provider.referred_to_as,
                                     "busy_hint": provider.busy_hint}
    assert provider.display_name and provider.referred_to_as
    assert provider.script_dialect(hello).python_major in (2, 3)
    fragment = provider.system_prompt_fragment(hello)
    assert "Tower A" in fragment or "2026" in fragment
    assert "$" not in fragment
    assert len(provider.views_description(hello)) > 40
    assert provider.build_task_automation_epilogue().strip()
    source = provider.api_index_source(hello)
    assert source is not None and source.key.startswith(f"{host_app}:")


def test_the_script_dialect_comes_from_the_provider():
    revit, ifc = get_provider("revit"), get_provider("ifc")
    ironpython = revit.script_dialect(Hello.parse(hello_of("revit", python_version=IRONPYTHON)))
    assert ironpython.name == "ironpython2" and not ironpython.compiles_here
    # pyRevit's default engine is IronPython 2.7: a version the provider cannot read counts as that.
    assert revit.script_dialect(Hello.parse(hello_of("revit", python_version="unknown"))) == ironpython
    cpython = revit.script_dialect(Hello.parse(hello_of("revit", python_version="3.12.3 (CPython)")))
    assert cpython.name == "python3" and cpython.compiles_here
    assert ifc.script_dialect(Hello.parse(hello_of("ifc", python_version="garbage"))).compiles_here


def _capture_description(hello: dict | None) -> str:
    return {t["name"]: t for t in host_tool_definitions(Hello.parse(hello))}["capture_view"]["description"]


def test_capture_view_lists_every_kind_of_view_each_host_offers():
    canonical = {t["name"]: t for t in tool_definitions()}
    ifc = _capture_description(hello_of("ifc"))
    for kind in ("storey's `Name`", "`#<id>`", "`3D`", "`3D: <storey>`", "orange"):
        assert kind in ifc, kind
    revit = _capture_description(hello_of("revit"))
    for kind in ("Project Browser", "Floor Plan: Level 1", "3D View: {3D}", "sections", "elevations",
                 "schedules and view templates cannot", "active view"):
        assert kind in revit, kind
    assert ifc.startswith(canonical["capture_view"]["description"]) and "Revit" not in ifc
    assert "IFC" not in revit and "storey" not in revit
    # Without a host the model gets the canonical definitions; the other tools never change.
    assert host_tool_definitions(None) == tool_definitions()
    for hello in (Hello.parse(hello_of(app)) for app in ("ifc", "revit", "test")):
        tools = host_tool_definitions(hello)
        assert [t["name"] for t in tools] == [t["name"] for t in tool_definitions()]
        assert [t for t in tools if t["name"] != "capture_view"] == \
            [t for t in tool_definitions() if t["name"] != "capture_view"]
        assert host_tool_definitions(hello) is tools  # cached: the same prefix turn after turn


def test_the_test_host_exists_only_because_the_tests_registered_it():
    assert "test" not in PROVIDER_MODULES
    sources = [p for p in (ROOT / "cloud").rglob("*.py")] + list(SCHEMA_DIR.rglob("*.json"))
    for path in sources:
        assert "tests.support" not in path.read_text(encoding="utf-8"), path


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


STANDALONE = {
    "ifc_host": "ifc_host.runtime, ifc_host.protocol, ifc_host.executor, ifc_host.render, ifc_host.sample",
    "shared_contract": "shared_contract.validate",
}


@pytest.mark.parametrize("package", sorted(STANDALONE))
def test_runtimes_and_the_contract_import_nothing_from_the_orchestrator(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files
    for path in files:
        assert not {n for n in _imports(path) if n == "cloud" or n.startswith("cloud.")}, path
    script = f"import sys, {STANDALONE[package]}\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'cloud'))"
    loaded = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"


def test_the_contract_package_ships_its_schemas_and_validation():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert "shared_contract" in config["options.packages.find"]["include"].split()
    patterns = [p.strip() for p in config["options.package_data"]["shared_contract"].split(",")]
    for path in SCHEMA_DIR.rglob("*.json"):
        relative = path.relative_to(SCHEMA_DIR).as_posix()
        assert any(fnmatch.fnmatch(relative, p) and relative.count("/") == p.count("/") for p in patterns), relative
    assert (SCHEMA_DIR / "validate.py").exists()


def test_a_host_added_by_one_module_reaches_the_model_and_the_person(server, alice, host, scripts_dir,
                                                                     scripted_requests):
    seen = scripted_requests
    spec = write_script(scripts_dir / "views.json", [
        [{"tool_call": {"name": "capture_view", "input": {"view": "Level 2"}}}], [{"text": "seen"}]])
    stream = alice.run(alice.new_session(host.host_id, spec), "show me level 2")
    assert stream.last["type"] == "Complete"
    assert 'an in-memory test document "Test document"' in seen[0].system
    capture = {t["name"]: t for t in seen[0].tools}["capture_view"]["description"]
    assert "Views on the test host: 'Level 1', 'Level 2'" in capture
    assert seen[1].tools == seen[0].tools  # the same definitions every turn: a stable cache prefix
    assert [m["view"] for m in host.received if m["type"] == "export_view"] == ["Level 2"]


@pytest.mark.parametrize("dialect, checked", [("python3", True), ("ironpython2", False)])
def test_edits_are_syntax_checked_only_in_a_dialect_the_cloud_can_parse(server, alice, host, scripts_dir,
                                                                        monkeypatch, dialect, checked):
    from cloud.hosts.base import IRONPYTHON2, PYTHON3

    chosen = {"python3": PYTHON3, "ironpython2": IRONPYTHON2}[dialect]
    monkeypatch.setattr(get_provider("test"), "script_dialect", lambda hello: chosen)
    spec = write_script(scripts_dir / f"edit-{dialect}.json", [
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": "doc.add('Door', 'D9')\n"}}}],
        [{"tool_call": {"name": "execute_task_automation",
                        "input": {"edits": [{"old": "doc.add('Door', 'D9')", "new": "print 'py2 only'"}]}}}],
        [{"text": "done"}]])
    stream = alice.run(alice.new_session(host.host_id, spec), "add a door, then edit")
    edited = stream.of("Metadata", "tool_result")[1]
    assert ("the merged script does not parse" in edited["content"]) is checked, edited["content"]


def test_hosts_are_listed_with_the_names_their_provider_gives_them(server, alice, host):
    listed = alice.call("GET", "/api/hosts").json()["hosts"]
    assert [(h["host_id"], h["host_app"], h["display_name"], h["referred_to_as"]) for h in listed] == \
        [(host.host_id, "test", "Test host", "the test host")]
    connection = server.state.hosts.get(host.host_id)
    assert isinstance(connection.hello, Hello) and connection.hello.has("hold") and connection.hello.title


def test_the_chat_page_names_hosts_only_from_the_api():
    script = (ROOT / "cloud" / "static" / "js" / "chat.js").read_text(encoding="utf-8")
    assert "display_name" in script and "referred_to_as" in script
    for name in ("revit", "ifc", "Revit", "IFC"):
        assert f'"{name}"' not in script and f"{name}:" not in script, name


def test_only_a_host_that_can_be_held_up_by_its_window_gives_a_busy_hint_and_the_page_has_none_of_its_own():
    assert "press Esc in Revit" in get_provider("revit").busy_hint
    assert get_provider("ifc").busy_hint is None  # scripts run in a child process: no dialog holds them
    assert host_labels("nonesuch")["busy_hint"] is None
    scripts = {page: (ROOT / "cloud" / "static" / "js" / page).read_text(encoding="utf-8")
               for page in ("tool_card.js", "conversation.js", "chat.js")}
    assert not [page for page, script in scripts.items() if "Revit" in script]
    assert "host.busy_hint" in scripts["chat.js"]  # the page shows the hint the host list carries


def test_a_host_app_this_server_has_no_provider_for_is_refused_at_the_door(server, alice, monkeypatch):
    import json

    import websocket

    from cloud.hosts import registry

    monkeypatch.delitem(registry._registered, "test")  # as in production: no test host
    ws = websocket.create_connection(server.ws_url, header=[f"Authorization: Bearer {alice.token}"], timeout=10)
    try:
        ws.send(json.dumps(hello_of("test")))
        reply = json.loads(ws.recv())
    finally:
        ws.close()
    assert reply["type"] == "error"
    assert "host_app: no capability provider for 'test' on this server (known: ifc, revit)" in reply["message"]
    assert alice.call("GET", "/api/hosts").json()["hosts"] == []


def test_every_kind_of_view_the_revit_description_names_is_what_the_revit_runtime_exports():
    """What the model is told about Revit views is what the runtime does, run on the fake Revit."""
    from tests.revit.conftest import make_revit, runtime_module  # puts the extension's lib on sys.path
    from tests.revit.fake_revit import uninstall

    described = _capture_description(hello_of("revit"))
    revit = make_revit()
    try:
        export = runtime_module("image_export").export_view
        from nexus_runtime.log import RuntimeLog

        def exported(view: str | None, element_ids: list[int] | None = None) -> dict:
            message = {"type": "export_view", "request_id": "v", "view": view, "element_ids": element_ids or [],
                       "max_px": 400}
            return revit.run_on_main(export, revit.uiapp, message, RuntimeLog())

        kinds = {  # (the description's wording, a view in that form) -> the view Revit exported
            ("by its name as the Project Browser shows it", "Level 2"): "Level 2",
            ("by its title with the view type", "Floor Plan: Level 2"): "Level 2",
            ("3D View: {3D}", "3D View: {3D}"): "{3D}",
            ('"{3D}"', "{3D}"): "{3D}",
            ("then the name without regard to case", "level 2"): "Level 2",
        }
        for (wording, view), name in kinds.items():
            assert wording in described, wording
            result = exported(view)
            assert result["ok"] and result["view"] == name, (view, result)
        assert "schedules and view templates cannot" in described
        refused = exported("Door Schedule")
        assert not refused["ok"] and "cannot be exported" in refused["error"]
        # Without a view, the elements choose it: their level's plan when the active view does not show them.
        def door_on_level_2_and_active_view() -> tuple[int, str]:
            uidoc = revit.uiapp.ActiveUIDocument
            doc = uidoc.Document
            door = next(i for i, e in doc._elements.items()
                        if type(e).__name__ == "FamilyInstance" and doc.GetElement(e.LevelId).Name == "Level 2")
            return door, uidoc.ActiveView.Name

        door, active = revit.run_on_main(door_on_level_2_and_active_view)
        assert "else the floor plan of their most common level" in described and active != "Level 2"
        shown = exported(None, [door])
        assert shown["ok"] and shown["view"] == "Level 2", shown
    finally:
        revit.stop()
        uninstall()
