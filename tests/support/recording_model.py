"""A scripted model that also records what the loop asked of it: the `recording:PATH` vendor, tests only.

It plays a scripted-model file exactly like `scripted:PATH` and appends each request's max_tokens
(and the size of the model's view) to `REQUESTS[session_id]`, so tests can pin the output budget of
every phase without a real vendor.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Generator
from typing import Any

from cloud.chunks import Chunk
from cloud.vendors.base import ModelTurn, TurnRequest, VendorInfo
from cloud.vendors.scripted import ScriptedModel

REQUESTS: dict[str, list[dict[str, Any]]] = defaultdict(list)


class RecordingModel(ScriptedModel):
    vendor = "recording"

    def __init__(self, path: str):
        super().__init__(path)
        self.spec = f"recording:{path}"

    def stream(self, request: TurnRequest, cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        REQUESTS[request.session_id].append({"max_tokens": request.max_tokens, "entries": len(request.transcript)})
        return (yield from super().stream(request, cancel))


def create(model: str) -> RecordingModel:
    return RecordingModel(model)


def is_configured() -> bool:
    return False


VENDOR_INFO = VendorInfo("recording", create, is_configured, None, example="recording:PATH", listed=False)
