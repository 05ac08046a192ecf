"""Length-prefixed JSON messages (and raw frames) over a raw pipe, read against a deadline (keeper <-> script child)."""
from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

_HEADER = struct.Struct("!Q")


def send_message(fd: int, message: dict[str, Any]) -> None:
    send_frame(fd, json.dumps(message).encode("utf-8"))


def send_frame(fd: int, data: bytes) -> None:
    """One length-prefixed frame of raw bytes (a serialised model travels this way, not as JSON)."""
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class MessageReader:
    """Reads whole messages from a pipe; `read` returns None at end of file (the writer died or closed)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()

    def read(self, deadline: float | None) -> dict[str, Any] | None:
        """Next message, None on EOF; raises TimeoutError when `deadline` (time.monotonic()) passes first."""
        frame = self.read_frame(deadline)
        return None if frame is None else json.loads(frame)

    def read_frame(self, deadline: float | None) -> bytes | None:
        """Next raw frame, None on EOF; raises TimeoutError when `deadline` passes first."""
        while True:
            frame = self._take()
            if frame is not None:
                return frame
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return None
            self._buffer.extend(chunk)

    def _take(self) -> bytes | None:
        if len(self._buffer) < _HEADER.size:
            return None
        (length,) = _HEADER.unpack_from(self._buffer)
        end = _HEADER.size + length
        if len(self._buffer) < end:
            return None
        payload = bytes(self._buffer[_HEADER.size:end])
        del self._buffer[:end]
        return payload
