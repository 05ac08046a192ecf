"""A command whose standard output is a protocol (`--json` lines) takes it for its own writer.

Whatever else would write to standard output meanwhile (a note an ifcopenshell module prints on import
while a thread builds the API index, a library's chatter, native code) must land on stderr, not in the
stream. That is done once, on the main thread, before any thread starts, at the file-descriptor level:
descriptor 1 is pointed at stderr and the command writes through a duplicate of the original. `sys.stdout`
itself is never replaced: replacing it from a thread while another thread is inside `print()` frees the
object that print is writing to (a segfault in every CPython from 3.6 to 3.13).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

STDOUT_FD, STDERR_FD = 1, 2


def _backed_by_stdout_fd(stream: TextIO) -> bool:
    try:
        return stream.fileno() == STDOUT_FD
    except (AttributeError, OSError, ValueError):  # an in-memory stream (a test's capture), a closed one
        return False


@contextmanager
def protocol_stdout() -> Iterator[TextIO]:
    """The command's own standard output, for the lines it prints; while inside, descriptor 1 (what
    `print()` and native code write to) goes to stderr. Restored on exit."""
    stream = sys.stdout
    if not _backed_by_stdout_fd(stream):  # an in-process caller's capture, say: write to it as it is
        yield stream
        return
    stream.flush()
    wire = os.dup(STDOUT_FD)  # not inheritable: the IFC host and scripts never get the protocol's pipe
    try:
        os.dup2(STDERR_FD, STDOUT_FD)
    except OSError:
        os.close(wire)
        yield stream
        return
    out = open(wire, "w", encoding=stream.encoding, errors=stream.errors, buffering=1, closefd=False)  # noqa: SIM115
    try:
        yield out
    finally:
        try:
            out.close()  # flushes; the descriptor stays open (closefd=False) until restored below
        except OSError:  # the reader went away: nothing more to say to it
            pass
        try:
            stream.flush()
        except OSError:
            pass
        os.dup2(wire, STDOUT_FD)
        os.close(wire)
