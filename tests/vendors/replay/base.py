"""A loopback HTTP replay server that each vendor's replay module specialises.

API (stable; vendor modules subclass ReplayServer and implement `render_turn` and `render_error`):

    server = MyVendorReplay()            # binds 127.0.0.1 on an ephemeral port
    with server:                         # starts / stops the threaded server
        server.url                       # "http://127.0.0.1:PORT"
        server.enqueue(Turn([...]), HttpError(429, retry_after=0), ...)   # one scenario per request, FIFO
        server.default = Turn([...])     # served when the queue is empty (None: a 500 naming the problem)
        server.requests                  # every RecordedRequest received, in order
        server.cache                     # PrefixCache: the vendor module bills usage through it

Scenarios:
    Turn(items, stop=None, fault=None, fault_after=2, piece_chars=8)
        items: {"text": s} | {"thinking": s, "signature": s?} | {"redacted_thinking": data}
             | {"tool_call": {"name": s, "input": {...}} or {"name": s, "raw_json": s}, "id": s?}
        `raw_json` streams exactly that text as the arguments (malformed or truncated JSON).
        stop: override the vendor stop/finish reason. fault: "error_event" (the vendor's in-stream
        error after `fault_after` content events) or "truncate" (the connection drops mid-body after
        `fault_after` content events). piece_chars: size of the streamed deltas. finish_message: the
        vendor's explanation of the stop, where it has one (Gemini's MALFORMED_FUNCTION_CALL text).
        An item may carry "signature" (a thought signature, on vendors that sign parts).
    HttpError(status, message="...", retry_after=None, error_type=None)
        An error status before any stream (429, 500, 529, 400 ...), in the vendor's error body shape.
    Any callable(RecordedRequest) -> Reply: the raw hook for anything else (fault injection).

Reply(status=200, headers={}, frames=[bytes], truncate_after=None): frames are written as the
chunked body; with truncate_after the connection is dropped after that many frames, with no final
chunk, as a real network failure would.

PrefixCache(min_tokens=0, lookback=20).bill(segments, breakpoints) -> CacheBill(uncached, cache_read,
cache_write): a simulated prompt cache over a request serialised as segments in prefix order.
breakpoints (segment indices) = explicit caching (Anthropic: prefixes are stored at breakpoints, a hit
is looked for at each breakpoint and up to `lookback` segments before it, the prefix after the hit up
to the last breakpoint is a cache write); None = implicit caching (OpenAI, Gemini: every segment
boundary is stored, the longest stored prefix is read, writes are free). Tokens are chars / 4.

Helpers: sse(data, event=None) -> bytes, pieces(text, size) -> list[str], tokens_of(text) -> int,
drain(adapter_stream) -> (chunks, ModelTurn), image_part(width, height) -> a neutral PNG image part.
"""
from __future__ import annotations

import abc
import hashlib
import json
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

WRITE_BATCH_BYTES = 64 * 1024


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lower-cased
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    frames: list[bytes] = field(default_factory=list)
    truncate_after: int | None = None


@dataclass
class Turn:
    items: list[dict[str, Any]]
    stop: str | None = None
    fault: str | None = None  # "error_event" | "truncate"
    fault_after: int = 2
    piece_chars: int = 8
    finish_message: str | None = None


@dataclass
class HttpError:
    status: int
    message: str = "simulated failure"
    retry_after: float | None = None
    error_type: str | None = None


Scenario = Turn | HttpError | Callable[[RecordedRequest], Reply]


def sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def tokens_of(text: str) -> int:
    return (len(text) + 3) // 4


@dataclass(frozen=True)
class CacheBill:
    uncached: int
    cache_read: int
    cache_write: int

    @property
    def total(self) -> int:
        return self.uncached + self.cache_read + self.cache_write


