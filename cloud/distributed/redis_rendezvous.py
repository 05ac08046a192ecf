"""The tool-result rendezvous in Redis: the call waiting on process B meets the answer arriving on A or C.

Same methods as cloud.rendezvous.ToolResultChannel. The pending request is a Redis hash, named by a
`pending_id` fresh at each open. A delivery is checked against it by a Lua script (the right request,
kind and sender; not answered yet), then recorded in the database by an insert-if-absent keyed by
(session, pending_id): that row is the record and its key the gate, so of two deliveries of the same
answer reaching two processes at once exactly one is applied and the other is refused as a duplicate,
even when Redis lost the pending request in between. A host's delivery names only its request: the check
script looks its session up too (one round trip). Redis then carries the answer's copy and, in the same
script call, the answer itself to the inbox of the process that opened the request (the hash names it), whose
bus thread hands it to the waiting call: no read of Redis there. That script closes the request too (its key goes,
its ids join the answered ones; the hash stays, answered, until the session's next request replaces it), so a
call that takes its answer from the message or the copy has nothing to close in Redis. The waiting call re-reads the hash when woken
without it (by the bus's probe that reads every waiting call's hash in one pipeline a second, should the message
be lost), reads the database record when woken and after a sweep of every waiting call's record (one query
every 10 s) and whenever Redis cannot say (unreachable, or restarted without persistence: the
pending request is written back so an answer posted after Redis returns is still accepted).

What Redis holds is signed (cloud.distributed.signing): the pending request's fields carry a signature
checked before a delivery is recorded, and the answer's copy is sealed for its request; a forged or stale
copy is dropped (logged) and the waiting call reads the database record instead. The inbox message is sealed
for that inbox, and taken only for the request (session and pending_id) its process opened.
"""
from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import redis

from cloud.distributed.bus import BROADCAST, PREFIX, Bus
from cloud.distributed.hosts import host_signal
from cloud.distributed.redis_runs import cancel_signal
from cloud.rendezvous import ANSWERED_MEMORY, Answer, Delivery

if TYPE_CHECKING:
    from cloud.store import Deliveries

log = logging.getLogger(__name__)

HOST_CHECK_S = 1.0  # how often a waiting call looks at a host that is missing (in its reconnect grace)
# How often it looks at a host that is there, or after a cancel woke it: the host's disconnection and the run's
# cancel wake it at once, so this is only the fallback for a lost wake-up (or an owner process that died).
HOST_RECHECK_S = 10.0
DB_POLL_S = 10.0  # the records sweep (one query for every waiting call), when Redis lost the answer's copy
PRUNE_EVERY_S = 600.0  # how often the sweep drops the database records older than DELIVERY_KEEP_S
ANSWER = "answer"  # the inbox message carrying an answer to the process waiting for it
KEEP_S = 86400  # how long pending requests and the answered-id memory live in Redis

# The check of a delivery against the pending request in `pending` (hash) and the answered ids in `answered`
# (list). ARGV: tool_call_id, kind, request_id ('' when by tool call), host_id ('' for a browser). A host's
# delivery names the request; a browser's the tool call. Returns the outcome, and for 'accepted' the pending_id
# and tool_call_id the database record is keyed by, the fields the request's signature covers, and the process
# waiting for the answer. An answer already given is refused by the database record (the gate), not by the copy
# in the hash, which anyone with Redis access could write.
_CHECK_BODY = """
local function check(pending, answered)
  local p = redis.call('HMGET', pending, 'request_id', 'tool_call_id', 'kind', 'host_id', 'result', 'pending_id',
                       'sig', 'waiter')
  local function refused()
    local ids = redis.call('LRANGE', answered, 0, -1)
    for _, id in ipairs(ids) do
      if id == ARGV[1] or (ARGV[3] ~= '' and id == ARGV[3]) then return {'already_answered'} end
    end
    return {'not_pending'}
  end
  if not p[1] then return refused() end
  if ARGV[3] ~= '' then
    if p[1] ~= ARGV[3] or p[3] ~= ARGV[2] then return {'not_pending'} end
    if p[4] ~= '' and p[4] ~= ARGV[4] then return {'wrong_sender'} end
  else
    if p[2] ~= ARGV[1] or p[3] ~= ARGV[2] then return refused() end
  end
  return {'accepted', p[6] or (p[1] .. ':' .. p[3]), p[2], p[1], p[3], p[4] or '', p[7] or '', p[8] or ''}
end
"""
# KEYS: pending hash, answered list (a delivery by session: a browser's relay).
_CHECK = _CHECK_BODY + "return check(KEYS[1], KEYS[2])"
# KEYS: the request's key (its value names the session). ARGV: as above, then the key prefix. A host's delivery
# names only its request: the session is looked up in the same round trip, and for 'accepted' appended to the
# reply. The session's keys are named from the lookup, which a standalone Redis (the deployment's) allows.
_CHECK_BY_REQUEST = _CHECK_BODY + """
local session_id = redis.call('GET', KEYS[1])
if not session_id then return {'not_pending'} end
local checked = check(ARGV[5] .. 'pending:' .. session_id, ARGV[5] .. 'answered:' .. session_id)
if checked[1] == 'accepted' then checked[#checked + 1] = session_id end
return checked
"""
SIGNED_FIELDS = ("request_id", "tool_call_id", "kind", "host_id", "pending_id")

