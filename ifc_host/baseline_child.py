"""The committed model's own records (its DATA section as IfcOpenShell writes it), serialised ahead of the
first commit by a forked child of the keeper, so that commit does not serialise the whole model itself.

A keeper that opened a file another program wrote has no copy of the records a commit compares against
(model_diff.py): a successor keeper reads them from the file its predecessor wrote, the first keeper would
have to call `to_string` on the committed model inside its first commit, as long as the commit's own write.
Instead, once the keeper is idle, it forks a child (POSIX only; the keeper is single-threaded, so forking it
is safe) that serialises its copy of the model at a lower priority into an anonymous file (no name anyone
could open; the descriptor is closed in every script's process: the caller adds it to the fork strategy's
private fds), the records first, their length last. Only keeper code runs in that child, so the records are
the keeper's own. A commit that comes before the child is done waits for it (it started first); one that
finds anything unexpected serialises the model itself, as before.
"""
from __future__ import annotations

import os
import signal
import struct
import tempfile

import ifcopenshell

from ifc_host.model_diff import data_section

_LENGTH = struct.Struct("<Q")
_MAX_FD = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024


class BaselineChild:
    """One forked serialisation of `model`'s records; `take()` gives them if it is done (else None)."""

    def __init__(self, model: ifcopenshell.file) -> None:
        self.fd = _anonymous_file()
        pid = os.fork()
        if pid == 0:  # the child: serialise, write, end without the interpreter's teardown
            status = 1
            try:  # it keeps no other descriptor of the keeper's open (its channel, the scripts' pipes)
                os.closerange(3, self.fd)
                os.closerange(self.fd + 1, _MAX_FD)
                os.nice(5)  # behind the keeper's own work and the scripts' on a busy machine
                records = data_section(model.to_string().encode("utf-8"))
                _write_at(self.fd, records, _LENGTH.size)
                _write_at(self.fd, _LENGTH.pack(len(records)), 0)  # last: the records are all there
                status = 0
            finally:
                os._exit(status)
        self.pid: int | None = pid

    def take(self) -> bytes | None:
        """The records, once the child has written them all (waiting for it if it is not done: it started
        first, so it ends before a serialisation started now would); None if it failed."""
        records = self._read()
        if records is None and self.reap(block=True):
            records = self._read()
        if records is None:
            self.discard()
        else:
            self._close()
        return records

    def _read(self) -> bytes | None:
        try:
            head = os.pread(self.fd, _LENGTH.size, 0)
            if len(head) != _LENGTH.size or not _LENGTH.unpack(head)[0]:
                return None  # not done yet
            length = _LENGTH.unpack(head)[0]
            records = os.pread(self.fd, length, _LENGTH.size)
        except OSError:
            return None
        return records if len(records) == length else None

    def discard(self) -> None:
        """Not needed any more (the committed model changed, or the keeper stops): stop the child."""
        self._close()
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.reap(block=True)

    def reap(self, block: bool) -> bool:
        """Collect the ended child (True once it is, or there is none)."""
        if self.pid is None:
            return True
        try:
            pid, _ = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            pid = self.pid
        if pid == 0:
            return False
        self.pid = None
        return True

    def _close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def serialisable_ahead() -> bool:
    return hasattr(os, "fork")


def _anonymous_file() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("nexus-keeper-records", os.MFD_CLOEXEC)
    handle = tempfile.TemporaryFile()  # unlinked at once on POSIX
    fd = os.dup(handle.fileno())
    handle.close()
    return fd


def _write_at(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written
