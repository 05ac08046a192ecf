"""A team skill applied to many files through the batch runner (issue 19 item 4): `nexus batch --ifc GLOB
--skill NAME[@VERSION] --arg k=v`, on the embedded pool and on the Dramatiq queue, on generated sample
models; the arguments bound as `nexus skill run` binds them, the sha256 and host app checked before any
file is touched (and again before each file), and every file's run counted in the skill's statistics."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cloud.batch.jobs import load_manifest
from cloud.batch.worker import process_file
from cloud.cli import build_parser
from cloud.cli.batch import build_spec
from cloud.skills.library import SkillLibrary
from cloud.skills.parameters import confirm_parameters
from cloud.store import Store
from shared_contract.validate import content_hash
from tests.batch.support import (
    FAIL_PROJECT,
    MARK,
    assert_exactly_the_change,
    json_lines,
    make_models,
    run_batch,
    sha,
)

USER = "alice"
SKILL = "Wall mark"
# The reviewed script as it was saved: MARK and LIMIT are its parameters (LIMIT high enough for every wall).
# On the project named FAIL-ME it first changes the walls, then fails: nothing of it may reach the output.
CODE = f'''MARK = "draft"
LIMIT = 1000
for wall in model.by_type("IfcWall")[:LIMIT]:
    wall.Description = MARK
if model.by_type("IfcProject")[0].Name == {FAIL_PROJECT!r}:
    raise RuntimeError("this project is not ready for the new standard")
'''


def _save(store: Store, code: str = CODE, host_app: str = "ifc", name: str = SKILL) -> Any:
    return SkillLibrary(store).save(
        user_name=USER, name=name, description="Marks every wall's Description", host_app=host_app, code=code,
        parameters=confirm_parameters(code, ["MARK", "LIMIT"]), capability_version="1",
        provenance={"session_id": "s", "tool_call_id": "t"}, example={})


@pytest.fixture
def library(tmp_path) -> tuple[Path, Store]:
    db = tmp_path / "library.db"
    store = Store(str(db))
    SkillLibrary(store).set_member("north", USER)  # a team of her own: other users do not see its skills
    _save(store)  # version 1
    _save(store, CODE.replace('"draft"', '"second version"'))  # version 2: the latest
    return db, store


@pytest.fixture
def inputs(tmp_path) -> dict[str, list[Path]]:
    return make_models(tmp_path / "in", generated=2, corpus=False)


def _stats(store: Store) -> dict[str, Any]:
    return next(s for s in SkillLibrary(store).listing(USER) if s["name"] == SKILL)


def _check_outputs(inputs: dict[str, list[Path]], out: Path, per_file: dict[str, dict[str, Any]]) -> None:
    for path in inputs["good"]:
        assert per_file[path.name]["committed"], per_file[path.name]
        assert_exactly_the_change(path, out / path.name)
    for path in inputs["bad"]:
        assert not per_file[path.name]["ok"] and not (out / path.name).exists()


def test_a_skill_version_with_arguments_on_every_file_of_the_embedded_pool(tmp_path, library, inputs):
    db, store = library
    before = {p: sha(p) for p in inputs["good"] + inputs["bad"]}
    out = tmp_path / "out"
    done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--skill", f"{SKILL}@1", "--arg", f"MARK={MARK}",
                     "--user", USER, "--out", str(out), "--db", str(db), "--workers", "2", "--json")
    assert done.returncode == 1, done.stderr  # the truncated and the failing file fail; the others go on
    per_file, summary = json_lines(done.stdout)
    assert summary["committed"] == len(inputs["good"]) and summary["failed"] == 2, done.stdout
    _check_outputs(inputs, out, per_file)
    assert {p: sha(p) for p in before} == before  # inputs byte-identical

    spec = load_manifest(str(out))
    assert spec.skill is not None and spec.skill["version"] == 1 and spec.skill["values"] == {"MARK": MARK,
                                                                                            "LIMIT": 1000}
    assert f"MARK = {MARK!r}" in (spec.script or "") and spec.script_name == f"skill {SKILL} v1"
    assert f"skill {SKILL} v1" in (out / "report.md").read_text()
    # one run counted per file the skill ran on: the good ones and the one whose script raised; the
    # truncated file failed before the skill ran
    stats = _stats(store)
    assert stats["run_count"] == len(inputs["good"]) + 1
    assert stats["success_rate"] == round(len(inputs["good"]) / (len(inputs["good"]) + 1), 3)
    assert "not ready for the new standard" in stats["last_failure"]["error"]
    # the audit log holds the bound script, in the file's own session
    result = json.loads((out / ".nexus-batch" / "results" / f"{inputs['good'][0].name}.json").read_text())
    (audited,) = store.audit(session_id=result["session_id"], kind="model")
    assert audited["code"] == spec.script and audited["sha256"] == content_hash(spec.script)

    rerun = run_batch("--resume", str(out), "--db", str(db), "--json")  # done files are not redone
    assert rerun.returncode == 1 and _stats(store)["run_count"] == stats["run_count"]


def test_bad_skill_command_lines_are_refused_before_any_file_is_touched(tmp_path, library, inputs):
    db, store = library
    SkillLibrary(store).save(user_name=USER, name="Revit thing", description="Made in Revit", host_app="revit",
                             code="X = 1\n", parameters=[], capability_version="1", provenance={}, example={})
    out = tmp_path / "out"
    base = ["--ifc", str(tmp_path / "in" / "*.ifc"), "--out", str(out), "--db", str(db), "--user", USER]
    cases = [
        (["--skill", SKILL, "--arg", "NOPE=1"], "unknown argument(s) NOPE"),
        (["--skill", SKILL, "--arg", "LIMIT=many"], "LIMIT: expected integer"),
        (["--skill", SKILL, "--arg", "MARK"], "expected NAME=VALUE"),
        (["--skill", f"{SKILL}@7"], "no skill named 'Wall mark' version 7"),
        (["--skill", "Nope"], "no skill named 'Nope'"),
        (["--skill", "Revit thing"], "was made for revit and this host is ifc"),
        (["--skill", SKILL, "--policy", "readonly"], "--policy readonly does not apply"),
        (["--script", str(tmp_path / "in" / "gen_00.ifc"), "--arg", "MARK=x"], "use it with --skill"),
    ]
    for extra, complaint in cases:
        done = run_batch(*base, *extra)
        assert done.returncode == 2 and complaint in done.stderr, (extra, done.stderr)
    other = run_batch(*base[:-1], "bob", "--skill", SKILL)  # bob's team has no such skill
    assert other.returncode == 2 and "library of bob's team" in other.stderr
    assert not out.exists() and _stats(store)["run_count"] == 0


def test_a_tampered_skill_is_refused_before_any_file_is_touched(tmp_path, library, inputs):
    db, store = library
    with store._write() as conn:
        conn.execute("UPDATE skill_versions SET code = code || ? WHERE version = 2", ("\nimport os\n",))
    before = {p: (sha(p), p.stat().st_mtime_ns, p.stat().st_atime_ns) for p in inputs["good"] + inputs["bad"]}
    out = tmp_path / "out"
    done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--skill", SKILL, "--user", USER,
                     "--out", str(out), "--db", str(db), "--json")
    assert done.returncode == 2 and "does not match its sha256" in done.stderr, done.stderr
    assert done.stdout == "" and not out.exists()  # no manifest, no result, no report
    assert {p: (sha(p), p.stat().st_mtime_ns, p.stat().st_atime_ns) for p in before} == before
    assert _stats(store)["run_count"] == 0


def test_a_skill_tampered_with_after_the_batch_started_fails_each_file_before_its_host_starts(tmp_path, library,
                                                                                              inputs):
    db, store = library
    out = tmp_path / "out"
    args = build_parser().parse_args(["batch", "--ifc", str(tmp_path / "in" / "gen_0*.ifc"), "--skill", SKILL,
                                      "--user", USER, "--out", str(out), "--db", str(db)])
    spec = build_spec(args)  # the batch as `nexus batch` records it: the latest version, with its defaults
    assert spec.skill is not None and spec.skill["version"] == 2 and "second version" in (spec.script or "")
    assert spec.skill["sha256"] == SkillLibrary(store).get(USER, SKILL).sha256
    original = store._read("SELECT code, sha256 FROM skill_versions WHERE version = 2")[0]
    with store._write() as conn:
        conn.execute("UPDATE skill_versions SET code = replace(code, 'LIMIT]', 'LIMIT - 1]') WHERE version = 2")
    result = process_file(spec, spec.files[0], store)
    assert not result["ok"] and "skill refused" in result["error"] and "does not match its sha256" in result["error"]
    assert "session_id" not in result and not (out / Path(spec.files[0]).name).exists()  # no host, no session
    with store._write() as conn:  # the script edited and its sha256 with it: not the version the batch pinned
        tampered = conn.execute("SELECT code FROM skill_versions WHERE version = 2").scalar_one()
        conn.execute("UPDATE skill_versions SET sha256 = ? WHERE version = 2", (content_hash(tampered),))
    result = process_file(spec, spec.files[1], store)
    assert not result["ok"] and "not the one this batch was started with" in result["error"]
    with store._write() as conn:  # the skill as saved again, but the batch's recorded script edited
        conn.execute("UPDATE skill_versions SET code = ?, sha256 = ? WHERE version = 2",
                     (original["code"], original["sha256"]))
    spec.retry_failed = True
    spec.script = (spec.script or "").replace("second version", "edited manifest")
    result = process_file(spec, spec.files[0], store)
    assert not result["ok"] and "not the skill's script bound with the batch's arguments" in result["error"]
    assert _stats(store)["run_count"] == 0 and store.audit() == [] and not any(out.glob("*.ifc"))


def test_a_skill_on_the_dramatiq_queue_with_a_batch_worker(tmp_path, library, inputs, redis_server):
    db, store = library
    log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen([sys.executable, "-m", "cloud.cli", "batch-worker", "--redis", redis_server.url,
                               "--workers", "2", "--db", str(db)], stdout=log, stderr=log, env=dict(os.environ))
    out = tmp_path / "out"
    try:
        done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--skill", SKILL, "--arg", f"MARK={MARK}",
                         "--user", USER, "--out", str(out), "--db", str(db), "--redis", redis_server.url,
                         "--workers", "0", "--json")
    finally:
        worker.terminate()
        worker.wait(120)
    assert done.returncode == 1, done.stderr + (tmp_path / "worker.log").read_text()
    per_file, summary = json_lines(done.stdout)
    assert summary["committed"] == len(inputs["good"])
    _check_outputs(inputs, out, per_file)
    for path in inputs["good"]:  # done by the batch-worker, not in the batch command
        recorded = json.loads((out / ".nexus-batch" / "results" / f"{path.name}.json").read_text())
        assert recorded["worker"].endswith(f":{worker.pid}")
    stats = _stats(store)
    assert stats["run_count"] == len(inputs["good"]) + 1 and stats["last_failure"]["version"] == 2
