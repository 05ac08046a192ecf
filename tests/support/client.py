"""A small HTTP/SSE client for tests: real requests against the real server."""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests


@dataclass
class Frame:
    event: str | None
    chunk: dict[str, Any] | None  # None for a comment frame
    comment: str | None = None


@dataclass
class Stream:
    frames: list[Frame] = field(default_factory=list)

    @property
    def chunks(self) -> list[dict[str, Any]]:
        return [f.chunk for f in self.frames if f.chunk is not None]

    def of(self, kind: str, meta_kind: str | None = None) -> list[dict[str, Any]]:
        return [c for c in self.chunks if c["type"] == kind
                and (meta_kind is None or (c.get("metadata") or {}).get("kind") == meta_kind)]

    @property
    def keepalives(self) -> int:
        return sum(1 for f in self.frames if f.comment == "keepalive")

    @property
    def last(self) -> dict[str, Any]:
        return self.chunks[-1]


def _lines(response: requests.Response) -> Iterator[str]:
    """The body's lines as they arrive. requests' iter_lines re-copies a pending line on every
    512-byte read, which takes tens of seconds on a multi-megabyte `data:` line."""
    pending: list[bytes] = []
    for piece in response.iter_content(chunk_size=None):
        *complete, rest = piece.split(b"\n")
        if complete:
            complete[0] = b"".join([*pending, complete[0]])
            pending = []
            for line in complete:
                yield line.rstrip(b"\r").decode("utf-8")
        if rest:
            pending.append(rest)
    if pending:
        yield b"".join(pending).decode("utf-8")


def parse_sse(response: requests.Response, on_frame: Any = None) -> Stream:
    stream, event, data, comment = Stream(), None, [], None
    for line in _lines(response):
        if line == "":
            if data or comment is not None:
                frame = Frame(event, json.loads("\n".join(data)) if data else None, comment)
                stream.frames.append(frame)
                if on_frame:
                    on_frame(frame)
            event, data, comment = None, [], None
        elif line.startswith(":"):
            comment = line[1:].strip()
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    return stream


class Client:
    def __init__(self, url: str, token: str | None):
        self.url, self.token = url, token

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        headers = kwargs.pop("headers", {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return requests.request(method, self.url + path, headers=headers, timeout=kwargs.pop("timeout", 60), **kwargs)

    def new_session(self, host_id: str | None = None, model: str | None = None) -> str:
        response = self.call("POST", "/api/sessions", json={"host_id": host_id, "model": model})
        assert response.status_code == 201, response.text
        return response.json()["session_id"]

    def run(self, session_id: str, text: str, model: str | None = None, on_frame: Any = None) -> Stream:
        body: dict[str, Any] = {"text": text}
        if model:
            body["model"] = model
        response = self.call("POST", f"/api/sessions/{session_id}/messages", json=body, stream=True)
        assert response.status_code == 200, response.text
        assert response.headers["Content-Type"].startswith("text/event-stream")
        return parse_sse(response, on_frame)


def write_script(path: Path, turns: list[list[dict[str, Any]]]) -> str:
    """Write a scripted-model file and return its model spec."""
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"
