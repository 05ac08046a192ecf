"""`nexus batch --ids FILE` (real subprocesses, real IFC hosts, a real ifctester): every file's session gets the
IDS; under `warn` the IDS failures a file's change introduced are in that file's result (none on the files the
change left conformant), under `block` those files are rolled back (byte-identical, no output) and counted
failed with the findings while the others are committed; an IDS that is unreadable or invalid is refused
before any file is touched, with the message `nexus run --ids` gives; and the IDS travels with the batch
spec to queue workers (the file is gone before any worker starts) and with `--skill`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cloud.batch.jobs import load_manifest
from tests.batch.ids_support import FIRE_RATING_IDS, IDS_SCRIPT, IDS_TITLE, make_ids_models
from tests.batch.support import assert_exactly_the_change, json_lines, run_batch, sha


def _setup(tmp_path: Path) -> tuple[dict[str, list[Path]], Path, Path]:
    models = make_ids_models(tmp_path / "in")
    script = tmp_path / "mark.py"
    script.write_text(IDS_SCRIPT)
    ids = tmp_path / "doors.ids"
    ids.write_text(FIRE_RATING_IDS)
    return models, script, ids


def _result(out: Path, name: str) -> dict[str, Any]:
    return json.loads((out / ".nexus-batch" / "results" / f"{name}.json").read_text())


def _ids_findings(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in findings if f.get("kind") == "ids"]


def _assert_blocked_only_the_broken_file(models: dict[str, list[Path]], out: Path, returncode: int,
                                         stdout: str, stderr: str) -> None:
    """Under block: the broken file failed with its IDS findings and has no output; the others have exactly the
    change."""
    assert returncode == 1, stderr[-3000:]
    per_file, summary = json_lines(stdout)
    assert summary["committed"] == 1 and summary["failed"] == 1, stdout
    (broken,) = models["broken"]
    assert not per_file[broken.name]["ok"] and not (out / broken.name).exists()
    assert _ids_findings(_result(out, broken.name)["validation"])
    for path in models["plain"]:
        assert per_file[path.name]["committed"]
        assert_exactly_the_change(path, out / path.name)


def test_warn_reports_ids_findings_only_on_the_files_the_change_broke(tmp_path):
    models, script, ids = _setup(tmp_path)
    inputs = {p: sha(p) for p in models["plain"] + models["broken"]}
    out = tmp_path / "out"
    done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--script", str(script), "--ids", str(ids),
                     "--out", str(out), "--json", "--db", str(tmp_path / "db"))
    assert done.returncode == 0, done.stderr[-3000:]
    per_file, summary = json_lines(done.stdout)
    assert summary["committed"] == 2 and summary["failed"] == 0
    for path in models["plain"]:
        result = _result(out, path.name)
        assert per_file[path.name]["committed"] and result["validation"] == []
        assert result["ids"] == {"specifications": 1, "introduced": 0}, result
        assert_exactly_the_change(path, out / path.name)
    (broken,) = models["broken"]
    line = per_file[broken.name]
    assert line["committed"], line
    result = _result(out, broken.name)
    found = _ids_findings(result["validation"])
    assert found and all(f["class"] == "IfcDoor" and "FireRating" in f["message"] for f in found), found
    assert all(f["rule"] == "IDS 'Door fire rating'" for f in found), found
    assert result["ids"]["introduced"] >= len(found)
    assert {p: sha(p) for p in inputs} == inputs  # inputs byte-identical
    spec = load_manifest(str(out))
    assert spec.ids == FIRE_RATING_IDS  # the document itself, not a path
    report = (out / "report.md").read_text()
    assert f"IDS “{IDS_TITLE}” (1 specifications)" in report and "FireRating" in report


def test_block_rolls_back_the_broken_files_and_commits_the_others(tmp_path):
    models, script, ids = _setup(tmp_path)
    inputs = {p: sha(p) for p in models["plain"] + models["broken"]}
    out = tmp_path / "out"
    done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--script", str(script), "--ids", str(ids),
                     "--validation", "block", "--out", str(out), "--json", "--db", str(tmp_path / "db"))
    assert done.returncode == 1, done.stderr[-3000:]  # a file failed
    per_file, summary = json_lines(done.stdout)
    assert summary["committed"] == 1 and summary["failed"] == 1
    for path in models["plain"]:
        assert per_file[path.name]["committed"], per_file[path.name]
        assert_exactly_the_change(path, out / path.name)
    (broken,) = models["broken"]
    line = per_file[broken.name]
    assert not line["ok"] and not line["committed"] and "FireRating" in line["error"], line
    assert _ids_findings(_result(out, broken.name)["validation"]), line  # counted failed, with the findings
    assert not (out / broken.name).exists()
    assert {p: sha(p) for p in inputs} == inputs

    in_place = run_batch("--ifc", str(broken), "--script", str(script), "--ids", str(ids), "--validation", "block",
                         "--in-place", "--state", str(tmp_path / "state"), "--json", "--db", str(tmp_path / "db"))
    assert in_place.returncode == 1 and not json_lines(in_place.stdout)[0][broken.name]["ok"]
    assert sha(broken) == inputs[broken]  # rolled back: the file is byte-identical


def test_an_unreadable_or_invalid_ids_is_refused_before_any_file_is_touched(tmp_path):
    models, script, _ = _setup(tmp_path)
    inputs = {p: sha(p) for p in models["plain"] + models["broken"]}
    cases = {"svg.ids": ("<svg/>", "not an IDS document: the root element is <svg>"),
             "broken.ids": ("{not xml", "not XML: "),
             "bogus.ids": (FIRE_RATING_IDS.replace("<specifications>", "<specifications><bogus/>"),
                           "not a valid IDS document")}
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        out = tmp_path / f"out-{name}"
        done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--script", str(script), "--ids", str(path),
                         "--out", str(out), "--db", str(tmp_path / "db"))
        assert done.returncode == 2 and f"--ids {path}: {message}" in done.stderr, done.stderr
        assert not out.exists()  # no manifest, no state, no output
    missing = tmp_path / "missing.ids"
    done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--script", str(script), "--ids", str(missing),
                     "--out", str(tmp_path / "o"), "--db", str(tmp_path / "db"))
    assert done.returncode == 2 and f"--ids {missing}: No such file or directory" in done.stderr, done.stderr
    resumed = run_batch("--resume", str(tmp_path / "o"), "--ids", str(missing), "--db", str(tmp_path / "db"))
    assert resumed.returncode == 2 and "leave out" in resumed.stderr and "--ids" in resumed.stderr
    assert {p: sha(p) for p in inputs} == inputs


def test_the_ids_travels_with_the_batch_to_queue_workers(tmp_path, redis_server):
    models, script, ids = _setup(tmp_path)
    out = tmp_path / "out"
    batch = subprocess.Popen([sys.executable, "-m", "cloud.cli", "batch", "--ifc", str(tmp_path / "in" / "*.ifc"),
                              "--script", str(script), "--ids", str(ids), "--out", str(out), "--redis",
                              redis_server.url, "--workers", "0", "--validation", "block", "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worker = None
    try:
        manifest = out / ".nexus-batch" / "manifest.json"
        deadline = time.monotonic() + 120
        while not manifest.exists() and time.monotonic() < deadline and batch.poll() is None:
            time.sleep(0.1)
        assert manifest.exists(), batch.stderr.read() if batch.poll() is not None else "no manifest"
        ids.unlink()  # the worker must not need the submitting machine's file
        elsewhere = tmp_path / "worker-cwd"
        elsewhere.mkdir()
        log = (tmp_path / "worker.log").open("wb")
        worker = subprocess.Popen([sys.executable, "-m", "cloud.cli", "batch-worker", "--redis", redis_server.url,
                                   "--workers", "2", "--db", str(tmp_path / "worker.db")], stdout=log, stderr=log,
                                  cwd=elsewhere, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
        stdout, stderr = batch.communicate(timeout=600)
    finally:
        if batch.poll() is None:
            batch.kill()
            batch.wait()
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=60)
    _assert_blocked_only_the_broken_file(models, out, batch.returncode, stdout, stderr)
    for path in models["plain"]:
        assert _result(out, path.name)["validation"] == [] and _result(out, path.name)["worker"] != "embedded"


def test_a_skill_batch_checks_the_ids_on_every_file(tmp_path):
    from cloud.skills.library import SkillLibrary
    from cloud.store import Store

    models, _, ids = _setup(tmp_path)
    db = tmp_path / "library.db"
    store = Store(str(db))
    library = SkillLibrary(store)
    library.set_member("north", "alice")
    library.save(user_name="alice", name="Mark walls", description="Marks every wall", host_app="ifc",
                 code=IDS_SCRIPT, parameters=[], capability_version="1", provenance={}, example={})
    out = tmp_path / "out"
    done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--skill", "Mark walls", "--user", "alice",
                     "--ids", str(ids), "--validation", "block", "--out", str(out), "--json", "--db", str(db))
    _assert_blocked_only_the_broken_file(models, out, done.returncode, done.stdout, done.stderr)
    assert load_manifest(str(out)).skill is not None and load_manifest(str(out)).ids == FIRE_RATING_IDS


def test_a_prompt_batch_checks_the_ids_on_every_files_session(tmp_path):
    from tests.support.client import write_script

    models, _, ids = _setup(tmp_path)
    play = write_script(tmp_path / "play.json", [
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": IDS_SCRIPT}}}], [{"text": "Done."}]])
    out = tmp_path / "out"
    done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--prompt", "Mark the walls", "--model", play,
                     "--ids", str(ids), "--validation", "block", "--out", str(out), "--json",
                     "--db", str(tmp_path / "db"))
    _assert_blocked_only_the_broken_file(models, out, done.returncode, done.stdout, done.stderr)
