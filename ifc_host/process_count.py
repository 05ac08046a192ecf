"""The scripts' process count as a pids cgroup, where the keeper may make one.

RLIMIT_NPROC (limits.py) does not bind root, and outside a user namespace it counts every process of the
user. So when the cgroup filesystem lets us (a host run as root, or a delegated cgroup v2 subtree with the
pids controller), the keeper joins a new cgroup `nexus-keeper-<pid>` once, at start, with `pids.max` = the
script limit plus SLACK (the keeper, its idle spare and a held automation's process). Every script process
is forked from the keeper or its spawned spares, so it is inside; it cannot leave (Landlock denies every
write outside its scratch folder). Moving a process between cgroups costs tens of milliseconds, hence once
per keeper, not per script. The keeper removes the group when it shuts down; groups left by a killed keeper
are removed by the next one (rmdir only succeeds on an empty group).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Group:
    path: Path
    parent: Path

    def remove(self) -> None:
        try:
            (self.parent / "cgroup.procs").write_text(str(os.getpid()))
            self.path.rmdir()
        except OSError:
            pass


SLACK = 16
PREFIX = "nexus-keeper-"


def join_keeper_group(limit: int) -> Group | None:
    """Move this process (the keeper) into a new pids cgroup; None if it cannot."""
    base = pids_cgroup()
    if base is None:
        return None
    for stale in base.glob(PREFIX + "*"):
        try:
            stale.rmdir()
        except OSError:
            pass
    path = base / f"{PREFIX}{os.getpid()}"
    try:
        path.mkdir()
    except OSError:
        return None
    try:
        (path / "pids.max").write_text(str(limit + SLACK))
        (path / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        try:
            path.rmdir()
        except OSError:
            pass
        return None
    return Group(path, base)


def in_keeper_group() -> bool:
    """Whether this process counts in a keeper's pids cgroup."""
    try:
        return f"/{PREFIX}" in Path("/proc/self/cgroup").read_text()
    except OSError:
        return False


def pids_cgroup() -> Path | None:
    """The folder of this process's cgroup in a hierarchy with the pids controller, if we may write there."""
    try:
        memberships = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in memberships:
        hierarchy, controllers, relative = (line.split(":", 2) + ["", ""])[:3]
        if hierarchy == "0":
            folder = _mounted(mounts, "cgroup2", None, relative)
            if folder is None or "pids" not in _words(folder / "cgroup.subtree_control"):
                continue
        elif "pids" in controllers.split(","):
            folder = _mounted(mounts, "cgroup", "pids", relative)
        else:
            continue
        if folder is not None and os.access(folder, os.W_OK):
            return folder
    return None


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _mounted(mounts: list[str], fstype: str, option: str | None, relative: str) -> Path | None:
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] != fstype:
            continue
        if option is not None and option not in tail[2].split(","):
            continue
        root, mount_point = fields[3], fields[4]
        if root != "/" and not (relative == root or relative.startswith(root + "/")):
            continue
        inside = relative[len(root):] if root != "/" else relative
        folder = Path(mount_point) / inside.lstrip("/")
        return folder if folder.is_dir() else None
    return None
