"""No new sockets for a script: a seccomp-BPF filter, installed last in confinement (sandbox.apply).

Landlock and the private network namespace stop TCP, UDP and abstract Unix sockets, but not `connect()` to
a Unix socket *file* (a database's peer-authenticated socket, gunicorn's control socket, an ssh agent).
The filter makes these system calls fail with EPERM, for every address family:

- `socket`, `socketpair`: no new socket of any kind (a datagram socketpair could `sendto` a socket path);
- `connect`: nothing inherited gets connected either;
- `io_uring_setup`: io_uring creates sockets without the `socket` call;
- `pidfd_getfd`: no copying another process's sockets.

The only sockets a script holds are the ones it inherited before confinement: under `spawn`, the spare's
already connected pipe to the keeper. The filter knows x86_64 and aarch64; on any other architecture it is
not installed and the sandbox report says so. Calls from a foreign ABI (32-bit `int 0x80` or x32 on x86_64)
are refused outright, so they cannot slip past by number.
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1

_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_JGE_K = 0x35
_BPF_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | errno.EPERM

_OFFSET_NR, _OFFSET_ARCH = 0, 4
_X32_SYSCALL_BIT = 0x40000000


class _Arch:
    def __init__(self, audit_arch: int, seccomp_nr: int, blocked: dict[str, int], has_x32: bool) -> None:
        self.audit_arch, self.seccomp_nr, self.blocked, self.has_x32 = audit_arch, seccomp_nr, blocked, has_x32


# asm-generic numbers (aarch64) and x86_64's own table; io_uring_setup and pidfd_getfd are the same on both.
_ARCHES = {
    "x86_64": _Arch(0xC000003E, 317, {"socket": 41, "connect": 42, "socketpair": 53, "io_uring_setup": 425,
                                      "pidfd_getfd": 438}, has_x32=True),
    "aarch64": _Arch(0xC00000B7, 277, {"socket": 198, "socketpair": 199, "connect": 203, "io_uring_setup": 425,
                                       "pidfd_getfd": 438}, has_x32=False),
}
_ARCHES["amd64"] = _ARCHES["x86_64"]
_ARCHES["arm64"] = _ARCHES["aarch64"]

BLOCKED_CALLS = ("socket", "socketpair", "connect", "io_uring_setup", "pidfd_getfd")


def _instruction(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def filter_program(arch: _Arch) -> bytes:
    """The BPF program: foreign ABI -> EPERM; a blocked call -> EPERM; everything else allowed."""
    numbers = [arch.blocked[name] for name in BLOCKED_CALLS]
    body: list[tuple[int, int, int, int]] = []
    if arch.has_x32:
        body.append((_BPF_JGE_K, 0, 0, _X32_SYSCALL_BIT))  # jt patched to the deny below
    body.extend((_BPF_JEQ_K, 0, 0, nr) for nr in numbers)
    head = [(_BPF_LD_W_ABS, 0, 0, _OFFSET_ARCH), (_BPF_JEQ_K, 1, 0, arch.audit_arch),
            (_BPF_RET_K, 0, 0, _RET_EPERM), (_BPF_LD_W_ABS, 0, 0, _OFFSET_NR)]
    program = [*head]
    for index, (code, _jt, jf, k) in enumerate(body):
        to_deny = len(body) - index  # skip the remaining checks and the allow
        program.append((code, to_deny, jf, k))
    program.extend([(_BPF_RET_K, 0, 0, _RET_ALLOW), (_BPF_RET_K, 0, 0, _RET_EPERM)])
    return b"".join(_instruction(*ins) for ins in program)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def machine_arch() -> _Arch | None:
    return _ARCHES.get(platform.machine().lower())


def block_sockets(libc: ctypes.CDLL) -> str:
    """Install the filter on this process (all its threads where the kernel can); say what applied."""
    arch = machine_arch()
    if arch is None:
        return f"NOT restricted (the seccomp filter knows x86_64 and aarch64, not {platform.machine()})"
    program = filter_program(arch)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p).value)
    if libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                  ctypes.c_ulong(0)) != 0:
        return f"NOT restricted (no_new_privs refused: {os.strerror(ctypes.get_errno())})"
    done = libc.syscall(ctypes.c_long(arch.seccomp_nr), ctypes.c_uint(_SECCOMP_SET_MODE_FILTER),
                        ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog))
    if done != 0:
        done = libc.prctl(ctypes.c_int(_PR_SET_SECCOMP), ctypes.c_ulong(_SECCOMP_MODE_FILTER),
                          ctypes.cast(ctypes.byref(fprog), ctypes.c_void_p), ctypes.c_ulong(0), ctypes.c_ulong(0))
    if done != 0:
        return f"NOT restricted (seccomp refused: {os.strerror(ctypes.get_errno())})"
    return "none beyond its pipes to the host (seccomp: socket, socketpair, connect and io_uring refused)"
