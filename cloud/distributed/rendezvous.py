"""The tool-result rendezvous in Redis: the call waiting on process B meets the answer arriving on A or C.

Same methods as cloud.rendezvous.ToolResultChannel. The pending request is a Redis hash; a delivery is a
Lua script that accepts the first matching answer and refuses any other (applied exactly once, whatever
process it reaches), then wakes the waiting process through the bus. The waiting call re-reads the
hash when woken and on a slow poll, and writes its pending request back if Redis lost it (a restart
without persistence), so an answer posted after Redis returns is still accepted.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis

from cloud.distributed.bus import PREFIX, Bus
from cloud.rendezvous import ANSWERED_MEMORY, CANCEL_POLL_S, Answer, Delivery

log = logging.getLogger(__name__)

POLL_S = 1.0  # the slow re-read of a pending request when no wake-up came
KEEP_S = 86400  # how long pending requests and the answered-id memory live in Redis

# KEYS: pending hash, answered list. ARGV: tool_call_id, kind, result JSON, request_id ('' when by tool
# call), host_id ('' for a browser). A host's delivery names the request; a browser's the tool call.
_DELIVER = """
local p = redis.call('HMGET', KEYS[1], 'request_id', 'tool_call_id', 'kind', 'host_id', 'result')
local function refused()
  local ids = redis.call('LRANGE', KEYS[2], 0, -1)
  for _, id in ipairs(ids) do
    if id == ARGV[1] or (ARGV[4] ~= '' and id == ARGV[4]) then return 'already_answered' end
  end
  return 'not_pending'
end
if not p[1] then return refused() end
if ARGV[4] ~= '' then
  if p[1] ~= ARGV[4] or p[3] ~= ARGV[2] then return 'not_pending' end
  if p[4] ~= '' and p[4] ~= ARGV[5] then return 'wrong_sender' end
else
  if p[2] ~= ARGV[1] or p[3] ~= ARGV[2] then return refused() end
end
if p[5] then return 'already_answered' end
redis.call('HSET', KEYS[1], 'result', ARGV[3])
return 'accepted'
"""


def _pending_key(session_id: str) -> str:
    return f"{PREFIX}pending:{session_id}"


def _answered_key(session_id: str) -> str:
    return f"{PREFIX}answered:{session_id}"


def _request_key(request_id: str) -> str:
    return f"{PREFIX}req:{request_id}"


def wake_key(session_id: str) -> str:
    return f"ans:{session_id}"


class RedisToolResultChannel:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self._redis = bus.redis
        self._deliver = self._redis.register_script(_DELIVER)
        self._opened: dict[str, dict[str, str]] = {}  # session_id -> what this process opened (to restore)
        self._lock = threading.Lock()

    def open(self, session_id: str, request_id: str, tool_call_id: str, host_id: str | None,
             kind: str = "host") -> None:
        # Only the process holding the session's run lease opens requests for it, so an older pending
        # request still in Redis (its process died) is replaced, not a conflict.
        fields = {"request_id": request_id, "tool_call_id": tool_call_id, "host_id": host_id or "", "kind": kind}
        with self._lock:
            if session_id in self._opened:
                raise RuntimeError(f"session {session_id} already has a pending request")
            self._opened[session_id] = fields
        self._write_pending(session_id, fields)

    def _write_pending(self, session_id: str, fields: dict[str, str]) -> None:
        with self._redis.pipeline() as pipe:
            pipe.delete(_pending_key(session_id))
            pipe.hset(_pending_key(session_id), mapping=fields)
            pipe.expire(_pending_key(session_id), KEEP_S)
            pipe.set(_request_key(fields["request_id"]), session_id, ex=KEEP_S)
            pipe.execute()

    def pending_tool_call(self, session_id: str) -> str | None:
        return self._redis.hget(_pending_key(session_id), "tool_call_id")

    def awaiting_decision(self, session_id: str) -> bool:
        kind, result = self._redis.hmget(_pending_key(session_id), "kind", "result")
        return kind == "approval" and result is None

    def _run_delivery(self, session_id: str, tool_call_id: str, kind: str, result: dict[str, Any],
                      request_id: str = "", host_id: str = "") -> Delivery:
        outcome = self._deliver(keys=[_pending_key(session_id), _answered_key(session_id)],
                                args=[tool_call_id, kind, json.dumps(result), request_id, host_id])
        delivery = Delivery(outcome)
        if delivery is Delivery.ACCEPTED:
            self.bus.signal(wake_key(session_id))
        return delivery

    def deliver_from_host(self, request_id: str, host_id: str, result: dict[str, Any],
                          kind: str = "host") -> Delivery:
        session_id = self._redis.get(_request_key(request_id))
        if session_id is None:
            return Delivery.NOT_PENDING
        return self._run_delivery(session_id, "", kind, result, request_id=request_id, host_id=host_id)

    def deliver_tool_result(self, session_id: str, tool_call_id: str, result: dict[str, Any],
                            kind: str = "host") -> Delivery:
        return self._run_delivery(session_id, tool_call_id, kind, result)

    def wait(self, session_id: str, timeout_s: float, cancel: threading.Event) -> dict[str, Any] | None:
        return self.await_answer(session_id, timeout_s, cancel).result

    def await_answer(self, session_id: str, timeout_s: float, cancel: threading.Event,
                     alive: Callable[[], bool] | None = None) -> Answer:
        key = wake_key(session_id)
        deadline = time.monotonic() + timeout_s
        next_read = 0.0
        try:
            while True:
                seen = self.bus.generation(key)
                if time.monotonic() >= next_read:
                    next_read = time.monotonic() + POLL_S
                    result = self._read_result(session_id)
                    if result is not None:
                        return Answer(result)
                if cancel.is_set():
                    return Answer(None, "cancelled")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return Answer(None, "timeout")
                if alive is not None and not alive():
                    return Answer(None, "gone")
                if self.bus.wait(key, seen, min(remaining, CANCEL_POLL_S)):
                    next_read = 0.0
        finally:
            self.close(session_id)
            self.bus.forget(key)

    def _read_result(self, session_id: str) -> dict[str, Any] | None:
        try:
            stored = self._redis.hgetall(_pending_key(session_id))
            if not stored:  # Redis lost it (restarted without persistence): put it back, keep waiting
                with self._lock:
                    fields = self._opened.get(session_id)
                if fields is not None:
                    log.warning("session %s: the pending request was gone from Redis; restored", session_id)
                    self._write_pending(session_id, fields)
                return None
            return json.loads(stored["result"]) if "result" in stored else None
        except redis.RedisError as exc:  # Redis unreachable: the call keeps waiting until its own timeout
            log.warning("session %s: Redis unreachable while waiting for a result: %s", session_id, exc)
            return None

    def close(self, session_id: str) -> None:
        with self._lock:
            fields = self._opened.pop(session_id, None)
        if fields is None:
            return
        try:
            with self._redis.pipeline() as pipe:
                pipe.delete(_pending_key(session_id), _request_key(fields["request_id"]))
                pipe.rpush(_answered_key(session_id), fields["request_id"], fields["tool_call_id"])
                pipe.ltrim(_answered_key(session_id), -ANSWERED_MEMORY, -1)
                pipe.expire(_answered_key(session_id), KEEP_S)
                pipe.execute()
        except redis.RedisError as exc:  # the keys expire on their own
            log.warning("session %s: could not close the pending request in Redis: %s", session_id, exc)
