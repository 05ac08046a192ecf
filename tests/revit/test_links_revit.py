"""Linked models are the references of a federated Revit session: scripts see `links` (name -> the linked document
and its placement), read-only; an unloaded link and a link Revit gives no document for are named, not fatal. The real
executor on the fake Revit's main thread."""
from __future__ import annotations

from tests.revit.test_guards_revit import execute
from tests.revit.test_runtime_server import launch  # noqa: F401, F811 - a fixture

READ = ("for name, link in links.items():\n"
        "    walls = DB.FilteredElementCollector(link.document).OfClass(DB.Wall).GetElementCount()\n"
        "    p = link.to_host(DB.XYZ(1, 2, 3))\n"
        "    print(name, walls, p.X, p.Y, p.Z, link.document.IsLinked)\n"
        "print(sorted(links.unavailable.items()))\n")


def test_scripts_see_loaded_links_with_their_placement_and_the_unavailable_ones_named(revit):
    revit.link_document("Structure", offset=(100.0, 0.0, -3.0))
    revit.link_document("MEP", loaded=False)
    revit.link_document("Survey", broken=True)
    reply = execute(revit, READ, mode="collect")
    assert reply["ok"] is True, reply.get("error")
    lines = reply["stdout"].splitlines()
    assert lines[0] == "Structure 4 101.0 2.0 0.0 True"  # 4 walls on its one level; moved by the link's transform
    assert "MEP" in lines[1] and "not loaded" in lines[1] and "no document" in lines[1]
    missing = execute(revit, "links['MEP.rvt : 1 : location <Not Shared>']\n", mode="collect")
    assert missing["ok"] is False and "not loaded" in missing["error"]["message"]


def test_a_linked_model_cannot_be_changed_and_the_run_leaves_both_documents_unchanged(revit):
    linked = revit.link_document("Structure")
    before, linked_before = revit.document_bytes(), revit.document_bytes(linked)
    code = ("level = DB.FilteredElementCollector(doc).OfClass(DB.Level).FirstElement()\n"
            "DB.Wall.Create(doc, DB.Line.CreateBound(DB.XYZ(100, 100, 0), DB.XYZ(130, 100, 0)), level.Id, False)\n"
            "t = DB.Transaction(links['Structure'].document, 'edit the link')\n"
            "t.Start()\n")
    reply = execute(revit, code)
    assert reply["ok"] is False and reply["committed"] is False
    assert "linked document" in reply["error"]["message"]
    assert revit.document_bytes() == before and revit.document_bytes(linked) == linked_before


def test_without_links_scripts_see_an_empty_mapping(revit):
    reply = execute(revit, "print(len(links), list(links), links.unavailable)\n", mode="collect")
    assert reply["stdout"] == "0 [] {}\n"


def test_the_context_block_names_the_linked_models_for_the_model(server, launch):  # noqa: F811
    from cloud.context import render_context_block
    from cloud.contract import validate_host_message

    host, _ = launch()
    host.session.link_document("Structure")
    host.session.link_document("MEP", loaded=False)
    reply = validate_host_message(server.send_to_host(host.host_id, {"type": "context"}))
    links = reply["context"]["links"]
    assert links["loaded"] == ["Structure"] and list(links["unavailable"]) == ["MEP.rvt : 1 : location <Not Shared>"]
    block = render_context_block(server.state.hosts.get(host.host_id), reply["context"])
    assert "Linked models (read-only" in block and "Structure" in block and "not loaded" in block
