"""`nexus batch --prompt` with `--model scripted:DIR`: the agent runs on every file in its own session with
DIR/<file stem>.json as its model; a file without a script of its own fails alone."""
from __future__ import annotations

import json

import ifcopenshell

from tests.batch.support import json_lines, make_models, run_batch, sha


def _script(mark: str) -> dict:
    code = f'for wall in model.by_type("IfcWall"):\n    wall.Description = {mark!r}\n'
    return {"turns": [
        [{"text": "I'll look at the walls first."},
         {"tool_call": {"name": "execute_data_collection",
                        "input": {"code": 'print(len(model.by_type("IfcWall")))'}}}],
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": code}}}],
        [{"text": "Every wall now carries the mark."}],
    ]}


def test_prompt_with_a_scripted_model_per_file(tmp_path):
    files = make_models(tmp_path / "in", generated=3, corpus=False)
    good = files["good"]
    inputs = {p.name: sha(p) for p in good}
    plays = tmp_path / "plays"
    plays.mkdir()
    for path in good[:2]:  # the third file has no script: it fails alone
        (plays / f"{path.stem}.json").write_text(json.dumps(_script(f"mark of {path.stem}")))
    done = run_batch("--ifc", str(tmp_path / "in" / "gen_*.ifc"), "--prompt", "Mark every wall as reviewed",
                     "--model", f"scripted:{plays}", "--out", str(tmp_path / "out"), "--workers", "2", "--json",
                     "--db", str(tmp_path / "db"))
    per_file, summary = json_lines(done.stdout)
    assert done.returncode == 1 and summary["committed"] == 2 and summary["failed"] == 1, done.stderr
    for path in good[:2]:
        assert per_file[path.name]["committed"], per_file[path.name]
        model = ifcopenshell.open(str(tmp_path / "out" / path.name))
        assert {w.Description for w in model.by_type("IfcWall")} == {f"mark of {path.stem}"}
    missing = per_file[good[2].name]
    assert not missing["ok"] and good[2].stem in missing["error"]
    assert not (tmp_path / "out" / good[2].name).exists()
    assert {p.name: sha(p) for p in good} == inputs
    result = json.loads((tmp_path / "out" / ".nexus-batch" / "results" / f"{good[0].name}.json").read_text())
    walls = len(ifcopenshell.open(str(good[0])).by_type("IfcWall"))
    assert result["stdout"].strip() == str(walls)  # the collection ran first, in the same session
    sessions = {json.loads(p.read_text())["session_id"]
                for p in (tmp_path / "out" / ".nexus-batch" / "results").iterdir() if "session_id" in p.read_text()}
    assert len(sessions) == 2  # each file its own session
