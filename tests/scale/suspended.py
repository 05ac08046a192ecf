"""Many runs suspended at once, for the scale test and `bench/bench_scale.py suspended`.

Instances are separate processes (tests/scale/instance.py: gunicorn's gevent worker, or the embedded threaded
server), and so is the bare Flask SSE peer they are measured against (tests/scale/sse_peer.py). Every run's SSE stream is read by one selector thread here, so the reader's own cost does not grow a
thread per stream and does not skew the keepalive gaps it measures.
"""
from __future__ import annotations

import json
import os
import selectors
import socket
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.request import urlopen

from tests.scale.servers import free_port, wait_port

ROOT = Path(__file__).resolve().parents[2]
KEEPALIVE = b": keepalive"
SUSPENDED = b"event: ToolCall"


@dataclass
class Instance:
    url: str
    process: subprocess.Popen

    @property
    def server_pid(self) -> int:
        """The process that serves requests: gunicorn's (one) worker, else the instance process itself."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        return int(children[0]) if children else self.process.pid


def start_instance(stack: ExitStack, database: str, settings: dict[str, Any], gevent: bool = True,
                   env: dict[str, str] | None = None) -> Instance:
    port = free_port()
    command = [sys.executable, "-m", "tests.scale.instance", *(["--gevent"] if gevent else []), database, str(port),
               json.dumps(settings)]
    return _start(stack, command, port, "/api/me", env)


def start_peer(stack: ExitStack, keepalive_s: float) -> Instance:
    """The bare Flask SSE peer (tests/scale/sse_peer.py), one gevent worker like an instance."""
    port = free_port()
    return _start(stack, [sys.executable, "-m", "tests.scale.sse_peer", str(port), str(keepalive_s)], port, "/ready",
                  None)


def _start(stack: ExitStack, command: list[str], port: int, probe: str, env: dict[str, str] | None) -> Instance:
    process = subprocess.Popen(command, cwd=ROOT, env=env or dict(os.environ), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)

    def stop() -> None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    stack.callback(stop)
    wait_port(port, process, "instance", timeout=90)
    instance = Instance(f"http://127.0.0.1:{port}", process)
    deadline = time.monotonic() + 60
    while True:  # gunicorn's worker is forked, and loads the app, after the port opens
        try:
            if urlopen(instance.url + probe, timeout=5):
                break
        except HTTPError:  # 401: the app answers
            break
        except OSError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            raise TimeoutError("the instance did not answer")
        time.sleep(0.05)
    return instance


@dataclass
class Stream:
    started: float
    beats: list[float] = field(default_factory=list)  # when each keepalive frame arrived (monotonic)
    suspended: threading.Event = field(default_factory=threading.Event)
    failure: str | None = None
    tail: bytes = b""
    marker: bytes = SUSPENDED  # what sets `suspended` once it arrived


class Streams:
    """SSE streams of `POST /api/sessions/{id}/messages`, all read by one thread."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self.streams: list[Stream] = []
        self._stop = threading.Event()
        self._joining: list[tuple[socket.socket, Stream]] = []
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._read, name="sse-reader", daemon=True)
        self._thread.start()

    def open(self, url: str, token: str, session_id: str, text: str = "go") -> Stream:
        """A run's stream: the POST that starts it; `suspended` is set once its tool call is announced."""
        return self.open_path(url, f"/api/sessions/{session_id}/messages", {"text": text},
                              {"Authorization": f"Bearer {token}"}, SUSPENDED)

    def open_path(self, url: str, path: str, payload: dict[str, Any], headers: dict[str, str],
                  marker: bytes) -> Stream:
        """POST `payload` to `path` and read the SSE answer; `suspended` is set once `marker` arrived."""
        parts = urlsplit(url)
        body = json.dumps(payload).encode()
        extra = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        request = (f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n{extra}Content-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\nAccept: text/event-stream\r\n\r\n").encode() + body
        stream = Stream(time.monotonic(), marker=marker)
        sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        sock.sendall(request)
        sock.setblocking(False)
        with self._lock:
            self.streams.append(stream)
            self._joining.append((sock, stream))  # the reader registers it (a selector is not shared)
        self._wake_w.send(b"x")
        return stream

    def _read(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                joining, self._joining = self._joining, []
            for sock, stream in joining:
                self._selector.register(sock, selectors.EVENT_READ, stream)
            events = self._selector.select(timeout=0.2)
            now = time.monotonic()
            for key, _ in events:
                if key.data is None:
                    self._wake_r.recv(4096)
                    continue
                stream: Stream = key.data
                try:
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                except OSError as exc:
                    data, stream.failure = b"", f"{type(exc).__name__}: {exc}"
                if not data:
                    stream.failure = stream.failure or "the server closed the stream"
                    stream.suspended.set()
                    self._selector.unregister(key.fileobj)
                    key.fileobj.close()  # type: ignore[union-attr]
                    continue
                seen = stream.tail + data
                stream.beats.extend([now] * (seen.count(KEEPALIVE) - stream.tail.count(KEEPALIVE)))
                if stream.marker in seen:
                    stream.suspended.set()
                stream.tail = seen[-32:]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()
        self._wake_w.close()


def gaps(streams: list[Stream], since: float, until: float) -> tuple[list[float], list[float]]:
    """Every gap between keepalives inside the window (and from its edges), and each stream's largest."""
    every, worst = [], []
    for stream in streams:
        window = [since, *[t for t in stream.beats if since <= t <= until], until]
        own = [b - a for a, b in zip(window, window[1:], strict=False)]
        every.extend(own)
        worst.append(max(own))
    return every, worst


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]
