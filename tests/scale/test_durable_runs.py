"""Issue 14 item 1: a run outlives its watchers; the person's runs in progress are listed across sessions."""
from __future__ import annotations

import pytest

from tests.support.client import Client, write_script
from tests.support.spine import collect, say, session, start_and_hang_up
from tests.support.test_host import TestHost
from tests.support.waiting import wait_until


@pytest.fixture
def silent_host(server, alice):
    host = TestHost(server.ws_url, alice.token, silent=True).start()
    yield host
    host.stop()


def test_runs_in_progress_are_listed_for_their_user_only_and_leave_the_list_when_done(server, alice,
                                                                                      silent_host, scripts_dir):
    spec = write_script(scripts_dir / "l.json", [collect("print(1)"), say("done")])
    session_id = alice.new_session(silent_host.host_id, spec)
    start_and_hang_up(alice, session_id)
    (run,) = alice.call("GET", "/api/runs").json()["runs"]
    assert run["session_id"] == session_id and run["awaiting_decision"] is False and run["chunks"] >= 1
    assert server.state.store.run_lease(session_id)["owner"] == server.state.runs.owner
    bob = Client(server.url, server.token("bob"))
    assert bob.call("GET", "/api/runs").json() == {"runs": []}
    wait_until(lambda: not session(alice, session_id)["running"], timeout=server.state.settings.tool_timeout_s + 10)
    assert alice.call("GET", "/api/runs").json() == {"runs": []}
    assert server.state.store.run_lease(session_id) is None  # released with the run's end
