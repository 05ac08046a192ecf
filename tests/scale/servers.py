"""Throwaway Redis and PostgreSQL servers from Debian's packages, on random ports, in temporary folders."""
from __future__ import annotations

import getpass
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, process: subprocess.Popen, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"{what} did not listen on port {port} within {timeout} s")


class RedisServer:
    def __init__(self, folder: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (scripts/test installs Debian's redis-server)")
        self.binary, self.folder, self.port = binary, folder, free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.process, "redis-server")
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


@contextmanager
def redis_server(folder: Path) -> Iterator[RedisServer]:
    server = RedisServer(folder).start()
    try:
        yield server
    finally:
        server.stop()


def postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed (scripts/test installs Debian's postgresql)")
    return Path(found[-1]).parent


def _as_postgres_user(folder: Path) -> tuple[dict, str]:
    """PostgreSQL refuses to run as root: when the tests are root, run it as Debian's postgres user."""
    if os.geteuid() != 0:
        return {}, getpass.getuser()
    entry = pwd.getpwnam("postgres")
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid)

    def demote() -> None:
        os.setgid(entry.pw_gid)
        os.setuid(entry.pw_uid)

    return {"preexec_fn": demote}, "postgres"


@contextmanager
def postgres_server() -> Iterator[str]:
    """A PostgreSQL cluster initialised into a temporary folder (its own, reachable by the postgres user
    when the tests run as root), listening on a random port; yields its URL."""
    bin_dir, port = postgres_bin(), free_port()
    folder = Path(tempfile.mkdtemp(prefix="nexus-pg-"))
    folder.chmod(0o755)
    demote, _ = _as_postgres_user(folder)
    data = folder / "pgdata"
    subprocess.run([str(bin_dir / "initdb"), "-D", str(data), "-U", "nexus", "--auth=trust", "-E", "UTF8"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **demote)
    process = subprocess.Popen([str(bin_dir / "postgres"), "-D", str(data), "-p", str(port), "-h", "127.0.0.1",
                                "-k", str(folder), "-c", "fsync=off", "-c", "max_connections=300"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **demote)
    try:
        wait_port(port, process, "postgres")
        url = f"postgresql://nexus@127.0.0.1:{port}/postgres"
        _wait_ready(url, process)
        yield url
    finally:
        process.send_signal(signal.SIGINT)  # fast shutdown: do not wait for clients to disconnect
        process.wait(30)
        shutil.rmtree(folder, ignore_errors=True)


def _wait_ready(url: str, process: subprocess.Popen, timeout: float = 60) -> None:
    """The port opens before the server accepts sessions ("the database system is starting up")."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def fresh_database(server_url: str) -> str:
    """A new empty database on the server; its URL."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:16]
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server_url.rsplit("/", 1)[0] + "/" + name
