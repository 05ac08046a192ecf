"""Grounding (issue 8): lookup_api over the hosts' real APIs, and the context block in the user turn."""
from __future__ import annotations

import pytest

from cloud.grounding.ifc_api import build_ifc_index
from cloud.grounding.index import ApiEntry, ApiIndex
from cloud.hosts.hello import Hello
from tests.support.client import write_script


@pytest.fixture(scope="module")
def ifc_index() -> ApiIndex:
    return build_ifc_index("IFC4")


def test_ifc_lookup_finds_api_functions_from_the_installed_ifcopenshell(ifc_index):
    answer = ifc_index.answer("ifcopenshell.api.root.create_entity")
    first = answer.splitlines()[1]
    assert first.startswith("function ifcopenshell.api.root.create_entity(") and "ifc_class" in first


def test_ifc_lookup_covers_the_schedule_api_that_needs_networkx(ifc_index):
    assert "ifcopenshell.api.sequence.recalculate_schedule" in ifc_index.answer("recalculate_schedule")


def test_ifc_lookup_lists_an_entitys_attributes(ifc_index):
    answer = ifc_index.answer("IfcDoor")
    first = answer.splitlines()[1]
    assert first.startswith("entity IfcDoor(")
    for attribute in ("GlobalId", "Tag", "OverallHeight", "OverallWidth", "PredefinedType", "OperationType"):
        assert attribute in first


def test_exact_names_rank_before_partial_matches(ifc_index):
    found, _ = ifc_index.search("assign_container")
    assert found[0].name == "ifcopenshell.api.spatial.assign_container"
    found, _ = ifc_index.search("IfcWall")
    assert found[0].name == "IfcWall"


def test_long_answers_are_capped_with_a_note():
    index = ApiIndex([ApiEntry(f"pkg.door_{i}", "function", "(x)", "does door things " * 10) for i in range(200)],
                     "test API")
    answer = index.answer("door", limit=50, max_chars=2000)
    assert len(answer) < 2600
    assert "more match(es) not shown" in answer and answer.startswith("200 match(es)")


def test_no_match_says_so(ifc_index):
    assert ifc_index.answer("zzqqxx").startswith("No match")


def test_revit_lookup_reads_the_installed_stubs():
    # pyrevit-stubs-26 is a test extra: without it this fails (CI installs it), it never skips.
    from cloud.grounding.revit_api import build_revit_index

    index = build_revit_index(26)
    commit = index.answer("Transaction.Commit").splitlines()[1]
    assert commit.startswith("method Autodesk.Revit.DB.Transaction.Commit(") and "TransactionStatus" in commit
    of_category = index.answer("FilteredElementCollector.OfCategory").splitlines()[1]
    assert of_category.startswith("method Autodesk.Revit.DB.FilteredElementCollector.OfCategory(")


def _hello(host_app: str, **fields) -> Hello:
    return Hello.parse({"type": "hello", "host_app": host_app, "host_version": "1", "runtime_version": "1",
                        "python_version": "3.11.7", "document": {"title": "T"}, **fields})


def test_each_provider_says_which_api_index_answers_for_its_hosts():
    from cloud.hosts.registry import get_provider

    revit = get_provider("revit")
    assert revit.api_index_source(_hello("revit", host_version="2025 (25.0.2)")).key == "revit:25"
    assert revit.api_index_source(_hello("revit", host_version="unknown")).key == "revit:26"
    ifc = get_provider("ifc")
    assert ifc.api_index_source(_hello("ifc", document={"title": "T", "schema": "ifc2x3"})).key == "ifc:IFC2X3"
    assert ifc.api_index_source(_hello("ifc")).key == "ifc:IFC4"


def test_lookup_api_answers_from_the_hosts_own_index_without_touching_the_host(server, alice, host, scripts_dir):
    # The test host is defined only under tests/: its provider's index is what the model is given.
    spec = write_script(scripts_dir / "lookup.json", [
        [{"tool_call": {"name": "lookup_api", "input": {"query": "by_class"}}}], [{"text": "ok"}]])
    sid = alice.new_session(host.host_id, spec)
    stream = alice.run(sid, "look it up")
    answer = stream.of("Metadata", "tool_result")[0]["content"]
    assert answer.splitlines()[1].startswith("method Document.by_class(cls: str) -> list[int]"), answer
    assert not [m for m in host.received if m["type"] == "execute"]


