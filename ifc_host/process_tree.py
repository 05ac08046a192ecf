"""Every process a script starts ends with it (issue 23 M1/M2), without trusting process groups.

The process the keeper starts for a script (forked, or the spawned spare) splits before confinement:

- the *supervisor* (the keeper's direct child; in the keeper's pids cgroup where there is one) makes the
  namespaces (a user namespace, a private network, a PID namespace, a mount namespace) and forks. It is never
  confined, and the script cannot address it (outside the script's PID namespace; Landlock's signal scope).
- *PID 1* of the new PID namespace is a reaper, never confined either: it forks the script process and reaps
  whatever ends. When it exits, however it exits, the kernel kills everything else in the namespace (double
  forks and `setsid` included) before the supervisor can reap it.
- the *script process* confines itself and runs the script; an ordinary process (PID 2), so signals it sends
  itself (abort()) and the CPU limit's SIGXCPU work as anywhere. At the script's end it kills every other
  process of its namespace (`end_descendants`: kill(-1) there reaches nothing outside the namespace).

Where unprivileged user namespaces are not available, there is no PID 1: the supervisor and the script
process are child subreapers instead, so orphans of the script come back to the script process (or, once it
died, to the supervisor), which kill their children until none are left. A script that kills its supervisor
there can leave processes behind unless Landlock (ABI 6+) scopes its signals, as current kernels do.

The keeper stops a script by SIGKILL to the script process (through a pidfd, so a recycled pid is never hit),
then waits a bounded time for the supervisor, then kills it too: no wait blocks without a bound.
"""
from __future__ import annotations

import ctypes
import functools
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ifc_host import process_count

try:
    import resource  # noqa: F401 - os.wait4 imports it to build its result: do it before any confinement
except ImportError:  # Windows
    pass

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 2, 4, 1 << 14, 1 << 18
END_GRACE_S = 5.0  # how long the script process or supervisor keeps killing stragglers at most


@dataclass
class Tree:
    """What the script process knows about its own confinement, made before it was forked."""

    supervisor: int | None  # None: not split (no fork here: Windows; macOS, where forking a loaded process is unsafe)
    pid_namespace: bool
    network_namespace: bool
    mount_namespace: bool
    user: str
    note_fd: int  # write end: the CPU limit for the supervisor, so a SIGKILL at that limit is named
    counted: bool  # in the keeper's pids cgroup, bounding the process count (else RLIMIT_NPROC only)

    @property
    def pid(self) -> int:
        """This process's pid as the keeper sees it (os.getpid() says 1 inside the PID namespace)."""
        return own_pid()

    def processes_counted_by(self) -> str:
        if self.counted:
            return "pids cgroup of the host"
        if self.supervisor is None:
            return "NOT bounded here"
        if os.getuid() == 0:
            return "NOT bounded: root is exempt from RLIMIT_NPROC and no pids cgroup could be made"
        return "RLIMIT_NPROC per user namespace" if self.network_namespace else "RLIMIT_NPROC over the user's processes"

    def describe(self) -> str:
        if self.supervisor is None:
            return "NOT tracked (no fork or child subreaper on this system): processes a script starts may outlive it"
        if self.pid_namespace:
            return "end with the script (own PID namespace: nothing it starts outlives it)"
        return "end with the script (child subreapers kill what it left; no PID namespace here)"


def own_pid() -> int:
    try:
        return int(os.readlink("/proc/self"))
    except (OSError, ValueError):
        return os.getpid()


@functools.cache
def load_libc() -> ctypes.CDLL | None:
    """The C library (Linux only), its errno kept and `syscall` returning a long: for prctl, unshare and seccomp."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    libc.syscall.restype = ctypes.c_long
    return libc


def _prctl(libc: ctypes.CDLL, option: int, value: int) -> bool:
    return libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                      ctypes.c_ulong(0)) == 0


def die_with_parent(libc: ctypes.CDLL | None, parent: int | None) -> None:
    """SIGKILL when the parent ends (Linux); exit at once if it already has."""
    if libc is None:
        return
    _prctl(libc, _PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:
        os._exit(70)


def pwd_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError, OSError):
        return str(uid)


def _unshare(libc: ctypes.CDLL) -> tuple[bool, bool, bool]:
    """(pid, network, mount) namespaces made, inside a new user namespace that keeps our ids (and, with the
    first three, an IPC namespace of its own: no System V IPC object or POSIX message queue of the host's)."""
    uid, gid = os.getuid(), os.getgid()
    for flags in (_CLONE_NEWUSER | _CLONE_NEWNET | _CLONE_NEWPID | _CLONE_NEWNS | _CLONE_NEWIPC,
                  _CLONE_NEWUSER | _CLONE_NEWNET):
        if libc.unshare(ctypes.c_int(flags)) == 0:
            break
    else:
        return False, False, False
    for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", f"{uid} {uid} 1"),
                       ("/proc/self/gid_map", f"{gid} {gid} 1")):
        try:
            with open(path, "w") as handle:
                handle.write(text)
        except OSError:
            pass
    return bool(flags & _CLONE_NEWPID), True, bool(flags & _CLONE_NEWNS)


