"""What one script may use (issue 23 item 5), applied in the script's process at confinement, and how a
script stopped by one is told ("stopped: memory limit 4096 MB reached").

- memory: `NEXUS_SCRIPT_MEMORY_MB` (default 4096), the script process's address space (RLIMIT_AS: the model
  it holds included, since the process is a copy of the keeper or a spare that loaded it);
- CPU time: `NEXUS_SCRIPT_CPU_S`, default the script's timeout times the machine's cores plus 60 s for the
  host's own work in that process after the script (RLIMIT_CPU, set when the script arrives): a backstop behind the keeper's wall-clock deadline that holds even if the keeper
  cannot act;
- scratch: `NEXUS_SCRIPT_SCRATCH_MB` (default 1024): the scratch folder is a tmpfs of that size in the
  script's own mount namespace (the folder's total), and RLIMIT_FSIZE bounds any one file it writes (where no
  mount namespace can be made, only the latter holds);
- processes: `NEXUS_SCRIPT_PROCESSES` (default 256, threads included): RLIMIT_NPROC, counted by the kernel per
  user namespace, so per script. Without a user namespace it counts every process of the user: it is then set
  to what the user runs already plus this many.
"""
from __future__ import annotations

import ctypes
import errno
import math
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MEMORY_VARIABLE = "NEXUS_SCRIPT_MEMORY_MB"
CPU_VARIABLE = "NEXUS_SCRIPT_CPU_S"
SCRATCH_VARIABLE = "NEXUS_SCRIPT_SCRATCH_MB"
PROCESSES_VARIABLE = "NEXUS_SCRIPT_PROCESSES"
VARIABLES = (MEMORY_VARIABLE, CPU_VARIABLE, SCRATCH_VARIABLE, PROCESSES_VARIABLE)
DEFAULT_MEMORY_MB = 4096
DEFAULT_SCRATCH_MB = 1024
DEFAULT_PROCESSES = 256
HOST_WORK_CPU_S = 60  # the same process serialises the model it sends for commit after the script
_M_ARENA_MAX = -8
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 2, 4, 1 << 14, 1 << 18


class BadLimit(ValueError):
    pass


@dataclass(frozen=True)
class ScriptLimits:
    memory_mb: int = DEFAULT_MEMORY_MB
    scratch_mb: int = DEFAULT_SCRATCH_MB
    processes: int = DEFAULT_PROCESSES
    cpu_s: int | None = None  # None: the script's timeout times the cores

    def cpu_limit_s(self, timeout_s: float) -> int:
        if self.cpu_s is not None:
            return self.cpu_s
        return math.ceil(timeout_s) * max(1, os.cpu_count() or 1) + HOST_WORK_CPU_S

    def describe(self, scratch_bounded: bool, processes_counted_by: str) -> str:
        scratch = f"scratch {self.scratch_mb} MB" + (" (tmpfs)" if scratch_bounded else " per file only")
        cpu = f"CPU {self.cpu_s} s" if self.cpu_s is not None else "CPU time = timeout x cores + 60 s"
        return f"memory {self.memory_mb} MB, {cpu}, {scratch}, {self.processes} processes ({processes_counted_by})"


def _positive(name: str, default: int | None) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadLimit(f"{name}={text!r} is not a whole number") from None
    if value <= 0:
        raise BadLimit(f"{name}={text!r} must be above 0")
    return value


def from_environment() -> ScriptLimits:
    """The limits the environment sets (BadLimit names the variable that is wrong)."""
    return ScriptLimits(memory_mb=_positive(MEMORY_VARIABLE, DEFAULT_MEMORY_MB) or DEFAULT_MEMORY_MB,
                        scratch_mb=_positive(SCRATCH_VARIABLE, DEFAULT_SCRATCH_MB) or DEFAULT_SCRATCH_MB,
                        processes=_positive(PROCESSES_VARIABLE, DEFAULT_PROCESSES) or DEFAULT_PROCESSES,
                        cpu_s=_positive(CPU_VARIABLE, None))


def mount_scratch(libc: ctypes.CDLL | None, scratch: Path, limits: ScriptLimits) -> bool:
    """A tmpfs of the scratch size over the (empty) scratch folder, in our own mount namespace."""
    if libc is None:
        return False
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return False  # never let our mount propagate to the host's namespace
    options = f"size={limits.scratch_mb}m,mode=0700,uid={os.getuid()},gid={os.getgid()}".encode()
    return libc.mount(b"tmpfs", os.fsencode(scratch), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) == 0


