"""`nexus mcp --ifc`: the official MCP Python client over stdio, on the sample building and a corpus file."""
from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path

import anyio
import ifcopenshell
import pytest

from tests.corpus.corpus_files import corpus_dirs, manifest
from tests.mcp.support import ROOT, decoded_png, stdio_session, text_of

LOOP_TOOLS = {"execute_data_collection", "execute_task_automation", "capture_view", "lookup_api", "find_skill",
              "run_skill"}
RENAME = ("door = model.by_type('IfcDoor')[0]\n"
          "door.Name = 'MCP-D1'\n")


@pytest.fixture(scope="module")
def sample_ifc(tmp_path_factory) -> Path:
    from ifc_host.sample import write_sample_model

    path = tmp_path_factory.mktemp("mcp") / "sample.ifc"
    write_sample_model(str(path))
    return path


def _contract_tools() -> dict[str, dict]:
    tools = {}
    for path in (ROOT / "shared_contract" / "tools").glob("*.json"):
        data = json.loads(path.read_text())
        tools[data["name"]] = data
    return tools


def test_tools_listed_with_the_contracts_descriptions_and_schemas(sample_ifc, tmp_path):
    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--db", str(tmp_path / "db.sqlite")) as session:
            return (await session.list_tools()).tools

    tools = {t.name: t for t in anyio.run(scenario)}
    assert set(tools) == LOOP_TOOLS | {"list_hosts", "run_task", "get_run", "review_status"}
    for name, contract in _contract_tools().items():
        # capture_view's description goes on to list the host's views (from its provider, as for the loop);
        # the tools that change the model go on to describe their idempotency key
        assert tools[name].description.startswith(contract["description"])
        keyed = name in ("execute_task_automation", "run_skill")
        assert (tools[name].description == contract["description"]) == (name not in ("capture_view",) and not keyed)
        schema = copy.deepcopy(dict(tools[name].input_schema))
        assert schema["properties"].pop("host")["type"] == "string"
        if keyed:
            key = schema["properties"].pop("idempotency_key")
            assert key["type"] == "string" and "idempotency_key" in key["description"]
            assert "idempotency_key" in tools[name].description
        assert schema == contract["input_schema"]


def test_collect_automate_and_a_failing_script(sample_ifc, tmp_path):
    out = tmp_path / "out.ifc"
    db = tmp_path / "db.sqlite"
    before = sample_ifc.read_bytes()

    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--out", str(out), "--db", str(db)) as session:
            collected = await session.call_tool("execute_data_collection",
                                                {"code": "print(len(model.by_type('IfcDoor')))"})
            automated = await session.call_tool("execute_task_automation", {"code": RENAME})
            edited = await session.call_tool("execute_task_automation",
                                             {"edits": [{"old": "'MCP-D1'", "new": "'MCP-D2'"}]})
            more = [await session.call_tool("execute_task_automation",
                                            {"code": f"model.by_type('IfcDoor')[2].Name = 'LOOP-{n}'"})
                    for n in range(3)]  # past the loop's per-run iteration cap: the client runs its own loop
            failed = await session.call_tool("execute_task_automation",
                                             {"code": "model.by_type('IfcDoor')[1].Name = 'NOPE'\nraise ValueError('x')"})
            refused = await session.call_tool("execute_task_automation", {"code": "x = 1", "host": "h_nothere"})
            invalid = await session.call_tool("execute_task_automation", {"code": "x = 1", "edits": []})
            return collected, automated, edited, more, failed, refused, invalid

    collected, automated, edited, more, failed, refused, invalid = anyio.run(scenario)
    assert [r.structured_content["committed"] for r in more] == [True, True, True], text_of(more[-1])
    assert invalid.is_error and "edits" in text_of(invalid)  # the contract's validation names the field
    doors = len(ifcopenshell.open(str(sample_ifc)).by_type("IfcDoor"))
    assert not collected.is_error and json.loads(text_of(collected)) == collected.structured_content
    assert collected.structured_content["stdout"].strip() == str(doors)

    assert not automated.is_error, text_of(automated)
    data = automated.structured_content
    assert data["committed"] is True and data["mode"] == "automate"
    assert data["changes"]["modified"], data["changes"]
    assert data["change_report"] and "MCP-D1" in json.dumps(data["change_details"])
    assert edited.structured_content.get("committed") is True, text_of(edited)  # anchored edit: the held script
    assert "MCP-D2" in json.dumps(edited.structured_content["change_details"])

    assert failed.is_error and failed.structured_content["committed"] is False
    assert failed.structured_content["error"]["type"] == "ValueError"
    assert refused.is_error and "h_nothere" in text_of(refused)

    names = {d.Name for d in ifcopenshell.open(str(out)).by_type("IfcDoor")}
    assert "MCP-D2" in names and "NOPE" not in names  # the failed script was rolled back
    assert sample_ifc.read_bytes() == before  # --out: the model itself is never written

    rows = sqlite3.connect(db).execute("SELECT user_name, code, sha256 FROM audit WHERE kind = 'mcp_call'").fetchall()
    calls = [json.loads(code) for _, code, _ in rows]
    assert [c["tool"] for c in calls].count("execute_task_automation") == 8
    assert all(c["client"] == "mcp" and user == "mcp" and len(sha) == 64 for (user, _, sha), c in zip(rows, calls, strict=True))
    scripts = sqlite3.connect(db).execute("SELECT count(*) FROM audit WHERE kind = 'model'").fetchone()[0]
    assert scripts == 7  # every script dispatched to the host, with its hash, as for the loop


