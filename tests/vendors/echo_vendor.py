"""A vendor that exists only in the tests: it answers with the person's last message, word by word.

It proves that a vendor is one module plus one registration: `register_vendor("echo",
"tests.vendors.echo_vendor")`. Like every adapter it declares its capabilities and builds its turn
with the shared TurnAssembler.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Generator

from cloud.chunks import Chunk
from cloud.vendors.base import ModelTurn, TurnRequest, VendorInfo
from cloud.vendors.turn_assembler import TurnAssembler

VENDOR = "echo"
KEY_ENV = "ECHO_API_KEY"


class EchoModel:
    vendor = VENDOR
    key_env = KEY_ENV
    can_summarise = True
    context_window = 8_000
    image_max_px = 640

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.model = prefix
        self.spec = f"{VENDOR}:{prefix}"

    @property
    def configured(self) -> bool:
        return is_configured()

    def stream(self, request: TurnRequest, cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        fold = TurnAssembler(VENDOR)
        user = next((e for e in reversed(request.transcript) if e.get("role") == "user"), {})
        # The person's words are the entry's last text part (the host's context block may come first).
        last = next((p["text"] for p in reversed(user.get("content", [])) if p.get("type") == "text"), "")
        words = f"{self.prefix}: {last}".split(" ")
        for i, word in enumerate(words):
            if cancel.is_set():
                return fold.build("cancelled")
            chunk = fold.prose("text", word if i == 0 else " " + word)
            if chunk is not None:
                yield chunk
        fold.usage.output = len(words)
        return fold.build()


def create(model: str) -> EchoModel:
    return EchoModel(model)


def is_configured() -> bool:
    return bool(os.environ.get(KEY_ENV))


VENDOR_INFO = VendorInfo(VENDOR, create, is_configured, KEY_ENV, example="echo:PREFIX", default_model="echo:echo",
                         suggested=("echo:echo", "echo:parrot"))
