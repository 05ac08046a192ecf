"""Costly bodies built in the background by a render server, for the views to come.

A view with a budget draws a body of many faces (six Revit windows of 87,000 faces each: 7.8 s of the kernel) as
its stand-in when building it does not fit (render_bodies.py). A render server (render_child.py ``--serve``) then
hands those bodies to a *build*: a fork of the server (the open model is shared, copy-on-write, nothing is parsed
again) that builds them with the geometry kernel, stores each mesh in the model's mesh cache (render_mesh_cache.py)
and reports its element id on a pipe. A fork, not a thread, so that a kernel crash on one of them costs the build,
not the server, and the kernel's work never holds the server's interpreter.

A view of the same model asked meanwhile never builds a body a build is making: it waits for the build up to its
own budget and draws what it reported (read from the cache), the rest as their stand-ins, counted in
``Bodies.later`` (its words to the model say a later view draws them in full). A build that ended without
reporting some of its bodies (the kernel made nothing, a crash, a full cache) leaves them to the views, which
build them themselves as before and never hand them to a build again. A build stops when its server goes.
"""
from __future__ import annotations

import os
import select
import signal
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ifc_host import process_tree
from ifc_host.render_mesh_cache import MeshCache
from ifc_host.render_scene import Mesh

# Where a fork of the render server is safe (the rule of isolation.py's fork isolation): elsewhere no build runs and
# a view draws the costly bodies that do not fit its budget as stand-ins, a later view building them itself.
AVAILABLE = hasattr(os, "fork") and sys.platform not in ("darwin", "win32", "cygwin")


@dataclass
class _Build:
    pid: int
    reports: int  # the read end of the build's pipe
    ids: set[int]
    done: set[int] = field(default_factory=set)
    buffer: bytes = b""


class BackgroundBuilds:
    """The builds under way for one open model (render_models.OpenModel), and what they have reported."""

    def __init__(self) -> None:
        self._builds: list[_Build] = []
        self.reported: set[int] = set()  # bodies a build stored in the mesh cache
        self.failed: set[int] = set()  # a build ended without them: the views build them, never a build again

    def pending(self) -> set[int]:
        """Bodies a build is making and has not reported yet."""
        self._read(0.0)
        return {i for build in self._builds for i in build.ids - build.done}

    def start(self, build: Callable[[], Iterable[Mesh]], ids: set[int], cache_dir: str) -> None:
        """Fork a build of these bodies (``build`` yields their meshes, in the fork) into the mesh cache."""
        ids = ids - self.pending() - self.reported - self.failed
        if not ids:
            return
        reports, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the build: never returns into the server's code
            code = 1
            try:
                os.close(reports)
                _detach(writer)
                cache = MeshCache(cache_dir)
                for mesh in build():
                    if mesh.element_id in ids and cache.store([mesh]):
                        os.write(writer, f"{mesh.element_id}\n".encode("ascii"))
                code = 0
            finally:
                os._exit(code)
        os.close(writer)
        self._builds.append(_Build(pid, reports, set(ids)))

    def collect(self, wanted: set[int], until: float | None) -> set[int]:
        """Wait until the builds have reported every wanted body, or the wall clock passes ``until`` (None: no
        limit), or the builds ended; the wanted bodies reported so far (their meshes are in the cache)."""
        while True:
            self._read(0.0)
            waiting = {i for build in self._builds for i in build.ids - build.done} & wanted
            left = None if until is None else until - time.time()
            if not waiting or (left is not None and left <= 0):
                break
            self._read(left)
        return self.reported & wanted

    def close(self) -> None:
        """Stop every build (the model was dropped)."""
        for build in self._builds:
            _stop(build)
        self._builds = []

    def _read(self, timeout: float | None) -> None:
        """Take what the builds reported within ``timeout`` seconds (None: until one reports or ends)."""
        fds = {build.reports: build for build in self._builds}
        if not fds:
            return
        ready, _, _ = select.select(list(fds), [], [], None if timeout is None else max(0.0, timeout))
        for fd in ready:
            build = fds[fd]
            chunk = os.read(fd, 1 << 16)
            if chunk:
                build.buffer += chunk
                *lines, build.buffer = build.buffer.split(b"\n")
                reported = {int(line) for line in lines if line.strip().isdigit()}
                build.done |= reported
                self.reported |= reported
                continue
            os.close(fd)  # the build ended: what it did not report goes back to the views
            _reap(build.pid)
            self.failed |= build.ids - build.done
            self._builds.remove(build)


def _detach(keep: int) -> None:
    """In the build: no descriptor of the server's but the pipe and stderr (the parent process reads the server's
    stdout to its end, and must see it end when the server goes), and stop when the server goes."""
    process_tree.die_with_parent(process_tree.load_libc(), os.getppid())
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    process_tree.close_all_but({0, 1, 2, keep})


def _stop(build: _Build) -> None:
    try:
        os.kill(build.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.close(build.reports)
    except OSError:
        pass
    _reap(build.pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