def test_capture_lookup_hosts_context_and_prompts(sample_ifc, tmp_path):
    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--db", str(tmp_path / "db.sqlite"),
                                 "--image-max-px", "640") as session:
            capture = await session.call_tool("capture_view", {"view": "3D"})
            lookup = await session.call_tool("lookup_api", {"query": "by_type"})
            rows = await session.call_tool("execute_data_collection",
                                           {"code": "print('\\n'.join('row %06d' % i for i in range(6000)))"})
            hosts = await session.call_tool("list_hosts", {})
            context = await session.read_resource("nexus://context")
            prompts = await session.list_prompts()
            audit = await session.get_prompt("audit", {"focus": "doors"})
            return capture, lookup, rows, hosts, context, prompts, audit

    capture, lookup, rows, hosts, context, prompts, audit = anyio.run(scenario)
    assert not capture.is_error, text_of(capture)
    image = decoded_png(capture)
    assert max(image.size) <= 640 and capture.structured_content["image"]["view"]
    assert not lookup.is_error and "by_type" in text_of(lookup)
    # a client may feed either part to its model: both are the same capped copy (the whole is in the store)
    assert json.loads(text_of(rows)) == rows.structured_content and rows.structured_content["capped"] == ["stdout"]
    assert len(text_of(rows)) < 25_000 and "row 000000" in text_of(rows) and "row 005999" in text_of(rows)
    assert "capped for AI processing" in rows.structured_content["stdout"]
    listed = hosts.structured_content["hosts"]
    assert len(listed) == 1 and listed[0]["host_app"] == "ifc"
    block = context.contents[0].text
    assert "Document:" in block and "ifc" in block
    assert {p.name for p in prompts.prompts} == {"audit", "renumber", "report"}
    assert "doors" in audit.messages[0].content.text


