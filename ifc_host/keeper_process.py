"""Starting the model keeper process (`python -m ifc_host.keeper`) with a scrubbed environment.

Light on imports on purpose (the standard library and limits.py only): the host's launcher starts the
keeper with it before it imports anything heavy, so the keeper imports IfcOpenShell and opens the model while
the launcher imports its own modules, and the first call waits for the slower of the two rather than for
both one after the other (executor.IsolatedExecutor takes the started keeper as `launched`).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path

from ifc_host import limits as script_limits

ISOLATIONS = ("fork", "spawn")
DEFAULT_HOLD_TIMEOUT_S = 900.0
# How long the keeper may take to write a commit or a held model, and how many aborts it remembers: the
# runtime's proxy (executor.py) waits and remembers as long.
COMMIT_TIMEOUT_S = 600.0
SNAPSHOT_TIMEOUT_S = 300.0
ABORTS_REMEMBERED = 64
# What the keeper's environment keeps from ours: enough for Python to start, nothing secret.
KEEPER_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT",
                      "WINDIR", "PYTHONPATH", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV",
                      *script_limits.VARIABLES)

LaunchedKeeper = tuple[subprocess.Popen[bytes], Connection]


def default_isolation() -> str:
    """fork where it is available and safe; spawn on Windows and macOS (and wherever fork is missing)."""
    chosen = os.environ.get("NEXUS_IFC_ISOLATION", "").strip().lower()
    if chosen in ISOLATIONS:
        return chosen
    return "fork" if fork_is_safe() else "spawn"


def fork_is_safe() -> bool:
    return hasattr(os, "fork") and sys.platform not in ("darwin", "win32", "cygwin")


def default_keeper_launch() -> str:
    """How the keeper process is started: "exec" (POSIX) or "multiprocessing" (Windows)."""
    return "exec" if os.name == "posix" else "multiprocessing"


def keeper_environment() -> dict[str, str]:
    """The keeper's whole environment: what Python needs, this package on its path, no native thread pools."""
    env = {name: os.environ[name] for name in KEEPER_ENVIRONMENT if name in os.environ}
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    # The keeper forks: native thread pools (OpenBLAS via numpy) must not exist in it.
    env.update({name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")})
    return env


def exec_keeper(model_path: Path, save_path: Path, hold_timeout_s: float, isolation: str | None,
                expect_signature: tuple[int, ...] | None = None) -> LaunchedKeeper:
    """POSIX: a fresh interpreter with exactly keeper_environment(), its end of a socket pair passed as an fd.
    Returns at once; the keeper's first message on the connection says whether it opened the model.
    `isolation` None: the keeper's default (default_isolation, which the executor uses too)."""
    ours, theirs = socket.socketpair()
    successor = ["--expect-signature", ",".join(map(str, expect_signature))] if expect_signature else []
    command = [sys.executable, "-m", "ifc_host.keeper", "--fd", str(theirs.fileno()),
               "--hold-timeout", repr(hold_timeout_s), *(["--isolation", isolation] if isolation else []), *successor,
               str(model_path), str(save_path)]
    try:
        proc = subprocess.Popen(command, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                env=keeper_environment(), start_new_session=True)
    finally:
        theirs.close()
    return proc, Connection(ours.detach())


def start_early(model: str, out: str | None, isolation: str | None) -> LaunchedKeeper | None:
    """The host's keeper, started before the launcher imports the rest of the host (see the module's doc);
    None where it is started the usual way (Windows, or a path the executor will refuse with its own words)."""
    if default_keeper_launch() != "exec" or (isolation is not None and isolation not in ISOLATIONS):
        return None
    model_path = Path(model).resolve()
    save_path = Path(out).resolve() if out else model_path
    if not model_path.is_file() or not save_path.parent.is_dir():
        return None
    try:
        return exec_keeper(model_path, save_path, DEFAULT_HOLD_TIMEOUT_S, isolation)
    except OSError:
        return None
