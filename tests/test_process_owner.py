"""One identity per process for a run's lease, its session state and its bus messages (issue 24 item 6)."""
from __future__ import annotations

import multiprocessing
import os
import socket
import subprocess
import sys

from cloud.process_owner import owner_gone, this_process
from cloud.runs import RunRegistry
from tests.support.client import Client, write_script
from tests.support.server import running_server
from tests.support.spine import say


def _child_identity(queue: multiprocessing.Queue) -> None:
    queue.put(this_process())


def test_this_process_is_machine_pid_nonce_and_stable_within_the_process():
    machine, pid, nonce = this_process().split(":")
    assert machine == socket.gethostname() and int(pid) == os.getpid() and len(nonce) == 8
    assert this_process() == this_process()


def test_a_forked_child_is_a_process_of_its_own():
    mine = this_process()
    queue: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(target=_child_identity, args=(queue,))
    child.start()
    theirs = queue.get(timeout=30)
    child.join(30)
    assert theirs != mine and theirs.split(":")[1] == str(child.pid)



def test_owner_gone_for_a_dead_pid_a_live_one_and_an_earlier_process_with_this_pid():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    here = socket.gethostname()
    assert owner_gone(f"{here}:{dead.pid}:0123abcd") and owner_gone(f"{here}:{dead.pid}")
    assert not owner_gone(this_process())
    assert owner_gone(f"{here}:{os.getpid()}:deadbeef")  # this pid, another process's nonce: that one is gone
    assert not owner_gone(f"{here}:{os.getppid()}:0123abcd")  # alive: the parent of this test
    assert not owner_gone("another-machine:1:0123abcd") and not owner_gone("direct")
    assert owner_gone(None) and owner_gone("")


def test_a_chat_run_writes_its_registrys_identity_the_one_on_its_lease_on_its_session_state(tmp_path, scripts_dir):
    with running_server(tmp_path) as server:
        alice = Client(server.url, server.token("alice"))
        spec = write_script(scripts_dir / "owner.json", [say("Done.")])
        session_id = alice.new_session(model=spec)
        assert alice.run(session_id, "hello").last == {"type": "Complete", "content": "Done."}
        owner = server.state.store.get_session(session_id)["state"]["run_owner"]
        assert owner == server.state.runs.owner


def test_further_instances_in_one_process_are_told_apart_and_all_count_as_alive():
    first, second = RunRegistry().owner, RunRegistry().owner
    assert first != second and {first.split(":")[1], second.split(":")[1]} == {str(os.getpid())}
    assert not owner_gone(first) and not owner_gone(second)