def test_run_task_with_a_scripted_model(sample_ifc, tmp_path):
    script = tmp_path / "rename.json"
    script.write_text(json.dumps({"turns": [
        [{"text": "Renaming the first door."},
         {"tool_call": {"name": "execute_task_automation", "input": {"code": RENAME}}}],
        [{"text": "The first door is now MCP-D1."}]]}))
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--out", str(tmp_path / "out.ifc"),
                                 "--db", str(tmp_path / "db.sqlite")) as session:
            done = await session.call_tool("run_task", {"prompt": "rename a door", "model": f"scripted:{script}"},
                                           progress_callback=on_progress)
            handle = done.structured_content["handle"]
            again = await session.call_tool("get_run", {"handle": handle})
            unknown = await session.call_tool("get_run", {"handle": "nope"})
            started = await session.call_tool("run_task", {"prompt": "again", "model": f"scripted:{script}",
                                                           "wait_s": 0})
            finished = await session.call_tool("get_run", {"handle": started.structured_content["handle"],
                                                           "wait_s": 60})
            return done, again, unknown, started, finished

    done, again, unknown, started, finished = anyio.run(scenario)

    async def after_a_restart():
        async with stdio_session("--ifc", str(sample_ifc), "--db", str(tmp_path / "db.sqlite")) as session:
            return await session.call_tool("get_run", {"handle": done.structured_content["handle"]})

    remembered = anyio.run(after_a_restart)  # another server process on the same store
    assert remembered.structured_content["status"] == "complete", text_of(remembered)
    assert "MCP-D1" in remembered.structured_content["answer"]
    assert started.structured_content["status"] == "running" and "get_run" in text_of(started)
    assert finished.structured_content["status"] == "complete", text_of(finished)
    assert not done.is_error, text_of(done)
    assert done.structured_content["status"] == "complete"
    assert "MCP-D1" in text_of(done) and len(done.structured_content["committed"]) == 1
    assert any("execute_task_automation" in p for p in progress), progress
    # every step, in order, before the result (a run ending between two looks of the server once lost them)
    assert progress == done.structured_content["steps"], progress
    assert again.structured_content["status"] == "complete"
    assert unknown.is_error
    names = {d.Name for d in ifcopenshell.open(str(tmp_path / "out.ifc")).by_type("IfcDoor")}
    assert "MCP-D1" in names


# A real export: Revit's basic_demo.ifc, which a PyPI package ships (scripts/corpus.sh installs it; the manifest
# names it, so a missing file fails here as in tests/corpus).
CORPUS_MODEL = next(entry for entry in manifest() if entry.file == "basic_demo.ifc")


def test_a_real_corpus_file(tmp_path):
    if not CORPUS_MODEL.present():
        pytest.fail(f"{CORPUS_MODEL.file} is not in {corpus_dirs()} (scripts/corpus.sh; corpus/SOURCES.md)")
    corpus = CORPUS_MODEL.location

    async def scenario():
        async with stdio_session("--ifc", str(corpus), "--out", str(tmp_path / "out.ifc"),
                                 "--db", str(tmp_path / "db.sqlite")) as session:
            walls = await session.call_tool("execute_data_collection",
                                            {"code": "print(len(model.by_type('IfcWall')))"})
            renamed = await session.call_tool("execute_task_automation", {
                "code": "w = model.by_type('IfcWall')[0]\nw.Name = 'MCP wall'\n"})
            view = await session.call_tool("capture_view", {})
            return walls, renamed, view

    walls, renamed, view = anyio.run(scenario)
    assert int(walls.structured_content["stdout"]) == len(ifcopenshell.open(str(corpus)).by_type("IfcWall"))
    assert renamed.structured_content["committed"] is True
    assert "MCP wall" in {w.Name for w in ifcopenshell.open(str(tmp_path / "out.ifc")).by_type("IfcWall")}
    decoded_png(view)


def test_a_file_that_is_not_an_ifc_model_is_refused_before_anything_starts(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "notes.ifc"
    bad.write_text("this is not STEP")
    done = subprocess.run([sys.executable, "-m", "cloud.cli", "mcp", "--ifc", str(bad), "--db",
                           str(tmp_path / "db.sqlite")], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          stdin=subprocess.DEVNULL)
    assert done.returncode != 0 and str(bad) in done.stderr and done.stdout == ""
