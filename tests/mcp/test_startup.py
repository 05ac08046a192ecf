"""`nexus mcp --ifc` answers `initialize` and lists its tools before its IFC host has connected (a big model
takes a while to open); a tool call made meanwhile waits for the host; a host that cannot start is reported
on the tool call. Ordering is asserted through the server's own standard error, never timings."""
from __future__ import annotations

import json
from pathlib import Path

import anyio

from tests.mcp.support import ROOT, stdio_session, text_of

STARTING = "starting its IFC host"
CONNECTED = "has connected"


def _padded_model(path: Path, points: int) -> Path:
    """The sample building with `points` extra (unused) cartesian points: quick to write, slow to parse."""
    from ifc_host.sample import write_sample_model

    write_sample_model(str(path), storeys=1)
    head, tail = path.read_text().rsplit("ENDSEC;", 1)
    with path.open("w") as out:
        out.write(head)
        for i in range(points):
            out.write(f"#{900000 + i}=IFCCARTESIANPOINT(({i}.,{i % 97}.,0.));\n")
        out.write("ENDSEC;" + tail)
    return path


def test_initialize_and_tools_list_answer_before_the_host_connects_and_a_call_waits_for_it(tmp_path):
    model = _padded_model(tmp_path / "big.ifc", 150_000)
    stderr = tmp_path / "stderr.txt"

    async def scenario():
        with stderr.open("w") as errlog:
            async with stdio_session("--ifc", str(model), "--db", str(tmp_path / "db.sqlite"),
                                     errlog=errlog) as session:
                tools = (await session.list_tools()).tools
                before = stderr.read_text()  # the server's log once initialize and tools/list were answered
                collected = await session.call_tool("execute_data_collection",
                                                    {"code": "print(len(model.by_type('IfcProject')))"})
                after = stderr.read_text()
                return tools, before, collected, after

    tools, before, collected, after = anyio.run(scenario)
    assert STARTING in before and CONNECTED not in before, before
    contract = json.loads((ROOT / "shared_contract" / "tools" / "capture_view.json").read_text())
    (capture_view,) = [t for t in tools if t.name == "capture_view"]
    # the IFC host's views are listed from the start: they depend on the application, not on the model
    assert capture_view.description.startswith(contract["description"])
    assert capture_view.description != contract["description"]
    assert not collected.is_error, text_of(collected)
    assert collected.structured_content["stdout"].strip() == "1"
    assert CONNECTED in after


def test_a_host_that_cannot_start_is_reported_on_each_tool_call(tmp_path):
    from ifc_host.sample import write_sample_model

    model = tmp_path / "no_project.ifc"
    write_sample_model(str(model), storeys=1)
    head, tail = model.read_text().split("DATA;", 1)
    # A whole STEP file (the server's quick check passes it) that holds no IfcProject: the host refuses it.
    model.write_text(head + "DATA;\n#1=IFCCARTESIANPOINT((0.,0.,0.));\nENDSEC;\n" + tail.rsplit("ENDSEC;", 1)[1])

    async def scenario():
        async with stdio_session("--ifc", str(model), "--db", str(tmp_path / "db.sqlite")) as session:
            tools = (await session.list_tools()).tools
            first = await session.call_tool("execute_data_collection", {"code": "print(1)"})
            hosts = await session.call_tool("list_hosts", {})
            return tools, first, hosts

    tools, first, hosts = anyio.run(scenario)
    assert "execute_data_collection" in {t.name for t in tools}
    for result in (first, hosts):
        assert result.is_error and "could not start" in text_of(result), text_of(result)
        assert "IfcProject" in text_of(result), text_of(result)


def test_a_host_that_does_not_connect_in_time_is_reported_on_the_tool_call(tmp_path):
    model = _padded_model(tmp_path / "big.ifc", 20_000)

    async def scenario():
        # No interpreter starts, imports IfcOpenShell and parses a model in a hundredth of a second.
        async with stdio_session("--ifc", str(model), "--db", str(tmp_path / "db.sqlite"),
                                 "--host-start-timeout", "0.01") as session:
            return await session.call_tool("execute_data_collection", {"code": "print(1)"})

    late = anyio.run(scenario)
    assert late.is_error and "could not start" in text_of(late) and "0.01 s" in text_of(late), text_of(late)