def test_a_host_without_an_api_reference_gets_a_clear_tool_result(server, alice, host, scripts_dir, monkeypatch):
    from cloud.hosts.registry import get_provider

    monkeypatch.setattr(get_provider("test"), "api_index_source", lambda hello: None)
    spec = write_script(scripts_dir / "lookup.json", [
        [{"tool_call": {"name": "lookup_api", "input": {"query": "Transaction"}}}], [{"text": "ok"}]])
    sid = alice.new_session(host.host_id, spec)
    stream = alice.run(sid, "look it up")
    result = stream.of("Metadata", "tool_result")[0]
    assert result["content"] == "no API reference is available for 'test' hosts"
    assert result["metadata"]["ok"] is False
    assert not [m for m in host.received if m["type"] == "execute"]


def test_context_block_leads_the_first_user_turn_and_stays_out_of_the_system_prompt(
        server, alice, host, scripts_dir, scripted_requests):
    seen = scripted_requests
    spec = write_script(scripts_dir / "ctx.json", [[{"text": "one"}], [{"text": "two"}]])
    sid = alice.new_session(host.host_id, spec)
    alice.run(sid, "first request")
    alice.run(sid, "second request")
    first_user = seen[0].transcript[0]["content"]
    assert first_user[0].get("kind") == "host_context"
    block = first_user[0]["text"]
    assert "Level 1 (0), Level 2 (3.5)" in block and "Selected element ids (1): 101" in block
    assert "Door 6" in block and first_user[1]["text"] == "first request"
    assert seen[0].system == seen[1].system and "Context from the host" not in seen[0].system


def test_a_run_that_looks_up_inspects_and_acts_completes_on_the_ifc_host(tmp_path, scripts_dir,
                                                                          scripted_requests):
    import ifcopenshell

    from ifc_host.runtime import start_host_thread
    from ifc_host.sample import write_sample_model
    from tests.support.client import Client
    from tests.support.server import running_server

    seen = scripted_requests
    model = tmp_path / "model.ifc"
    write_sample_model(model, storeys=2)
    act = "door = model.by_type('IfcDoor')[0]\nifcopenshell.api.attribute.edit_attributes(model, product=door, attributes={'Tag': 'LOOKED-UP'})"
    spec = write_script(scripts_dir / "ground.json", [
        [{"tool_call": {"name": "lookup_api", "input": {"query": "attribute.edit_attributes"}}}],
        [{"tool_call": {"name": "execute_data_collection", "input": {"code": "print(model.by_type('IfcDoor')[0].Tag)"}}}],
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": act}}}],
        [{"text": "Done."}]])
    with running_server(tmp_path, keepalive_s=0.5) as srv:
        client = Client(srv.url, srv.token("alice"))
        host = start_host_thread(str(model), srv.url, client.token)
        try:
            sid = client.new_session(host.wait_connected(60), spec)
            stream = client.run(sid, "retag the first door")
        finally:
            host.stop()
    lookup, collect, automate = (c["content"] for c in stream.of("Metadata", "tool_result"))
    assert "function ifcopenshell.api.attribute.edit_attributes(" in lookup.splitlines()[1]
    assert "Output:\nD1" in collect  # the first door's mark, read before acting
    assert automate.startswith("Transaction: committed")
    assert stream.last["type"] == "Complete"
    assert ifcopenshell.open(str(model)).by_type("IfcDoor")[0].Tag == "LOOKED-UP"
    context = seen[0].transcript[0]["content"][0]
    assert context["kind"] == "host_context" and "Level 1" in context["text"] and "IfcDoor" in context["text"]


def test_the_runtime_helpers_are_indexed_beside_the_host_api():
    from cloud.hosts.api_indexes import api_index

    answer = api_index("ifc", _hello("ifc", document={"title": "T", "schema": "IFC4"})).answer("nexus_deleted_info")
    assert answer.splitlines()[1].startswith("function nexus_deleted_info() -> dict[int, dict]")
