"""Server-sent events framing: `event: <ChunkType>` + `data: <chunk JSON>`, and keepalive comments."""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from flask import Response, stream_with_context

KEEPALIVE_FRAME = ": keepalive\n\n"


def frame(chunk: dict[str, Any], index: int | None = None) -> str:
    head = f"id: {index}\n" if index is not None else ""
    return f"{head}event: {chunk['type']}\ndata: {json.dumps(chunk, separators=(',', ':'))}\n\n"


def stream_response(frames: Iterable[str], in_request_context: bool = True) -> Response:
    """The SSE response: an opening comment, then `frames`. With `in_request_context` the request's context
    stays pushed while they are produced (for frames that read it); without, it goes when the view returns: a
    stream that stays open for hours (a waiting run's) keeps neither it nor the generator that pushes it."""
    def body() -> Iterator[str]:  # a generator, closed (and `frames` with it) when the client goes
        yield ": stream open\n\n"
        yield from frames
    response = Response(stream_with_context(body()) if in_request_context else body(), mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"  # proxies must not buffer the stream
    return response