def apply(libc: ctypes.CDLL | None, limits: ScriptLimits, user_namespace: bool) -> None:
    """The limits that hold from confinement on (the script cannot raise a hard limit)."""
    if libc is not None:
        try:
            libc.mallopt(ctypes.c_int(_M_ARENA_MAX), ctypes.c_int(2))  # arenas reserve address space per thread
        except AttributeError:
            pass
    memory = limits.memory_mb * 1024 * 1024
    _set("RLIMIT_AS", memory)
    _set("RLIMIT_FSIZE", limits.scratch_mb * 1024 * 1024)
    _set("RLIMIT_CORE", 0)
    if not hasattr(os, "getuid"):
        return
    if user_namespace:
        _set("RLIMIT_NPROC", limits.processes)
        return
    running = _user_processes()
    if running is not None:  # without /proc the count is unknown: setting it could starve the user
        _set("RLIMIT_NPROC", running + limits.processes)


def apply_cpu(limits: ScriptLimits, timeout_s: float) -> int:
    """Once the script's timeout is known: soft = the limit (SIGXCPU), hard one second later (SIGKILL)."""
    seconds = limits.cpu_limit_s(timeout_s)
    times = os.times()
    spent = math.ceil(times.user + times.system)
    _set("RLIMIT_CPU", spent + seconds, spent + seconds + 1)
    return spent + seconds


def _set(which: str, soft: int, hard: int | None = None) -> None:
    try:
        import resource  # POSIX only
    except ImportError:
        return
    limit = getattr(resource, which, None)
    if limit is None:
        return
    hard = soft if hard is None else hard
    _, current_hard = resource.getrlimit(limit)
    if current_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    try:
        resource.setrlimit(limit, (soft, hard))
    except (ValueError, OSError):
        pass


def _user_processes() -> int | None:
    """Tasks (threads included) this user runs now: what RLIMIT_NPROC counts outside a user namespace."""
    uid, count = os.getuid(), 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


def explain(result: dict[str, Any], limits: ScriptLimits) -> dict[str, Any]:
    """A script error caused by a limit, said as the limit (the script's own error stays in the traceback)."""
    error = result.get("error")
    if result.get("ok") or not error:
        return result
    stopped = _limit_of(error, limits)
    if stopped is None:
        return result
    return {**result, "error": {**error, "type": "LimitReached", "message": (
        f"stopped: {stopped} reached ({error['type']}: {error['message']}); the model is unchanged")}}


def _limit_of(error: dict[str, Any], limits: ScriptLimits) -> str | None:
    kind, message = error.get("type"), str(error.get("message", ""))
    if kind == "MemoryError":
        return f"memory limit {limits.memory_mb} MB"
    if kind in ("OSError", "IOError") and (f"[Errno {errno.EFBIG}]" in message or f"[Errno {errno.ENOSPC}]" in message):
        return f"scratch limit {limits.scratch_mb} MB"
    if kind == "BlockingIOError" and f"[Errno {errno.EAGAIN}]" in message:
        return f"process limit {limits.processes}"
    if kind == "RuntimeError" and "can't start new thread" in message:
        return f"process limit {limits.processes}"
    return None


def describe_signal(signum: int, limits: ScriptLimits, timeout_s: float | None) -> str | None:
    """The limit a death by `signum` means, if any."""
    if signum == getattr(signal, "SIGXCPU", None):
        seconds = f" {limits.cpu_limit_s(timeout_s)} s" if timeout_s else ""
        return f"stopped: CPU time limit{seconds} reached"
    if signum == getattr(signal, "SIGXFSZ", None):
        return f"stopped: scratch limit {limits.scratch_mb} MB reached (one file grew past it)"
    return None


def describe_exit(signum: int | None, status: int | None, limits: ScriptLimits | None = None,
                  timeout_s: float | None = None) -> str:
    """How a script's process ended unasked, in the caller's words (a limit named as the limit)."""
    if signum is not None:
        stopped = describe_signal(signum, limits, timeout_s) if limits is not None else None
        if stopped:
            return stopped
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return f"the script crashed the process running it ({name})"
    return f"the script ended the process running it (exit status {status})"
