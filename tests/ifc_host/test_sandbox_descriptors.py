"""A script's process holds no descriptor but its own: its channel to the keeper, its output files and (a forked
child) its model file. A fork inherits every descriptor of the keeper, among them the keeper's ends of the
pipes of the spares started before it; through those a script could read another script's messages or write
a job into the next one's channel. Real keepers, both isolations, several scripts in a row (spares kept ahead).
"""
from __future__ import annotations

import json
import uuid

import pytest

from ifc_host.executor import IsolatedExecutor, execute_command

# Every open descriptor a script can use to talk to another process: pipes and sockets, by inode.
LIST_CHANNELS = """
import json, os, stat
found = []
for fd in range(3, 1024):
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        continue
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        found.append([fd, "pipe" if stat.S_ISFIFO(mode) else "socket", os.fstat(fd).st_ino])
print(json.dumps(found))
"""


@pytest.mark.parametrize("mode", ["collect", "automate"])
def test_a_script_holds_only_its_own_channel(shared_executor: IsolatedExecutor, mode: str):
    seen: list[set[tuple[str, int]]] = []
    for _ in range(4):
        reply = shared_executor.execute(execute_command(uuid.uuid4().hex, mode, LIST_CHANNELS, 60))
        assert reply["ok"], reply.get("error")
        channels = {(kind, inode) for _fd, kind, inode in json.loads(reply["stdout"])}
        # forked: two pipes (to and from the keeper); spawned: one socket (a duplex multiprocessing pipe)
        assert len(channels) <= 2, channels
        seen.append(channels)
    for i, earlier in enumerate(seen):
        for later in seen[i + 1:]:
            assert not earlier & later, f"two scripts held the same pipe or socket: {earlier & later}"
