"""Inside the read server (fork isolation, see read_server.py): a confined process holding the committed model
that gives every read-only script a fresh child process of its own.

The server is made as any script's process is (process_tree.enter_own_tree: supervisor, the PID namespace's
reaper, then this process, confined by sandbox.apply) and then never runs a script itself. It forks one child
ahead; that child waits for its job on the server's socket, which brings the job and the read's own
descriptors (its pipe to the keeper, its output files), closes the socket and every other descriptor, takes a
fresh IPC namespace, its own empty scratch folder and a Landlock domain nested in the server's
(sandbox.confine_read), runs the script, kills what the script started and sends its result. Once the child
has exited the server kills everything else in its namespace, removes the child's scratch folder, tells the
keeper how the child ended, and forks the next one. A read therefore finds a process forked and waiting, and
no fork of the keeper sits on its path.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import socket
import stat
import sys
from pathlib import Path
from typing import Any, NoReturn

import ifcopenshell

from ifc_host import limits as script_limits
from ifc_host import process_tree, sandbox
from ifc_host.child import capture_output, reset_signals, run_job
from ifc_host.pipes import send_message
from ifc_host.refs import LoadedRef

MAX_JOB_BYTES = 1 << 17  # a bigger job (a very long script) goes to a spare instead (read_server.JobTooBig)
READ_FDS = ("to_keeper", "stdout", "epilogue", "crash")  # the descriptors each job brings, in this order


def server_main(model: ifcopenshell.file, scratch: Path, sock_fd: int, refs: list[LoadedRef]) -> NoReturn:
    """Entry right after the keeper's fork: confine, say ready, serve reads until the keeper goes away."""
    code = 70
    try:
        limits = script_limits.from_environment()  # before the environment is scrubbed
        tree = process_tree.enter_own_tree(scratch, [sock_fd])  # from here on: the server's process
        reset_signals()
        quiet = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):  # the keeper's output is not the server's, nor any read's
            os.dup2(quiet, fd)
        os.close(quiet)
        report = sandbox.apply(scratch, tree, limits)
        os.close(tree.note_fd)  # the CPU limit is each child's own, set when its job arrives
        server = socket.socket(fileno=sock_fd)
        _send(server, {"kind": "ready", "sandbox": report.as_dict(), "pid": tree.pid})
        _serve(model, Path(scratch).resolve(), server, tree, limits, refs)
        code = 0
    except BaseException:  # noqa: B036 - nothing may escape a forked process
        code = 70
    finally:
        os._exit(code)


def _send(server: socket.socket, message: dict[str, Any]) -> None:
    server.send(json.dumps(message).encode("utf-8"))


def _serve(model: ifcopenshell.file, scratch: Path, server: socket.socket, tree: process_tree.Tree,
           limits: script_limits.ScriptLimits, refs: list[LoadedRef]) -> None:
    """Fork a child, let it take one job, clean up after it; again, until the keeper closes the socket."""
    number = 0
    while True:
        number += 1
        own = scratch / f"read-{number}"
        own.mkdir(mode=0o700)
        child = os.fork()
        if child == 0:
            _child(model, own, server, limits, refs)
        while True:
            try:
                _, status, usage = os.wait4(child, 0)
                break
            except InterruptedError:
                continue
        process_tree.end_descendants(tree)  # whatever the read left, in this namespace: killed and reaped
        clean = _removed(own)
        try:
            _send(server, {"kind": "done", "exit": os.waitstatus_to_exitcode(status),
                           "cpu_s": usage.ru_utime + usage.ru_stime, "clean": clean})
        except OSError:
            return  # the keeper is gone
        if not clean:
            return  # the keeper sees the socket close and makes a new server


def _removed(folder: Path) -> bool:
    """The child's scratch folder and all it left there gone (modes it changed are put back to remove it)."""
    def writable_again(function: Any, path: str, _info: Any) -> None:
        parent = os.path.dirname(path)
        for target in (parent, path):
            try:
                os.chmod(target, stat.S_IRWXU, follow_symlinks=False)
            except (OSError, NotImplementedError):
                pass
        function(path)

    try:
        shutil.rmtree(folder, onerror=writable_again)
    except OSError:
        pass
    return not os.path.lexists(folder)


def _until_read(to_keeper: int) -> None:
    """Exit only once the keeper has closed its end of the pipe (after its reply): tearing this process down,
    and the server's fork of the next one, then do not compete with the reply for the machine's cores."""
    poller = select.poll()
    poller.register(to_keeper, select.POLLERR)
    while True:
        try:
            poller.poll()
            return
        except InterruptedError:
            continue


def _child(model: ifcopenshell.file, own: Path, server: socket.socket, limits: script_limits.ScriptLimits,
           refs: list[LoadedRef]) -> NoReturn:
    """One read's process. Everything that needs no job is done before it arrives, so a read finds it
    confined and waiting; the script runs only once nothing but this read's own descriptors is held."""
    code = 70
    try:
        process_tree.close_all_but({0, 1, 2, server.fileno()})
        libc = process_tree.load_libc()
        process_tree.become_subreaper(libc)
        process_tree.own_ipc_namespace(libc)
        sandbox.confine_read(own)
        try:
            data, fds, _flags, _address = socket.recv_fds(server, MAX_JOB_BYTES, len(READ_FDS),
                                                           socket.MSG_CMSG_CLOEXEC)
        except OSError:
            data, fds = b"", []
        server.close()
        if not data or len(fds) != len(READ_FDS):
            code = 0  # the keeper closed the socket (shutting down): nothing to run
            return
        channel = dict(zip(READ_FDS, fds, strict=True))
        job = json.loads(data)
        capture_output(channel["stdout"], channel["crash"])
        script_limits.apply_cpu(limits, float(job.get("timeout_s") or 0))
        result, _recorder = run_job(model, job, channel["epilogue"], refs)
        process_tree.end_own_descendants()
        send_message(channel["to_keeper"], {"kind": "result", "result": script_limits.explain(result, limits)})
        _until_read(channel["to_keeper"])
        code = 0
    except BaseException:  # noqa: B036 - the keeper reads a child that sent nothing as a crash of the script
        code = 70
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
