"""The scripted model playing an in-memory list of turns (`ScriptedModel.from_turns`), recording requests.

It also records each request's output budget and transcript size in `requests`, so tests can pin the
budget of every phase without a vendor.
"""
from __future__ import annotations

import threading
from collections.abc import Generator
from typing import Any

from cloud.chunks import Chunk
from cloud.vendors.base import ModelTurn, TurnRequest
from cloud.vendors.scripted import ScriptedModel


class MemoryModel(ScriptedModel):
    def __init__(self, turns: list[list[dict[str, Any]]], name: str = "memory") -> None:
        self.__dict__.update(vars(ScriptedModel.from_turns(turns, name)))
        self.requests: list[dict[str, Any]] = []

    def stream(self, request: TurnRequest, cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        self.requests.append({"max_tokens": request.max_tokens, "entries": len(request.transcript)})
        return (yield from super().stream(request, cancel))