def enter_own_tree(scratch: Path, supervisor_closes: list[int]) -> Tree:
    """Split into supervisor and script process; returns in the script process only (the supervisor waits
    for it, cleans up and exits with its status). `supervisor_closes`: the script's channel and output fds,
    which the supervisor must not hold open."""
    libc = load_libc()
    if libc is None:
        user = pwd_name(os.getuid()) if hasattr(os, "getuid") else "this user"
        return Tree(None, False, False, False, user, -1, False)
    keeper = os.getppid()
    die_with_parent(libc, keeper)
    user = pwd_name(os.getuid())
    counted = process_count.in_keeper_group()
    pid_ns, net_ns, mount_ns = _unshare(libc)
    _prctl(libc, _PR_SET_CHILD_SUBREAPER, 1)
    note_read, note_write = os.pipe()
    supervisor = os.getpid()
    pid = os.fork()
    if pid != 0:
        os.close(note_write)
        _close(supervisor_closes)
        _supervise(pid, note_read)
    os.close(note_read)
    die_with_parent(libc, None if pid_ns else supervisor)
    if pid_ns:
        # PID 1 of the namespace: a reaper, never confined, that the script can neither signal nor trace.
        # The script is its child, an ordinary process (signals it sends itself, abort() included, work).
        script = os.fork()
        if script != 0:
            _close(supervisor_closes)
            _reap_as_init(script, note_write)
        die_with_parent(libc, 1)
    else:
        _prctl(libc, _PR_SET_CHILD_SUBREAPER, 1)  # the script's orphans come back here
    close_all_but({0, 1, 2, note_write, *supervisor_closes})
    return Tree(supervisor, pid_ns, net_ns, mount_ns, user, note_write, counted)


def close_all_but(keep: set[int]) -> None:
    """Close every descriptor but `keep`. A forked process holds all its parent's: the keeper's ends of the
    other spares' pipes, files and pipes of the keeper's own; the script reaches only its own channel and files."""
    try:
        held = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc (or not readable here): every number a descriptor can have, a range at a time
        low = 0
        for fd in sorted(keep):
            if fd > low:  # (os.closerange(n, n) would close every descriptor from n on)
                os.closerange(low, fd)
            low = max(low, fd + 1)
        top = int(os.sysconf("SC_OPEN_MAX"))
        if top > low:
            os.closerange(low, top)
        return
    _close([fd for fd in held if fd not in keep])


