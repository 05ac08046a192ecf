"""Issue 22, item 1: a lease lost by a dead process is a cancel too. `kill -9` of the instance driving a run
while a real IFC host runs a long script: when the other instance recovers the run, the host is told to
abort it, so the script is killed and rolled back at once (not left to run for its 15 s and then hold the
change), and the host serves the next run right after the recovery. One PostgreSQL, one Redis."""
from __future__ import annotations

import os
import signal
import time

from tests.scale.test_crash import LEASE_S, instance_a, instance_b  # noqa: F401 (fixtures)
from tests.support.client import Client, write_script
from tests.support.spine import (
    BackgroundRun,
    assert_transcript_valid,
    automate,
    collect,
    say,
    session,
    wait_until,
)

SCRIPT_S = 15


def test_a_dead_drivers_long_script_is_aborted_when_its_run_is_recovered(instance_a, instance_b,  # noqa: F811
                                                                         scripts_dir, tmp_path):
    from cloud.child_host import start_ifc_host
    from ifc_host.sample import write_sample_model

    a = instance_a
    b_url, b_process = instance_b
    model, out = tmp_path / "lease.ifc", tmp_path / "lease-out.ifc"
    write_sample_model(str(model), storeys=1)
    before = model.read_bytes()
    token = a.token("alice")
    ifc = start_ifc_host(str(model), a.url, a.state.store.create_token("alice", scope="host"), str(out))
    try:
        host_id = a.wait_for_host("alice", timeout=60)
        on_a, on_b = Client(a.url, token), Client(b_url, token)
        # A lists the host once it said hello; its record reaches Redis, where B looks, a moment later.
        wait_until(lambda: _activity(on_b, host_id) != "gone", timeout=10)
        spec = write_script(scripts_dir / "lease.json", [
            automate(f"import time\ntime.sleep({SCRIPT_S})\nmodel.by_type('IfcDoor')[0].Name = 'Lease door'"),
            say("done")])
        session_id = on_b.new_session(host_id, spec)
        run = BackgroundRun(on_b, session_id, "rename a door slowly")
        run.wait_for("ToolCall", timeout=30)
        wait_until(lambda: _activity(on_a, host_id) == "busy", timeout=30)
        killed_at = time.monotonic()
        os.kill(b_process.pid, signal.SIGKILL)
        b_process.wait(10)
        wait_until(lambda: session(on_a, session_id)["status"] != "running", timeout=LEASE_S * 6 + 10)
        assert_transcript_valid(session(on_a, session_id)["messages"])
        count = write_script(scripts_dir / "lease-after.json", [collect("print(len(model.by_type('IfcDoor')))"),
                                                                say("counted")])
        while True:  # the abort may still be landing (a loaded machine): the host says busy until it has
            after = on_a.run(on_a.new_session(host_id, count), "count the doors")
            (result,) = after.of("Metadata", "tool_result")
            if result["metadata"]["ok"] or "busy" not in result["content"] \
                    or time.monotonic() - killed_at > SCRIPT_S - 2:
                break
            time.sleep(0.2)
        assert result["metadata"]["ok"] is True, result["content"]
        served = time.monotonic() - killed_at
        assert served < SCRIPT_S - 2, f"the next run was served {served:.1f} s after the kill: the script ran on"
        assert model.read_bytes() == before
        assert not out.exists() or out.read_bytes() == before
    finally:
        ifc.stop()


def _activity(client: Client, host_id: str) -> str:
    hosts = client.call("GET", "/api/hosts").json()["hosts"]
    return next((h["activity"]["state"] for h in hosts if h["host_id"] == host_id), "gone")
