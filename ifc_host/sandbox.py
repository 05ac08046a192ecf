"""What a script may reach, applied inside the process that runs it, just before the script starts.

1. Environment: scrubbed. Only a minimal PATH, HOME/TMPDIR pointing at a private scratch directory, the
   locale and the thread-count settings survive; tokens, API keys and server settings are gone.
2. Network: on Linux, a new (empty) network namespace inside a new user namespace (made by process_tree.py
   when the script's process splits from its supervisor), so no socket reaches anything, loopback included.
   Where that is not permitted, Landlock (ABI 4+) denies every TCP connect and bind instead. Elsewhere the network is not restricted, and the host log says so.
3. Files and processes: on Linux with Landlock (5.13+), the script can read the Python installation and the
   system libraries, read and write only its own scratch directory, and open nothing else: not the model
   file (the script works on the copy in memory; the host saves it), not the server's database, not the
   user's home. Landlock also stops it from reading other processes' memory or environment
   (`/proc/<pid>/environ`) and, with ABI 6+, from signalling processes outside the sandbox.
   This is the unprivileged model Chromium and Flatpak-style sandboxes use: namespaces plus an LSM allow-list.
4. Limits (limits.py): memory, CPU time, scratch size (a tmpfs in the script's mount namespace), processes.
5. Sockets: last, a seccomp filter (seccomp.py) refuses every new socket, of any family, so no Unix socket
   file (a database's, gunicorn's control socket, an ssh agent) is reachable either.

Every step that the platform refuses degrades to "not restricted" and is reported, never an error.
"""
from __future__ import annotations

import ctypes
import functools
import os
import site
import sys
import sysconfig
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ifc_host import limits as script_limits
from ifc_host import process_tree, seccomp

_SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every Linux architecture (added after 5.x unification)
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

