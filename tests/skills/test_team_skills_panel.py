"""The extension's "Team skills" panel: the team's Revit skills fetched from a real server (with the
extension's token, a host token) and written as pushbutton bundles; only NexusAI's own folders change."""
from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import requests

from cloud.skills.library import SkillLibrary
from tests.revit.conftest import LIB  # noqa: F401  (puts the extension's lib on sys.path)
from tests.revit.test_python27_syntax import python27_errors
from tests.support.server import running_server


def _fetch(server_url: str, token: str) -> list[dict]:
    request = urllib.request.Request(server_url + "/api/skills/pyrevit", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["bundles"]


def _save(store, user: str, name: str, host_app: str = "revit") -> None:
    SkillLibrary(store).save(user_name=user, name=name, description=f"{name} description", host_app=host_app,
                             code="MARK = 'A'\nprint(MARK)\n", parameters=[], capability_version="1",
                             provenance={}, example={})


def test_reload_writes_the_team_s_revit_skills_into_the_panel(tmp_path):
    from nexus_runtime import team_skills
    from nexus_runtime.settings import Settings

    with running_server(tmp_path) as server:
        store = server.state.store
        admin = server.token("root", admin=True)
        requests.put(server.url + "/api/admin/teams/south/members/carol", timeout=10,
                     headers={"Authorization": f"Bearer {admin}"}).raise_for_status()
        _save(store, "alice", "Wall marks")
        _save(store, "alice", "Door tags")
        _save(store, "alice", "IFC only", host_app="ifc")
        _save(store, "carol", "Other team")
        host_token = store.create_token("alice", scope="host")
        assert requests.get(server.url + "/api/skills/pyrevit", timeout=10).status_code == 401
        assert requests.get(server.url + "/api/skills", timeout=10,
                            headers={"Authorization": f"Bearer {host_token}"}).status_code == 403

        extension = tmp_path / "NexusAI.extension"
        panel = extension / "NexusAI.tab" / team_skills.PANEL_FOLDER
        (panel / "Mine.pushbutton").mkdir(parents=True)  # someone's own button: never touched
        (panel / "Mine.pushbutton" / "script.py").write_text("print('mine')\n")
        settings = Settings(server_url=server.url, token=host_token)
        text = team_skills.refresh(str(extension), settings, fetch=_fetch)
        assert text == "NexusAI: team skills: 2 button(s) written, 0 removed"
        assert sorted(p.name for p in panel.iterdir()) == ["Door tags.pushbutton", "Mine.pushbutton",
                                                            "Wall marks.pushbutton"]
        script = (panel / "Wall marks.pushbutton" / "script.py").read_text(encoding="utf-8")
        assert python27_errors(script) == [] and "nexus_runtime.failure_handling" in script
        assert (panel / "Wall marks.pushbutton" / "icon.png").read_bytes().startswith(b"\x89PNG")

        # a skill marked portable elsewhere joins; one listed no more is removed on the next reload
        assert SkillLibrary(store).set_portable("alice", "IFC only", True)
        with store._write() as db:
            db.execute("DELETE FROM skill_versions WHERE skill_id IN (SELECT id FROM skills WHERE name = ?)",
                       ("Door tags",))
            db.execute("DELETE FROM skills WHERE name = ?", ("Door tags",))
        text = team_skills.refresh(str(extension), settings, fetch=_fetch)
        assert text == "NexusAI: team skills: 2 button(s) written, 1 removed"
        assert sorted(p.name for p in panel.iterdir()) == ["IFC only.pushbutton", "Mine.pushbutton",
                                                            "Wall marks.pushbutton"]
        assert team_skills.refresh(str(extension), Settings(server_url=server.url, token=""), fetch=_fetch) is None


def test_a_server_cannot_write_outside_the_panel_or_over_a_button_of_someone_else(tmp_path: Path):
    from nexus_runtime import team_skills

    panel = tmp_path / "panel"
    (panel / "Mine.pushbutton").mkdir(parents=True)
    bundle = {"bundle_yaml": "title: x\n", "script": "print(1)\n", "icon_png": "", "sha256": "0", "version": 1}
    written, removed, refused = team_skills.sync_panel(str(panel), [
        {**bundle, "folder": "../../evil.pushbutton"}, {**bundle, "folder": "Mine.pushbutton"},
        {**bundle, "folder": "x.panel"}, "nonsense"])
    assert written == [] and removed == []
    assert [name for name, _ in refused] == ["../../evil.pushbutton", "Mine.pushbutton", "x.panel", None]
    assert not (tmp_path / "evil.pushbutton").exists() and list((panel / "Mine.pushbutton").iterdir()) == []
