"""Issue 19 on the real IFC host: a committed automation saved as a skill over HTTP, found and run by a
(scripted) model on another file and by `nexus skill run`, the sha256 and host checks, and two teams."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import requests

from cloud.assembly import run_session
from cloud.hostlink import session_link
from cloud.skills.library import SkillLibrary
from ifc_host.runtime import start_host_thread
from ifc_host.sample import write_sample_model
from tests.support.memory_model import MemoryModel
from tests.support.server import running_server
from tests.support.spine import automate, collect, say

SCRIPT = '''PREFIX = "D-"
STOREY = "Level 1"
renamed = 0
for storey in model.by_type("IfcBuildingStorey"):
    if storey.Name != STOREY:
        continue
    for rel in storey.ContainsElements:
        for element in rel.RelatedElements:
            if element.is_a("IfcDoor"):
                element.Name = PREFIX + (element.Tag or str(element.id()))
                renamed += 1
print("renamed", renamed)
'''
COUNT = '''print(sorted(d.Name for d in model.by_type("IfcDoor") if (d.Name or "").startswith("{prefix}")))'''


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("samples")
    write_sample_model(folder / "a.ifc", storeys=2)
    write_sample_model(folder / "b.ifc", storeys=3, seed=7)
    return folder / "a.ifc", folder / "b.ifc"


class Stack:
    def __init__(self, server: Any, tmp_path: Path, samples: tuple[Path, Path]) -> None:
        self.server, self.store, self.hosts = server, server.state.store, []
        self.models = []
        for sample in samples:
            model = tmp_path / sample.name
            shutil.copy(sample, model)
            self.models.append(model)

    def host(self, user: str, model: Path) -> str:
        host = start_host_thread(str(model), self.server.url, self.server.token(user))
        self.hosts.append(host)
        return host.wait_connected(60)

    def run(self, user: str, host_id: str, turns: list) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        row = self.store.get_session(self.store.create_session(user, host_id, "scripted:m", {}))
        state = self.server.state
        link = session_link(state.hosts, state.channel, row)
        produced = list(run_session(self.store, state.settings, MemoryModel(turns), link, row, "go",
                                    threading.Event()))
        results = [c.metadata | {"text": c.content} for c in produced
                   if c.type == "Metadata" and c.metadata["kind"] == "tool_result"]
        return results, row

    def api(self, method: str, path: str, token: str, **kw: Any) -> requests.Response:
        return requests.request(method, self.server.url + path, headers={"Authorization": f"Bearer {token}"},
                                timeout=30, **kw)


@pytest.fixture
def stack(tmp_path, samples):
    with running_server(tmp_path, keepalive_s=0.5, tool_timeout_s=120, script_timeout_s=60) as server:
        s = Stack(server, tmp_path, samples)
        try:
            yield s
        finally:
            for host in s.hosts:
                host.stop()


def _save(stack: Stack, token: str, host_id: str, user: str = "alice") -> dict[str, Any]:
    (result,), row = stack.run(user, host_id, [automate(SCRIPT), say("done")])
    assert result["committed"], result["text"]
    ids = {"session_id": row["id"], "tool_call_id": result["tool_call_id"]}
    proposed = stack.api("POST", "/api/skills/proposal", token, json=ids)
    assert proposed.status_code == 200, proposed.text
    assert {p["name"]: p["default"] for p in proposed.json()["parameters"]} == {
        "PREFIX": "D-", "STOREY": "Level 1", "renamed": 0}
    saved = stack.api("POST", "/api/skills", token, json={
        **ids, "name": "Door prefix", "description": "Prefix the names of the doors on one storey with their mark",
        "parameters": ["PREFIX", {"name": "STOREY", "description": "the storey's name"}]})
    assert saved.status_code == 201, saved.text
    return saved.json()


def test_a_kept_automation_becomes_a_skill_the_model_finds_and_runs_on_another_file(stack):
    alice = stack.server.token("alice")
    host_a = stack.host("alice", stack.models[0])
    saved = _save(stack, alice, host_a)
    assert saved["version"] == 1 and saved["host_app"] == "ifc" and saved["team"] == "everyone"
    assert saved["provenance"]["model"] == "scripted:m" and saved["provenance"]["saved_by"] == "alice"
    detail = stack.api("GET", "/api/skills/Door prefix", alice).json()
    assert detail["code"] == SCRIPT and len(detail["sha256"]) == 64 and detail["capability_version"]
    assert detail["example"]["arguments"] == {"PREFIX": "D-", "STOREY": "Level 1"}
    assert detail["example"]["changes"]  # the run's before/after, recorded

    host_b = stack.host("alice", stack.models[1])
    results, row = stack.run("alice", host_b, [
        [{"tool_call": {"name": "find_skill", "input": {"query": "door prefix storey"}}}],
        [{"tool_call": {"name": "run_skill", "input": {"name": "Door prefix",
                                                       "args": {"PREFIX": "X-", "STOREY": "Level 3"}}}}],
        collect(COUNT.format(prefix="X-")), say("done")])
    found, ran, check = results
    assert "Door prefix (v1, never run yet)" in found["text"] and "STOREY" in found["text"]
    assert ran["committed"] and ran["mode"] == "automate" and ran["change_report"], ran["text"]
    names = json.loads(check["stdout"].replace("'", '"'))
    assert names and all(n.startswith("X-D3") for n in names)  # Level 3's marks only, in file B
    audit = stack.store.audit(session_id=row["id"])
    kinds = {(r["tool_call_id"], r["kind"]) for r in audit}
    assert (ran["tool_call_id"], "model") in kinds and (ran["tool_call_id"], "epilogue") in kinds
    bound = next(r["code"] for r in audit if r["tool_call_id"] == ran["tool_call_id"] and r["kind"] == "model")
    assert 'PREFIX = \'X-\'' in bound and 'STOREY = \'Level 3\'' in bound
    transcript_text = json.dumps(stack.store.transcript(row["id"]))
    assert "Ran skill 'Door prefix' version 1" in transcript_text

    listed = stack.api("GET", "/api/skills?q=door", alice).json()
    (skill,) = listed["skills"]
    assert skill["run_count"] == 1 and skill["success_rate"] == 1.0 and skill["last_failure"] is None
    assert listed["can_edit"] and [v["version"] for v in skill["versions"]] == [1]

    # saving again under the same name makes version 2; version 1 stays as it was
    again = _save(stack, alice, host_a)
    assert again["version"] == 2
    assert stack.api("GET", "/api/skills/Door prefix?version=1", alice).json()["sha256"] == saved["sha256"]

    # a run that fails counts against the skill, with its error
    results, _ = stack.run("alice", host_b, [
        [{"tool_call": {"name": "run_skill", "input": {"name": "Door prefix", "args": {"STOREY": 3}}}}],
        say("done")])
    assert "STOREY: expected string" in results[0]["text"]
    results, _ = stack.run("alice", host_b, [
        [{"tool_call": {"name": "run_skill", "input": {"name": "Door prefix", "args": {"NOPE": "x"}}}}],
        say("done")])
    assert "unknown argument(s) NOPE" in results[0]["text"]


def test_a_tampered_script_and_a_foreign_host_app_are_refused_and_nothing_runs(stack):
    alice = stack.server.token("alice")
    host_a = stack.host("alice", stack.models[0])
    _save(stack, alice, host_a)
    with stack.store._write() as db:
        db.execute("UPDATE skill_versions SET code = code || ? WHERE version = 1", ("\nimport os\n",))
    results, row = stack.run("alice", host_a, [
        [{"tool_call": {"name": "run_skill", "input": {"name": "Door prefix"}}}], say("done")])
    assert "no longer matches the sha256" in results[0]["text"] and not results[0]["ok"]
    assert stack.store.audit(session_id=row["id"]) == []  # nothing was sent to the host

    SkillLibrary(stack.store).save(
        user_name="alice", name="Revit thing", description="Made in Revit", host_app="revit", code="x = 1",
        parameters=[], capability_version="1", provenance={}, example={})
    results, row = stack.run("alice", host_a, [
        [{"tool_call": {"name": "run_skill", "input": {"name": "Revit thing"}}}], say("done")])
    assert "was made for revit and this host is ifc" in results[0]["text"]
    assert stack.store.audit(session_id=row["id"]) == []
    assert stack.api("PUT", "/api/skills/Revit thing", alice, json={"portable": True}).status_code == 200
    results, _ = stack.run("alice", host_a, [
        [{"tool_call": {"name": "run_skill", "input": {"name": "Revit thing"}}}], say("done")])
    assert results[0]["committed"]  # marked portable by a person: it runs here


def test_two_teams_see_and_run_only_their_own_library(stack):
    admin, alice, carol = (stack.server.token("root", admin=True), stack.server.token("alice"),
                           stack.server.token("carol"))
    for team, user in (("north", "alice"), ("south", "carol")):
        assert stack.api("PUT", f"/api/admin/teams/{team}/members/{user}", admin).status_code == 200
    assert stack.api("PUT", "/api/admin/teams/south/members/alice", carol).status_code == 403
    host_a = stack.host("alice", stack.models[0])
    saved = _save(stack, alice, host_a)
    assert saved["team"] == "north"
    assert stack.api("GET", "/api/skills", carol).json()["skills"] == []
    assert stack.api("GET", "/api/skills/Door prefix", carol).status_code == 404
    assert stack.api("PUT", "/api/skills/Door prefix", carol, json={"portable": True}).status_code == 404
    session = stack.store.list_sessions("alice")[0]
    stolen = stack.api("POST", "/api/skills", carol, json={
        "session_id": session["id"], "tool_call_id": "x", "name": "Mine", "description": "mine", "parameters": []})
    assert stolen.status_code == 400 and "no session" in stolen.json()["error"]
    host_c = stack.host("carol", stack.models[1])
    results, _ = stack.run("carol", host_c, [
        [{"tool_call": {"name": "find_skill", "input": {"query": "door"}}}],
        [{"tool_call": {"name": "run_skill", "input": {"name": "Door prefix"}}}], say("done")])
    assert "No skill in your team's library matches" in results[0]["text"]
    assert "No skill named 'Door prefix'" in results[1]["text"]
    # a member an admin made read-only cannot save versions
    assert stack.api("PUT", "/api/admin/teams/north/members/alice", admin,
                     json={"can_edit": False}).status_code == 200
    (result,), row = stack.run("alice", host_a, [automate(SCRIPT), say("done")])
    refused = stack.api("POST", "/api/skills", alice, json={
        "session_id": row["id"], "tool_call_id": result["tool_call_id"], "name": "Door prefix",
        "description": "again", "parameters": []})
    assert refused.status_code == 400 and "may not edit skills of team north" in refused.json()["error"]
    teams = stack.api("GET", "/api/admin/teams", admin).json()["teams"]
    assert {t["team"] for t in teams} == {"north", "south"}


def test_nexus_skill_run_applies_a_skill_to_a_file_without_a_model(stack, tmp_path):
    alice = stack.server.token("alice")
    host_a = stack.host("alice", stack.models[0])
    _save(stack, alice, host_a)
    out = tmp_path / "out.ifc"
    cli = [sys.executable, "-m", "cloud.cli", "skill", "run", "Door prefix", "--ifc", str(stack.models[1]),
           "--db", str(stack.server.db_path), "--user", "alice", "--out", str(out), "--json"]
    done = subprocess.run([*cli, "--arg", "PREFIX=Q-", "--arg", "STOREY=Level 2"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["committed"] and "renamed" in result["stdout"]
    import ifcopenshell

    names = [d.Name for d in ifcopenshell.open(str(out)).by_type("IfcDoor")]
    assert any(n and n.startswith("Q-D2") for n in names) and not any(n and n.startswith("Q-D1") for n in names)
    bad = subprocess.run([*cli, "--arg", "PREFIX"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "expected NAME=VALUE" in bad.stderr
    missing = subprocess.run([*cli[:5], "Nope", *cli[6:]], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no skill named 'Nope'" in missing.stderr
    listed = stack.api("GET", "/api/skills", alice).json()["skills"][0]
    assert listed["run_count"] == 1 and listed["success_rate"] == 1.0
