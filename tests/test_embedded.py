"""The embedded core (`nexus run`, the evaluator, the batch worker): close() stops everything it started."""
from __future__ import annotations

import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from cloud.embedded import EmbeddedCore, _join_by
from cloud.store import Store
from tests.conformance.hosts import sample_building


def _cycle(store: Store, tmp_path: Path, name: str) -> tuple[set[threading.Thread], EmbeddedCore]:
    model = tmp_path / f"{name}.ifc"
    shutil.copyfile(sample_building(), model)
    core = EmbeddedCore(store, str(model), str(tmp_path / f"{name}-out.ifc"), connect_timeout_s=300)
    return set(threading.enumerate()), core


def test_a_start_and_close_cycle_leaves_the_threads_it_found(tmp_path: Path):
    store = Store(tmp_path / "nexus.db")
    # A first cycle fills this process's caches; the cycle measured is the next one.
    _, first = _cycle(store, tmp_path, "warm-up")
    first.close()

    before = set(threading.enumerate())
    running, core = _cycle(store, tmp_path, "measured")
    started = {t.name for t in running - before}
    assert {"run-leases", "run-recovery", "nexus-http"} <= started, started
    address = core.server.server.server_address[:2]
    token_id = core._token_id
    core.close()

    left = set(threading.enumerate()) - before
    assert not left, sorted(t.name for t in left)
    with pytest.raises(OSError):  # the listening socket is closed, not just no longer served
        socket.create_connection(address, timeout=5).close()
    assert token_id is not None and not store.token_active(token_id)
    assert core.host is not None and not core.host.alive()
    core.close()  # a second close does nothing


def test_closing_one_core_leaves_another_running_and_waits_for_none_of_its_threads(tmp_path: Path, caplog):
    store = Store(tmp_path / "nexus.db")
    _, first = _cycle(store, tmp_path, "first")
    try:
        _, second = _cycle(store, tmp_path, "second")
        try:
            with caplog.at_level("WARNING", logger="cloud.embedded"):
                first.close()
            assert "threads still running" not in caplog.text
            assert second.server.thread.is_alive() and second.host is not None and second.host.alive()
            assert [h.host_id for h in second.state.hosts.for_user(second.user)] == [second.host_id]
        finally:
            second.close()
    finally:
        first.close()


def test_close_waits_for_a_thread_that_is_listed_before_it_has_started() -> None:
    """threading.enumerate() lists a thread between start() and its first instruction, when join() refuses
    it ("cannot join thread before it is started"): closing must wait for it instead of failing."""
    ran = threading.Event()
    late = threading.Thread(target=ran.set)
    starter = threading.Timer(0.05, late.start)
    starter.start()
    _join_by(late, time.monotonic() + 5)
    assert ran.is_set() and not late.is_alive()

    never = threading.Thread(target=ran.set)
    began = time.monotonic()
    _join_by(never, began + 0.1)  # never started: gives up at the deadline, no exception
    assert 0.09 <= time.monotonic() - began < 2


NO_WEB_RUN = """
import json, shutil, sys
from cloud.embedded import EmbeddedCore
from cloud.store import Store
from cloud.vendors.scripted import ScriptedModel
core = EmbeddedCore(Store(sys.argv[1] + "/nexus.db"), sys.argv[2], None, connect_timeout_s=300)
try:
    row = core.new_session("scripted:" + sys.argv[3])
    chunks = list(core.run(row, ScriptedModel(sys.argv[3]), "count the doors"))
finally:
    core.close()
unused = ("flask", "flask_sock", "alembic", "ifcopenshell", "jsonschema")
print(json.dumps({"last": chunks[-1].type, "unused": sorted(m for m in sys.modules
                  if m.split(".")[0] in unused or m.startswith("cloud.web"))}))
"""


def test_the_embedded_core_serves_its_host_and_runs_without_loading_what_it_does_not_use(tmp_path: Path):
    """The host gate alone: a run on a real IFC host completes and neither Flask nor cloud.web is imported; nor,
    on a database already at the newest schema, Alembic; nor IfcOpenShell (the host reads the model, and the API
    index is built at the first lookup_api), nor jsonschema (every message passes its compiled schema)."""
    import json
    import subprocess
    import sys

    Store(tmp_path / "nexus.db").close()  # made by an earlier command
    model = tmp_path / "model.ifc"
    shutil.copyfile(sample_building(), model)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [
        [{"tool_call": {"name": "execute_data_collection", "input": {"code": "print(len(model.by_type('IfcDoor')))"}}}],
        [{"text": "Counted."}]]}))
    done = subprocess.run([sys.executable, "-c", NO_WEB_RUN, str(tmp_path), str(model), str(script)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome == {"last": "Complete", "unused": []}, outcome