# KEYS: pending hash, the request's key, answered list. ARGV: pending_id, result JSON, a channel, the sealed message
# for it, request_id, tool_call_id, how many ids the list keeps, its ttl. The answer's copy, only on the request it
# answers, and that request's close (its key goes, so a host's second delivery is not pending; its ids join the
# answered ones; the hash stays, with the copy, until the session's next request replaces it), then the message
# (the answer itself to the waiting process's inbox, or a wake-up on the bus's channel): one round trip, the copy
# there before the message, and the waiting call has nothing left to close.
_KEEP_COPY = """
local kept = 0
if redis.call('HGET', KEYS[1], 'pending_id') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'result', ARGV[2])
  redis.call('DEL', KEYS[2])
  redis.call('RPUSH', KEYS[3], ARGV[5], ARGV[6])
  redis.call('LTRIM', KEYS[3], -tonumber(ARGV[7]), -1)
  redis.call('EXPIRE', KEYS[3], ARGV[8])
  kept = 1
end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return kept
"""


def _pending_key(session_id: str) -> str:
    return f"{PREFIX}pending:{session_id}"


def _answered_key(session_id: str) -> str:
    return f"{PREFIX}answered:{session_id}"


def _request_key(request_id: str) -> str:
    return f"{PREFIX}req:{request_id}"


def _fields_text(fields: dict[str, str]) -> str:
    return json.dumps([fields.get(name, "") for name in SIGNED_FIELDS])


def _copy_purpose(session_id: str, pending_id: str) -> str:
    return f"{_pending_key(session_id)}:result:{pending_id}"


def wake_key(session_id: str) -> str:
    return f"ans:{session_id}"