_KEPT_VARIABLES = ("SYSTEMROOT", "WINDIR", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TZ")
_SYSTEM_READ_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/sys/devices/system/cpu")
_SYSTEM_READ_FILES = ("/etc/ld.so.cache", "/etc/localtime")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")


@dataclass(frozen=True)
class SandboxReport:
    environment: str
    network: str
    filesystem: str
    sockets: str
    processes: str
    limits: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def summary(self) -> str:
        return (f"environment {self.environment}; network {self.network}; files {self.filesystem}; "
                f"sockets {self.sockets}; processes {self.processes}; limits {self.limits}")


def apply(scratch: Path, tree: process_tree.Tree, limits: script_limits.ScriptLimits) -> SandboxReport:
    """Confine the current process (single-threaded, before the script runs) and say what applied.
    `tree`: the namespaces made when the script's process split from its supervisor (process_tree.py)."""
    scratch = Path(scratch).resolve()
    libc = process_tree.load_libc()
    scrub_environment(scratch)
    scratch_bounded = tree.mount_namespace and script_limits.mount_scratch(libc, scratch, limits)
    os.chdir(scratch)
    script_limits.apply(libc, limits, user_namespace=tree.network_namespace)
    network = "none (private network namespace)" if tree.network_namespace else None
    filesystem, tcp_blocked = _landlock(scratch, block_tcp=network is None)
    if network is None:
        network = "TCP blocked (Landlock)" if tcp_blocked else "NOT restricted (no network namespace or Landlock)"
    sockets = seccomp.block_sockets(libc) if libc is not None else "NOT restricted (no seccomp on this system)"
    return SandboxReport(environment="scrubbed", network=network, filesystem=filesystem, sockets=sockets,
                         processes=f"run as {tree.user}; {tree.describe()}",
                         limits=limits.describe(scratch_bounded, tree.processes_counted_by()))


def confine_read(scratch: Path) -> str:
    """A read server's child (read_child.py), already inside the server's confinement: its own empty scratch
    folder becomes HOME, TMPDIR and the working directory, and a Landlock domain of its own, nested in the
    server's, lets it write there only (not in the server's scratch, nor an earlier read's), read only what
    the server reads, and (Landlock's scoping) neither trace nor signal the server nor anything outside it.
    Returns what Landlock applied; SandboxRefused if it did not (the script must not run then)."""
    scratch = Path(scratch).resolve()
    scrub_environment(scratch)
    os.chdir(scratch)
    filesystem, _ = _landlock(scratch, block_tcp=False)
    if filesystem.startswith("NOT"):
        raise SandboxRefused(filesystem)
    return filesystem


class SandboxRefused(RuntimeError):
    """A confinement step that a read server's child requires did not apply."""


def scrub_environment(scratch: Path) -> None:
    kept = {name: os.environ[name] for name in _KEPT_VARIABLES if name in os.environ}
    os.environ.clear()
    os.environ.update(kept)
    os.environ.update({"PATH": os.defpath, "HOME": str(scratch), "TMPDIR": str(scratch), "TMP": str(scratch),
                       "TEMP": str(scratch), "LANG": "C.UTF-8"})
    tempfile.tempdir = str(scratch)


@functools.cache
def landlock_abi() -> int:
    libc = process_tree.load_libc()
    if libc is None:
        return 0
    abi = libc.syscall(ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                       ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    return max(int(abi), 0)


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= 1 << 13  # REFER
    if abi >= 3:
        rights |= _FS_TRUNCATE
    if abi >= 5:
        rights |= _FS_IOCTL_DEV
    return rights


def read_only_paths(scratch: Path) -> tuple[list[str], list[str]]:
    """(directories, files) a script may read: the Python installation, system libraries, itself."""
    dirs, files = _installation_paths()
    own = f"/proc/{process_tree.own_pid()}"  # /proc/self: this process only (os.getpid() is 1 in its namespace)
    return [*dirs, own] if os.path.isdir(own) else list(dirs), list(files)


@functools.cache
def _installation_paths() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Computed once (sysconfig is slow) and inherited by every forked child: call prepare() before forking."""
    dirs: set[str] = set()
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        value = sysconfig.get_paths().get(name)
        if value:
            dirs.add(value)
    dirs.update([sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *site.getsitepackages()])
    dirs.update(_SYSTEM_READ_DIRS)
    dirs.add(str(Path(__file__).resolve().parent))  # the host package (lazily imported helpers)
    existing = sorted(d for d in {os.path.realpath(d) for d in dirs} if os.path.isdir(d) and d != "/")
    files = [f for f in (*_SYSTEM_READ_FILES, *_DEVICES) if os.path.exists(f)]
    return tuple(existing), tuple(files)


def prepare() -> None:
    """Do the slow, process-independent part of `apply` now (in the keeper, before it forks)."""
    _installation_paths()
    landlock_abi()


def _landlock(scratch: Path, block_tcp: bool) -> tuple[str, bool]:
    libc = process_tree.load_libc()
    abi = landlock_abi()
    if libc is None or abi < 1:
        return "NOT restricted (Landlock unavailable)", False
    fs_rights = _fs_rights(abi)
    net_rights = _NET_BIND_TCP | _NET_CONNECT_TCP if (block_tcp and abi >= 4) else 0
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    attr = (ctypes.c_uint64 * 3)(fs_rights, net_rights, scoped)
    ruleset = libc.syscall(ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        return f"NOT restricted (Landlock refused: {os.strerror(ctypes.get_errno())})", False
    try:
        read_dir = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
        dirs, files = read_only_paths(scratch)
        for path in dirs:
            _allow(libc, ruleset, path, read_dir)
        for path in files:
            device = path.startswith("/dev/")
            _allow(libc, ruleset, path, (_FS_READ_FILE | _FS_WRITE_FILE) if device else _FS_READ_FILE)
        _allow(libc, ruleset, str(scratch), fs_rights)
        if libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                      ctypes.c_ulong(0)) != 0:
            return f"NOT restricted (no_new_privs refused: {os.strerror(ctypes.get_errno())})", False
        if libc.syscall(ctypes.c_long(_SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return f"NOT restricted (Landlock refused: {os.strerror(ctypes.get_errno())})", False
    finally:
        os.close(ruleset)
    return f"read-only Python and system libraries, read-write scratch only (Landlock ABI {abi})", bool(net_rights)


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        rule = _PathBeneath(rights, fd)
        libc.syscall(ctypes.c_long(_SYS_LANDLOCK_ADD_RULE), ctypes.c_int(ruleset),
                     ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0))
    finally:
        os.close(fd)