def _close(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _reap_as_init(script: int, note_fd: int) -> None:
    """PID 1's whole life: reap everything; once the script process ended, kill the rest, tell the
    supervisor how the script ended, and exit (the kernel then empties the namespace before we are reaped)."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    status = 0
    while True:
        try:
            pid, status_now = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == script:
            status = status_now
            break
    if os.WIFSIGNALED(status):
        try:
            os.write(note_fd, f"killed {os.WTERMSIG(status)}\n".encode())
        except OSError:
            pass
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


def _supervise(child: int, note_fd: int) -> None:
    """The supervisor's whole life: reap its child (the namespace's PID 1, or the script process itself)
    and any orphan, kill what is left, pass on how the script process ended."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    status, cpu = 0, 0.0
    while True:
        try:
            pid, status_now, usage = os.wait4(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == child:
            status, cpu = status_now, usage.ru_utime + usage.ru_stime
            break
    _kill_children(END_GRACE_S)
    note = _read_note(note_fd)
    signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else note.get("killed")
    if signum:
        cpu_limit = note.get("cpu", 0)
        if cpu_limit and signum in (signal.SIGKILL, signal.SIGXCPU) and cpu >= cpu_limit - 0.05:
            signum = signal.SIGXCPU  # the kernel's SIGKILL at the hard CPU limit: say which limit it was
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        try:
            if signum not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
            os.kill(os.getpid(), signum)
        except (OSError, ValueError):
            pass
        os._exit(128 + signum)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


def _read_note(fd: int) -> dict[str, int]:
    """What the script process ("cpu N") and PID 1 ("killed S") wrote for us, as {word: number}."""
    try:
        os.set_blocking(fd, False)
        text = os.read(fd, 256).decode("ascii", "replace")
    except (BlockingIOError, OSError):
        return {}
    note: dict[str, int] = {}
    for line in text.splitlines():
        word, _, number = line.partition(" ")
        if number.strip().isdigit():
            note[word] = int(number)
    return note


def write_note(tree: Tree, cpu_limit_s: int) -> None:
    """Tell the supervisor the CPU limit, then drop the channel (the script never holds it)."""
    try:
        os.write(tree.note_fd, f"cpu {cpu_limit_s}\n".encode())
    except OSError:
        pass
    try:
        os.close(tree.note_fd)
    except OSError:
        pass


def _children() -> list[int]:
    pids: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            pids.extend(int(p) for p in Path(f"/proc/self/task/{task}/children").read_text().split())
        except (OSError, ValueError):
            continue
    return pids


def _kill_children(grace_s: float) -> None:
    """Kill and reap this process's children until none is left (orphans keep arriving: we are a subreaper)."""
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        children = _children()
        if not children:
            if not _reap_any():
                return
            continue
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        _reap_any()


def _reap_any() -> bool:
    """Reap whatever has ended; False when this process has no children at all."""
    reaped_one = False
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped_one
        if pid == 0:
            time.sleep(0.005)
            return True
        reaped_one = True


def own_ipc_namespace(libc: ctypes.CDLL | None) -> bool:
    """A fresh, empty IPC namespace for this process (a read server's child: nothing an earlier read left in
    System V IPC or a POSIX message queue is there); False where it cannot be made."""
    return libc is not None and libc.unshare(ctypes.c_int(_CLONE_NEWIPC)) == 0


def become_subreaper(libc: ctypes.CDLL | None) -> None:
    """Orphans of this process's descendants come back to it (end_children then finds them)."""
    if libc is not None:
        _prctl(libc, _PR_SET_CHILD_SUBREAPER, 1)


def end_own_descendants() -> None:
    """A read server's child, at its script's end (read_child.py): kill(-1) reaches its own descendants only
    (Landlock's signal scope keeps its server and everything outside its domain out of reach), and as a
    subreaper it is the parent of every one of them whose own parent ended; once it has no child left, no
    descendant is left."""
    deadline = time.monotonic() + END_GRACE_S
    while time.monotonic() < deadline:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        if not _reap_any():
            return


def end_descendants(tree: Tree | None) -> None:
    """At the script's end: every process it started is killed and reaped before its result is reported."""
    if tree is None or tree.supervisor is None:
        return
    if tree.pid_namespace:
        deadline = time.monotonic() + END_GRACE_S
        while time.monotonic() < deadline:
            try:
                os.kill(-1, signal.SIGKILL)  # everyone in our namespace but PID 1 and ourselves
            except ProcessLookupError:
                _reap_any()
                return
            _reap_any()
        return
    _kill_children(END_GRACE_S)


class ScriptHandle:
    """The keeper's hold on a script process it does not parent: a pidfd opened while the supervisor (its
    parent, which cannot have reaped it yet) is known to be running, so the pid cannot have been reused."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.pidfd: int | None = None

    def adopt(self, pid: int | None, supervisor_running: bool) -> None:
        if not pid or not supervisor_running:
            return
        self.pid = pid
        try:
            self.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self.pidfd = None

    def kill(self) -> bool:
        """SIGKILL the script process (True: signalled, or already gone); False when it is not held."""
        if self.pidfd is None:
            return False
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass
        except OSError:
            return False
        return True

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def reap_bounded(pid: int, grace_s: float, hard_s: float = 30.0) -> int | None:
    """Wait for a child of ours to end: `grace_s` for it to end by itself (the supervisor cleaning up), then
    SIGKILL and `hard_s` more. Returns its wait status, None if it is still not gone (never blocks longer)."""
    deadline = time.monotonic() + grace_s
    killed = False
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 0
        if done:
            return status
        if time.monotonic() >= deadline:
            if killed:
                return None
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            killed, deadline = True, time.monotonic() + hard_s
        time.sleep(0.002)
