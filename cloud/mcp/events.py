"""Resumable SSE streams for the HTTP endpoint: the messages of each request's stream, kept in this process
so a client whose connection dropped mid-call (a long `run_task`) reconnects with `Last-Event-ID` and gets
what it missed, then the rest, instead of losing the call's result.

With an event store the SDK opens each stream with a priming event (an id, no data, and `retry`: how long
to wait before reconnecting). Bounded: the newest streams only, and a cap of events per stream.
"""
from __future__ import annotations

import itertools
import threading
from collections import OrderedDict

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

RETRY_MS = 2000  # the reconnection delay suggested to clients
MAX_STREAMS = 2000
MAX_EVENTS_PER_STREAM = 5000


class MemoryEventStore(EventStore):
    def __init__(self, max_streams: int = MAX_STREAMS, max_events: int = MAX_EVENTS_PER_STREAM) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._streams: OrderedDict[StreamId, list[tuple[int, JSONRPCMessage | None]]] = OrderedDict()
        self._stream_of: dict[int, StreamId] = {}
        self.max_streams, self.max_events = max_streams, max_events

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        with self._lock:
            number = next(self._ids)
            events = self._streams.setdefault(stream_id, [])
            self._streams.move_to_end(stream_id)
            events.append((number, message))
            self._stream_of[number] = stream_id
            if len(events) > self.max_events:
                dropped, _ = events.pop(0)
                self._stream_of.pop(dropped, None)
            while len(self._streams) > self.max_streams:
                _, old = self._streams.popitem(last=False)
                for dropped, _ in old:
                    self._stream_of.pop(dropped, None)
        return str(number)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """Every message of the stream after `last_event_id`; None for an id this store does not know."""
        if not last_event_id.isdigit():
            return None
        after = int(last_event_id)
        with self._lock:
            stream_id = self._stream_of.get(after)
            missed = [(n, m) for n, m in self._streams.get(stream_id, []) if n > after] if stream_id else []
        if stream_id is None:
            return None
        for number, message in missed:
            if message is not None:  # priming events carry no message
                await send_callback(EventMessage(message, str(number)))
        return stream_id