class PrefixCache:
    def __init__(self, min_tokens: int = 0, lookback: int = 20):
        self.min_tokens = min_tokens
        self.lookback = lookback
        self._stored: set[bytes] = set()
        self._lock = threading.Lock()

    def bill(self, segments: Sequence[str], breakpoints: Sequence[int] | None = None) -> CacheBill:
        hashes, totals = [], []
        running, total = hashlib.sha256(), 0
        for segment in segments:
            running.update(hashlib.sha256(segment.encode()).digest())
            hashes.append(running.copy().digest())
            total += tokens_of(segment)
            totals.append(total)
        with self._lock:
            if breakpoints is None:
                return self._bill_implicit(hashes, totals, total)
            return self._bill_explicit(hashes, totals, total, sorted(set(breakpoints)))

    def _bill_implicit(self, hashes: list[bytes], totals: list[int], total: int) -> CacheBill:
        read = max((totals[i] for i, h in enumerate(hashes) if h in self._stored and totals[i] >= self.min_tokens),
                   default=0)
        self._stored.update(hashes)
        return CacheBill(total - read, read, 0)

    def _bill_explicit(self, hashes: list[bytes], totals: list[int], total: int, breakpoints: list[int]) -> CacheBill:
        breakpoints = [b for b in breakpoints if 0 <= b < len(hashes) and totals[b] >= self.min_tokens]
        if not breakpoints:
            return CacheBill(total, 0, 0)
        read = 0
        for b in breakpoints:
            for j in range(b, max(-1, b - self.lookback - 1), -1):
                if hashes[j] in self._stored:
                    read = max(read, totals[j])
                    break
        write = max(0, totals[breakpoints[-1]] - read)
        self._stored.update(hashes[b] for b in breakpoints)
        return CacheBill(total - read - write, read, write)


class QuietHTTPServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up mid-reply (cancel, truncation tests) is part of the scenario, not an error.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class ReplayServer(abc.ABC):
    """Threaded loopback server; subclasses speak one vendor's wire format."""

    def __init__(self, cache: PrefixCache | None = None):
        self.requests: list[RecordedRequest] = []
        self.queue: deque[Scenario] = deque()
        self.default: Scenario | None = None
        self.cache = cache or PrefixCache()
        self._lock = threading.Lock()
        self._httpd = QuietHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # --- to implement per vendor -------------------------------------------------------------
    @abc.abstractmethod
    def render_turn(self, request: RecordedRequest, turn: Turn) -> Reply:
        """The vendor's streamed response for a scripted turn (usage billed through self.cache)."""

    @abc.abstractmethod
    def render_error(self, request: RecordedRequest, error: HttpError) -> Reply:
        """The vendor's error response (status, headers incl. retry-after, JSON body)."""

    # --- public ------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def enqueue(self, *scenarios: Scenario) -> None:
        with self._lock:
            self.queue.extend(scenarios)

    def start(self) -> ReplayServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="replay-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def bodies(self) -> list[Any]:
        return [r.json for r in self.requests]

    # --- internals ---------------------------------------------------------------------------
    def _next_scenario(self) -> Scenario | None:
        with self._lock:
            return self.queue.popleft() if self.queue else self.default

    def respond(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
        scenario = self._next_scenario()
        if scenario is None:
            return Reply(500, {"content-type": "application/json"},
                         [b'{"error": {"message": "replay server: no scenario queued for this request"}}'])
        if isinstance(scenario, HttpError):
            return self.render_error(request, scenario)
        if isinstance(scenario, Turn):
            return self.render_turn(request, scenario)
        return scenario(request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test output
                return

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                recorded = RecordedRequest(self.command, parts.path, parse_qs(parts.query),
                                           {k.lower(): v for k, v in self.headers.items()}, body)
                reply = server.respond(recorded)
                self.send_response(reply.status)
                headers = {"content-type": "text/event-stream", **reply.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                frames = reply.frames if reply.truncate_after is None else reply.frames[:reply.truncate_after]
                try:
                    self._write_chunked(frames)
                    if reply.truncate_after is not None:
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            def _write_chunked(self, frames: list[bytes]) -> None:
                batch: list[bytes] = []
                size = 0
                for frame in frames:
                    batch.append(frame)
                    size += len(frame)
                    if size >= WRITE_BATCH_BYTES:
                        self._write_chunk(b"".join(batch))
                        batch, size = [], 0
                if batch:
                    self._write_chunk(b"".join(batch))

            def _write_chunk(self, data: bytes) -> None:
                if data:
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()

        return Handler


def drain(stream: Any) -> tuple[list[Any], Any]:
    """Run an adapter's stream to the end: (the chunks it yielded, the ModelTurn it returned)."""
    out = []
    while True:
        try:
            out.append(next(stream))
        except StopIteration as done:
            return out, done.value


def image_part(width: int, height: int, color: tuple[int, int, int] = (200, 30, 30)) -> dict[str, Any]:
    """A neutral image part holding a real PNG of that size."""
    import base64
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return {"type": "image", "media_type": "image/png", "data": base64.b64encode(buffer.getvalue()).decode(),
            "width": width, "height": height}