class RedisToolResultChannel:
    def __init__(self, bus: Bus, deliveries: Deliveries) -> None:
        self.bus, self.deliveries = bus, deliveries
        self._redis = bus.redis
        self._check = self._redis.register_script(_CHECK)
        self._check_by_request = self._redis.register_script(_CHECK_BY_REQUEST)
        self._keep_copy = self._redis.register_script(_KEEP_COPY)
        self._opened: dict[str, dict[str, str]] = {}  # session_id -> what this process opened (to restore)
        self._opened_at: dict[str, int] = {}  # session_id -> its wake-up's generation when it was opened
        self._arrived: dict[str, dict[str, Any]] = {}  # session_id -> the answer its inbox message brought
        self._lock = threading.Lock()
        bus.on(ANSWER, self._answer_arrived)
        threading.Thread(target=self._sweep_records, name="delivery-records", daemon=True).start()

    def _sweep_records(self) -> None:
        """Every DB_POLL_S, one query for the records of every request waiting here: the fallback for an
        answer recorded while Redis lost its copy (or its wake-up), without a query per waiting run. Every
        PRUNE_EVERY_S, the records older than a day go (their requests closed long before)."""
        pruned_at = 0.0
        while not self.bus.closed.wait(DB_POLL_S):
            if time.monotonic() - pruned_at >= PRUNE_EVERY_S:
                pruned_at = time.monotonic()
                try:
                    self.deliveries.forget_old_deliveries()
                except Exception:  # the next turn tries again
                    log.exception("dropping the old answer records failed")
            with self._lock:
                waiting = [(session_id, fields["pending_id"]) for session_id, fields in self._opened.items()]
            if not waiting:
                continue
            try:
                recorded = self.deliveries.recorded_deliveries(waiting)
            except Exception:  # the next sweep tries again
                log.exception("reading the recorded answers failed")
                continue
            for session_id, _ in recorded:
                self.bus.wake_here(wake_key(session_id))

    def open(self, session_id: str, request_id: str, tool_call_id: str, host_id: str | None,
             kind: str = "host") -> None:
        # Only the process holding the session's run lease opens requests for it, so an older pending
        # request still in Redis (its process died) is replaced, not a conflict.
        fields = {"request_id": request_id, "tool_call_id": tool_call_id, "host_id": host_id or "", "kind": kind,
                  "pending_id": f"{request_id}:{kind}:{uuid.uuid4().hex[:12]}"}
        with self._lock:
            if session_id in self._opened:
                raise RuntimeError(f"session {session_id} already has a pending request")
            self._opened[session_id] = fields
            # Counted from before the request exists in Redis: an answer's wake-up cannot come earlier.
            self._opened_at[session_id] = self.bus.generation(wake_key(session_id))
        self._write_pending(session_id, fields)

    def _write_pending(self, session_id: str, fields: dict[str, str]) -> None:
        with self._redis.pipeline() as pipe:
            pipe.delete(_pending_key(session_id))
            # `waiter`: where a delivery sends the answer (not signed: the answer it carries is, and the waiter
            # takes only the answer to the request it opened).
            pipe.hset(_pending_key(session_id), mapping={
                **fields, "waiter": self.bus.process,
                "sig": self.bus.seal(_fields_text(fields), _pending_key(session_id))})
            pipe.expire(_pending_key(session_id), KEEP_S)
            pipe.set(_request_key(fields["request_id"]), session_id, ex=KEEP_S)
            pipe.execute()

    def pending_tool_call(self, session_id: str) -> str | None:
        tool_call_id, result = self._redis.hmget(_pending_key(session_id), "tool_call_id", "result")
        return tool_call_id if result is None else None  # an answered request's hash stays until the next opens

    def awaiting_decision(self, session_id: str) -> bool:
        kind, result = self._redis.hmget(_pending_key(session_id), "kind", "result")
        return kind == "approval" and result is None

    def _run_delivery(self, session_id: str, checked: list[str], kind: str, result: dict[str, Any]) -> Delivery:
        """Record and hand over an answer the check script accepted (`checked`: its reply)."""
        pending_id, pending_call, waiter = checked[1], checked[2], checked[7]
        written = {"request_id": checked[3], "tool_call_id": pending_call, "kind": checked[4],
                   "host_id": checked[5], "pending_id": pending_id}
        if self.bus.unseal(checked[6], _pending_key(session_id), KEEP_S) != _fields_text(written):
            log.warning("session %s: a pending request in Redis not written by this deployment; delivery refused",
                        session_id)
            return Delivery.NOT_PENDING
        # The gate: of every delivery of this answer, on any process, one inserts the record.
        if not self.deliveries.record_delivery(session_id, pending_id, pending_call, kind, result):
            log.info("session %s: a second delivery for %s refused (already applied)", session_id, pending_call)
            return Delivery.ALREADY_ANSWERED
        key = wake_key(session_id)
        if waiter and waiter != self.bus.process:  # the answer itself, to the waiting process: no read there
            channel, message = self.bus.sealed_for(waiter, {"kind": ANSWER, "session_id": session_id,
                                                            "pending_id": pending_id, "result": result})
        else:
            channel, message = BROADCAST, self.bus.seal(key, BROADCAST)
        try:
            self._keep_copy(keys=[_pending_key(session_id), _request_key(written["request_id"]),
                                  _answered_key(session_id)],
                            args=[pending_id, self.bus.seal(json.dumps(result), _copy_purpose(session_id, pending_id)),
                                  channel, message, written["request_id"], pending_call, ANSWERED_MEMORY, KEEP_S])
            self.bus.wake_here(key)  # the other processes' message went out with the copy
        except redis.RedisError as exc:  # recorded: the waiting call finds it on the records sweep
            log.warning("session %s: answer recorded, Redis unreachable to wake its run: %s", session_id, exc)
        return Delivery.ACCEPTED

    def deliver_from_host(self, request_id: str, host_id: str, result: dict[str, Any],
                          kind: str = "host") -> Delivery:
        checked = self._check_by_request(keys=[_request_key(request_id)],
                                         args=["", kind, request_id, host_id, PREFIX])
        delivery = Delivery(checked[0])
        if delivery is not Delivery.ACCEPTED:
            return delivery
        return self._run_delivery(checked[-1], checked, kind, result)

    def deliver_tool_result(self, session_id: str, tool_call_id: str, result: dict[str, Any],
                            kind: str = "host") -> Delivery:
        checked = self._check(keys=[_pending_key(session_id), _answered_key(session_id)],
                              args=[tool_call_id, kind, "", ""])
        delivery = Delivery(checked[0])
        if delivery is not Delivery.ACCEPTED:
            return delivery
        return self._run_delivery(session_id, checked, kind, result)

    def _answer_arrived(self, body: dict[str, Any]) -> None:
        """An answer a delivery on another process sent here (on the bus's thread): kept for the call waiting
        for that very request, which it wakes; anything else is dropped."""
        session_id = body.get("session_id")
        with self._lock:
            fields = self._opened.get(session_id) if isinstance(session_id, str) else None
            if fields is None or fields["pending_id"] != body.get("pending_id"):
                return
            self._arrived[session_id] = body["result"]
        self.bus.wake_here(wake_key(session_id))

    def wait(self, session_id: str, timeout_s: float, cancel: threading.Event) -> dict[str, Any] | None:
        return self.await_answer(session_id, timeout_s, cancel).result

    def await_answer(self, session_id: str, timeout_s: float, cancel: threading.Event,
                     alive: Callable[[], bool] | None = None) -> Answer:
        key, cancelled = wake_key(session_id), cancel_signal(session_id)
        deadline = time.monotonic() + timeout_s
        with self._lock:
            opened_at = self._opened_at.get(session_id)
            host_id = self._opened.get(session_id, {}).get("host_id")
        # Not forgotten at the end: many calls wait on one host's key, and a host's counter is one entry.
        host_key = host_signal(host_id) if host_id else None
        # The first look reads Redis only if a wake-up came since the request was opened here (else the answer
        # is not there yet, and its wake-up, or the probe's first reading, says when it is).
        read, woken, first = opened_at is None, False, True
        closed_by_delivery = False  # the answer came from its delivery's message or copy: that script closed it
        try:
            # The hash's field count changes when an answer's copy lands or Redis loses the request: the
            # bus's probe wakes this call then, should the delivery's own wake-up be lost.
            with self.bus.probing(key, ("HLEN", _pending_key(session_id))):
                while True:
                    seen = {key: self.bus.generation(key), cancelled: self.bus.generation(cancelled)}
                    if host_key is not None:
                        seen[host_key] = self.bus.generation(host_key)
                    if first:
                        read, first = read or seen[key] != opened_at, False
                    if read:  # woken (the delivery, the probe, the records sweep, a reconnect), or the first look
                        result, closed_by_delivery = self._read_result(session_id, woken)
                        if result is not None:
                            return Answer(result)
                    read = woken = False
                    if cancel.is_set():
                        return Answer(None, "cancelled")
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return Answer(None, "timeout")
                    if alive is not None and not alive():
                        return Answer(None, "gone")
                    # A missing host (its reconnect grace), or a cancel not final yet (an abort's grace), is looked
                    # at every second; else the call sleeps until a wake-up (the answer, a cancel, the host gone).
                    steady = not getattr(alive, "missing", alive is not None) and not getattr(cancel, "aborting", False)
                    step = HOST_RECHECK_S if steady else HOST_CHECK_S
                    if self.bus.wait_any(seen, min(remaining, step)) and self.bus.generation(key) != seen[key]:
                        read = woken = True
        finally:
            if closed_by_delivery:
                self._forget(session_id)
            else:
                self.close(session_id)
            self.bus.forget(key)
            self.bus.forget(cancelled)

    def _read_result(self, session_id: str, check_record: bool) -> tuple[dict[str, Any] | None, bool]:
        """The answer: the one its delivery sent here, else Redis's copy, else (when `check_record`, or Redis
        cannot say) the database record; and whether it came from the delivery's message or copy (whose script
        closed the request in Redis)."""
        with self._lock:
            fields = self._opened.get(session_id)
            arrived = self._arrived.pop(session_id, None)
        if arrived is not None:
            return arrived, True
        try:
            stored = self._redis.hgetall(_pending_key(session_id))
            if "result" in stored:
                pending_id = (fields or stored).get("pending_id", "")
                copy = self.bus.unseal(stored["result"], _copy_purpose(session_id, pending_id))
                if copy is not None:
                    return json.loads(copy), True
                check_record = True  # a forged or stale copy: the database record alone says
            if not stored and fields is not None:  # Redis lost it (restarted without persistence): put it back
                log.warning("session %s: the pending request was gone from Redis; restored", session_id)
                self._write_pending(session_id, fields)
                check_record = True
        except redis.RedisError as exc:  # Redis unreachable: the record may still say; else keep waiting
            log.warning("session %s: Redis unreachable while waiting for a result: %s", session_id, exc)
            check_record = True
        if check_record and fields is not None:
            return self.deliveries.delivery(session_id, fields["pending_id"]), False
        return None, False

    def _forget(self, session_id: str) -> dict[str, str] | None:
        """Forget here the session's request (what this process opened); what it was."""
        with self._lock:
            self._opened_at.pop(session_id, None)
            self._arrived.pop(session_id, None)
            return self._opened.pop(session_id, None)

    def close(self, session_id: str) -> None:
        fields = self._forget(session_id)
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
