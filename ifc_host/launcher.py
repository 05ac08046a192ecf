"""Starting an IFC host: its command line (`nexus ifc-host`, `python -m ifc_host.launcher`) and, for the
commands that run an orchestrator too (`nexus run`, `nexus demo`, `nexus mcp --ifc`, `nexus eval`), the host
as a separate child process.

The host's token never appears on a command line (every local process can read `/proc/<pid>/cmdline`): it
comes from `NEXUS_TOKEN` or `--token-file PATH` and is removed from the environment at once. A host started
by `start_host_process` gets a scrubbed environment (no API keys, no database URL, no server settings): only
what Python needs; its token arrives on its standard input, so it is in no environment block either.

Exit status of `nexus ifc-host`: 0 when stopped (SIGTERM, Ctrl-C); 2 for an unusable model or command line;
3 when the server refuses the token (at connection, or revoked while connected: close code 4401); 4 when
another connection took this host id over (close code 4409: a second host for the same id; this one stops
rather than take the id back). Any other drop is retried with capped backoff and jitter (see runtime.py).
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

import ifc_host
from ifc_host import limits as script_limits
from ifc_host.keeper_process import ISOLATIONS, start_early

TOKEN_VARIABLE = "NEXUS_TOKEN"
EXIT_BAD_INPUT = 2
EXIT_TOKEN_REFUSED = 3
EXIT_HOST_ID_TAKEN = 4
STOP_TIMEOUT_S = 30.0
_PR_SET_DUMPABLE = 4
_HOST_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT",
                     "WINDIR", "PYTHONPATH", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV",
                     "NEXUS_IFC_ISOLATION", "XDG_RUNTIME_DIR", *script_limits.VARIABLES)


class TokenMissing(ValueError):
    pass


class _RefuseTokenOnArgv(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, *_: object, **__: object) -> None:
        parser.error(f"--token is not accepted: a command line is readable by every process on this machine; "
                     f"set {TOKEN_VARIABLE} or pass --token-file PATH")


def add_host_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.allow_abbrev = False  # `--token` must not be taken for `--token-file`
    parser.add_argument("--token", nargs="?", action=_RefuseTokenOnArgv, help=argparse.SUPPRESS)
    parser.add_argument("model", help="the IFC file to serve")
    parser.add_argument("--server", required=True, help="orchestrator URL, e.g. http://127.0.0.1:8765")
    parser.add_argument("--token-file", help="read the host's token from this file ('-': standard input); "
                                             f"otherwise it comes from ${TOKEN_VARIABLE}")
    parser.add_argument("--out", help="save commits here instead of back to MODEL")
    parser.add_argument("--with-parent", action="store_true", help=argparse.SUPPRESS)  # see _stop_with_parent
    add_isolation_argument(parser)
    return parser


def add_isolation_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--isolation", choices=ISOLATIONS, help=(
        "how each script gets its own process: fork (Linux default) or spawn (a warm spare process; the default "
        "on Windows and macOS)"))


def read_token(token_file: str | None) -> str:
    """The token from --token-file or $NEXUS_TOKEN; the variable is removed from the environment either way."""
    from_environment = os.environ.pop(TOKEN_VARIABLE, None)
    if token_file:
        try:
            # From standard input, only the first line: a parent may keep the pipe open (see _stop_with_parent).
            text = sys.stdin.readline() if token_file == "-" else Path(token_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise TokenMissing(f"cannot read the token file {token_file}: {exc.strerror or exc}") from exc
        token = text.strip()
        if not token:
            raise TokenMissing(f"the token file {token_file} is empty")
        return token
    if from_environment and from_environment.strip():
        return from_environment.strip()
    raise TokenMissing(f"no token: set {TOKEN_VARIABLE} or pass --token-file PATH (never on the command line, "
                       "where every process on this machine could read it)")


def keep_memory_private() -> None:
    """Linux: other processes of the same user may not read this process's memory or /proc/<pid>/environ."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def serve_from_arguments(args: argparse.Namespace) -> int:
    """Run a host until interrupted: the body of `nexus ifc-host`. Returns an exit status."""
    keep_memory_private()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        token = read_token(args.token_file)
    except TokenMissing as exc:
        print(f"nexus: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    # The keeper imports IfcOpenShell and opens the model while this process imports the rest of the host.
    keeper = start_early(args.model, args.out, args.isolation)
    from ifc_host.file_identity import BadModelError
    from ifc_host.runtime import HostRejected, HostReplaced, run_host
    stop = threading.Event()
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.with_parent:
        _stop_with_parent(stop)
    try:
        run_host(args.model, args.server, token, stop, out_path=args.out, isolation=args.isolation, keeper=keeper)
    except HostRejected as exc:
        print(f"nexus: {exc}", file=sys.stderr)
        return EXIT_TOKEN_REFUSED
    except HostReplaced as exc:
        print(f"nexus: {exc}", file=sys.stderr)
        return EXIT_HOST_ID_TAKEN
    except (BadModelError, ValueError) as exc:
        print(f"nexus: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        pass
    return 0


def _stop_with_parent(stop: threading.Event) -> None:
    """A host started by `nexus run`, `mcp --ifc`, `eval` or `batch` (start_host_process) lives as long as the
    process that started it: that process holds our standard input open and the pipe closes when it exits,
    however it ends (an MCP client killing `nexus mcp`, kill -9, a crash). Without this the host would keep
    its model in memory and try to reconnect to a server that is gone, forever. Works the same on Windows."""
    descriptor = sys.stdin.fileno()

    def watch() -> None:
        # os.read, not sys.stdin: a daemon thread blocked inside a buffered reader's lock aborts the
        # interpreter's shutdown ("could not acquire lock for <stdin>") when the host exits on its own.
        with contextlib.suppress(OSError, ValueError):
            while os.read(descriptor, 4096):
                pass
        if not stop.is_set():
            logging.getLogger(__name__).warning("the process that started this host has ended; stopping")
            stop.set()

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def host_environment() -> dict[str, str]:
    env = {name: os.environ[name] for name in _HOST_ENVIRONMENT if name in os.environ}
    package_root = str(Path(ifc_host.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return env


class HostProcess:
    """An IFC host in its own process (see start_host_process). Its log goes to `log_path`."""

    def __init__(self, process: subprocess.Popen[bytes], log_path: Path, log_file: IO[bytes] | None) -> None:
        self.process = process
        self.log_path = log_path
        self._log_file = log_file

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Ask the host to stop (it discards anything held and closes its model), then kill it if need be."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


def start_host_process(model_path: str | os.PathLike[str], server_url: str, token: str,
                       out_path: str | os.PathLike[str] | None = None, isolation: str | None = None,
                       log_path: str | os.PathLike[str] | None = None) -> HostProcess:
    """Start `python -m ifc_host.launcher MODEL --server URL --token-file - --with-parent` with a scrubbed
    environment, writing the token to its standard input, which stays open for the host's life (the host
    stops when it closes: when this process ends, however it ends). Returns at once; the host connects on its own (see the
    orchestrator's host registry for when it has). Its log is appended to `log_path` (a temporary file by
    default)."""
    if isolation is not None and isolation not in ISOLATIONS:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATIONS)}, not {isolation!r}")
    if log_path is None:
        handle, name = tempfile.mkstemp(prefix="nexus-ifc-host-", suffix=".log")
        os.close(handle)
        log_path = name
    log = Path(log_path)
    log_file = log.open("ab")
    command = [sys.executable, "-m", "ifc_host.launcher", str(model_path), "--server", server_url,
               "--token-file", "-", "--with-parent", *(["--out", str(out_path)] if out_path else []),
               *(["--isolation", isolation] if isolation else [])]
    try:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=log_file, stderr=log_file,
                                   env=host_environment(), start_new_session=True)
    except BaseException:
        log_file.close()
        raise
    assert process.stdin is not None
    try:
        process.stdin.write(token.encode("utf-8") + b"\n")
        process.stdin.flush()
    except OSError:  # it died at once; its log says why
        pass
    return HostProcess(process, log, log_file)


def main(argv: list[str] | None = None) -> int:
    parser = add_host_arguments(argparse.ArgumentParser(
        prog="python -m ifc_host.launcher", description="connect an IFC host runtime to an orchestrator"))
    return serve_from_arguments(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
