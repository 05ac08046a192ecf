"""Runs whose chunk streams live in Redis: driven on one process, followed and cancelled from any.

Same methods as cloud.runs.RunRegistry. The driving process appends each chunk to a Redis list and
wakes followers through the bus; a page on another process reads the list from index N (`/stream?after=N`)
when woken (or when the bus's probe sees the list change), a page on the driving process reads the run's
chunks from memory. Either way a waiting stream costs no Redis call of its own between chunks.
A cancel sets a key and wakes the driving process. Chunks published while Redis is unreachable are kept
and sent, in order, once it is back; the run itself goes on. A finished run's list expires after the
retention time; a run whose process died is ended by whichever process recovers its session.
The run's own thread does not wait for Redis: a chunk is in memory (where this process's followers read it) when
`publish` returns, and one flusher thread per process hands Redis what each run has added since its last flush
(one script call, which also publishes the followers' wake-up, for however many chunks came meanwhile); a run's end is flushed by the run
itself, before its record is marked done.
Each chunk and the cancel mark are sealed with the deployment's secret (cloud.distributed.signing): a
follower skips a chunk this deployment did not write, and only a signed cancel mark cancels.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import redis

from cloud import chunks
from cloud.chunks import Chunk
from cloud.distributed.bus import BROADCAST, PREFIX, Bus
from cloud.runs import KEEPALIVE, LEASE_TTL_S, RETAIN_S, Run, RunRegistry

if TYPE_CHECKING:
    from cloud.store import RunLeases

log = logging.getLogger(__name__)

ACTIVE = PREFIX + "runs"
POLL_S = 1.0
FLUSH_PATIENCE_S = 120.0  # how long a finished run keeps trying to hand its last chunks to Redis
MISSING_PATIENCE_S = 10.0  # a follower waits this long for a run's record Redis lost to be written again
RETRY_FLUSH_S = 0.5  # how often the flusher retries the runs whose chunks Redis could not take


# KEYS: the chunk list. ARGV: the bus's channel, the sealed wake-up for the followers, the length this process
# expects the list to have, then the chunks to append. -1 (and nothing appended or published) when the list is
# not that long: Redis lost it, and the driver writes it again whole. Appended, the followers' wake-up goes out
# in the same round trip.
_APPEND = """
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[3]) then return -1 end
local length = redis.call('RPUSH', KEYS[1], unpack(ARGV, 4))
redis.call('PUBLISH', ARGV[1], ARGV[2])
return length
"""


def _chunks_key(session_id: str) -> str:
    return f"{PREFIX}run:{session_id}:chunks"


def _meta_key(session_id: str) -> str:
    return f"{PREFIX}run:{session_id}"


def _cancel_key(session_id: str) -> str:
    return f"{PREFIX}run:{session_id}:cancel"


def _sealed_chunk(bus: Bus, session_id: str, chunk: dict[str, Any]) -> str:
    return bus.seal(json.dumps(chunk), _chunks_key(session_id))


def _unsealed_chunk(bus: Bus, session_id: str, raw: str) -> dict[str, Any] | None:
    text = bus.unseal(raw, _chunks_key(session_id), RETAIN_S + MISSING_PATIENCE_S)
    return None if text is None else json.loads(text)


def set_cancel_mark(bus: Bus, session_id: str) -> None:
    bus.redis.set(_cancel_key(session_id), bus.seal("1", _cancel_key(session_id)), ex=int(RETAIN_S))


def cancel_marked(bus: Bus, session_id: str) -> bool:
    raw = bus.redis.get(_cancel_key(session_id))
    return raw is not None and bus.unseal(raw, _cancel_key(session_id), RETAIN_S) == "1"


def chunk_signal(session_id: str) -> str:
    return f"run:{session_id}"


def cancel_signal(session_id: str) -> str:
    return f"cancel:{session_id}"


class _RemoteCancel:
    """A run's cancel as seen from a process that does not drive it: setting it reaches the driver."""

    def __init__(self, bus: Bus, session_id: str) -> None:
        self.bus, self.session_id = bus, session_id

    def set(self) -> None:
        set_cancel_mark(self.bus, self.session_id)
        self.bus.signal(cancel_signal(self.session_id))

    def is_set(self) -> bool:
        return cancel_marked(self.bus, self.session_id)


class _LocalCancel(threading.Event):
    """The cancel of a run driven here: setting it also wakes the run where it waits for an answer."""

    def __init__(self, bus: Bus, session_id: str) -> None:
        super().__init__()
        self.bus, self.session_id = bus, session_id

    def set(self) -> None:
        super().set()
        self.bus.wake_here(cancel_signal(self.session_id))


class RedisRun(Run):
    """A run's chunk stream in Redis. Driven here (`cancel` is a local event, followers here read the
    chunks from memory) or elsewhere (`cancel` reaches the driving process, followers read Redis)."""

    def __init__(self, bus: Bus, session_id: str, driven_here: bool, retain_s: float = RETAIN_S,
                 flusher: Flusher | None = None) -> None:
        super().__init__(session_id)
        self.bus = bus
        self._flusher = flusher  # None: each publish flushes at once, on the publishing thread
        self._retain_s = retain_s
        self._sent = 0  # how many of `chunks` (every chunk published here) Redis has
        self._owner = ""
        self._send_lock = threading.Lock()
        self._append = bus.script(_APPEND)
        if driven_here:
            self.cancel = _LocalCancel(bus, session_id)
        else:
            self.cancel = _RemoteCancel(bus, session_id)  # type: ignore[assignment]

    def start(self, owner: str) -> None:
        self._owner = owner
        self._write_head()

    def _write_head(self, pipe: Any = None) -> None:
        own = pipe is None
        pipe = pipe if pipe is not None else self.bus.redis.pipeline()
        pipe.delete(_chunks_key(self.session_id), _cancel_key(self.session_id))
        pipe.hset(_meta_key(self.session_id), mapping={"owner": self._owner, "done": "0"})
        pipe.persist(_meta_key(self.session_id))
        pipe.sadd(ACTIVE, self.session_id)
        if own:
            pipe.execute()

    def publish(self, chunk: Chunk) -> None:
        with self._send_lock:
            super().publish(chunk)  # followers in this process have it at once
            if self._flusher is None:
                self._flush()
        if self._flusher is not None:
            self._flusher.mark(self)

    def flush(self) -> bool:
        """Hand Redis what it does not have yet; False when Redis could not take it (then try again later)."""
        with self._send_lock:
            return self._flush()

    def _sealed(self, start: int) -> list[str]:
        return [_sealed_chunk(self.bus, self.session_id, c) for c in self.chunks[start:]]

    def _flush(self) -> bool:
        """Hand Redis the chunks it does not have yet (checked and appended by one script), and wake the followers."""
        count = len(self.chunks)
        if self._sent == count:
            return True
        key, signal = _chunks_key(self.session_id), chunk_signal(self.session_id)
        try:
            # A script in a pipeline costs redis-py a SCRIPT EXISTS round trip of its own: called alone it is one.
            appended = self._append(keys=[key], args=[BROADCAST, self.bus.seal(signal, BROADCAST), self._sent,
                                                      *self._sealed(self._sent)])
            if appended < 0:  # Redis lost the stream (it restarted without persistence): write it again, whole
                with self.bus.redis.pipeline() as pipe:
                    self._write_head(pipe)
                    pipe.rpush(key, *self._sealed(0))
                    self.bus.queue_signal(pipe, signal)
                    pipe.execute()
        except redis.RedisError as exc:
            log.warning("run %s: Redis unreachable, %d chunk(s) kept until it is back: %s",
                        self.session_id, count - self._sent, exc)
            return False
        self._sent = count
        self.bus.wake_here(signal)  # the other processes' wake-up went out with the chunks
        return True

    def finish(self) -> None:
        deadline = time.monotonic() + FLUSH_PATIENCE_S
        while True:
            with self._send_lock:
                try:
                    if self._flush():
                        mark_done(self.bus, self.session_id, self._retain_s)
                        break
                except redis.RedisError as exc:
                    log.warning("run %s: could not mark its end in Redis: %s", self.session_id, exc)
            if time.monotonic() > deadline:
                log.error("run %s: Redis stayed unreachable; its last chunks are only in the transcript",
                          self.session_id)
                break
            time.sleep(0.5)
        super().finish()

    def chunk_count(self) -> int:
        if self._owner:  # driven here
            return super().chunk_count()
        return int(self.bus.redis.llen(_chunks_key(self.session_id)))

    def follow(self, after: int, keepalive_s: float) -> Iterator[dict[str, Any] | None]:
        if self._owner:  # driven here: the chunks are in memory, and the run wakes its followers itself
            return super().follow(after, keepalive_s)
        return self._follow_elsewhere(after, keepalive_s)

    def _follow_elsewhere(self, after: int, keepalive_s: float) -> Iterator[dict[str, Any] | None]:
        signal = chunk_signal(self.session_id)
        try:
            with self.bus.probing(signal, ("LLEN", _chunks_key(self.session_id)),
                                  ("HGET", _meta_key(self.session_id), "done")):
                yield from self._follow_redis(after, keepalive_s, signal)
        finally:
            self.bus.forget(signal)

    def _follow_redis(self, after: int, keepalive_s: float, signal: str) -> Iterator[dict[str, Any] | None]:
        """Read the list when woken (a publish, the bus's probe, a reconnect), else only send keepalives;
        while the run's record is missing or Redis is away, re-read every POLL_S."""
        index = after
        quiet_since = missing_since = time.monotonic()
        read = True
        while True:
            seen = self.bus.generation(signal)
            if read:
                try:
                    with self.bus.redis.pipeline() as pipe:
                        pipe.lrange(_chunks_key(self.session_id), index, -1)
                        pipe.hget(_meta_key(self.session_id), "done")
                        batch, done = pipe.execute()
                except redis.RedisError:
                    batch, done = [], "away"  # Redis is away: keep the stream open with keepalives
                index += len(batch)
                for raw in batch:
                    chunk = _unsealed_chunk(self.bus, self.session_id, raw)
                    if chunk is not None:  # one this deployment did not write is dropped (logged)
                        yield chunk
                now = time.monotonic()
                if batch:
                    quiet_since = now
                if done == "1":
                    return
                if done is not None:
                    missing_since = now
                elif now - missing_since > MISSING_PATIENCE_S:
                    return  # the run expired, or Redis lost it and its driver never came back
            now = time.monotonic()
            if now - quiet_since >= keepalive_s:
                quiet_since = now
                yield KEEPALIVE
            until_keepalive = keepalive_s - (time.monotonic() - quiet_since)
            settled = done == "0"
            timeout = until_keepalive if settled else min(POLL_S, until_keepalive)
            read = self.bus.wait(signal, seen, max(0.01, timeout)) or not settled


def mark_done(bus: Bus, session_id: str, retain_s: float) -> None:
    with bus.redis.pipeline() as pipe:
        pipe.hset(_meta_key(session_id), "done", "1")
        pipe.expire(_meta_key(session_id), int(retain_s))
        pipe.expire(_chunks_key(session_id), int(retain_s))
        pipe.srem(ACTIVE, session_id)
        pipe.execute()
    bus.signal(chunk_signal(session_id))


class Flusher:
    """The one thread of a process that hands Redis the chunks its runs published (see the module's docstring)."""

    def __init__(self, stopped: threading.Event) -> None:
        self._lock = threading.Lock()
        self._dirty: dict[int, RedisRun] = {}  # id -> run, in the order they were marked
        self._woken = threading.Event()
        self._stopped = stopped
        self.thread = threading.Thread(target=self._loop, name="run-chunks", daemon=True)
        self.thread.start()

    def mark(self, run: RedisRun) -> None:
        with self._lock:
            self._dirty[id(run)] = run
        self._woken.set()

    def wake(self) -> None:
        self._woken.set()

    def _loop(self) -> None:
        while True:
            self._woken.wait(RETRY_FLUSH_S)
            self._woken.clear()
            stopping = self._stopped.is_set()  # one last pass after the stop, for what was published before it
            with self._lock:
                runs, self._dirty = list(self._dirty.values()), {}
            failed = []
            for run in runs:
                try:
                    if not run.flush():
                        failed.append(run)
                except Exception:  # one run's failure must not stop the others' chunks
                    log.exception("run %s: flushing its chunks failed", run.session_id)
                    failed.append(run)
            if stopping:
                return
            if failed:  # retried after RETRY_FLUSH_S, unless a publish marks them (or others) sooner
                with self._lock:
                    for run in failed:
                        self._dirty.setdefault(id(run), run)


class RedisRunRegistry(RunRegistry):
    def __init__(self, bus: Bus, leases: RunLeases | None = None, retain_s: float = RETAIN_S,
                 lease_ttl_s: float = LEASE_TTL_S) -> None:
        self.bus = bus
        super().__init__(leases, owner=bus.process, retain_s=retain_s, lease_ttl_s=lease_ttl_s)
        bus.watch(self._on_signal)
        threading.Thread(target=self._poll_cancels, name="run-cancels", daemon=True).start()
        self._flusher = Flusher(self.stopped)
        self.background.append(self._flusher.thread)

    def _new_run(self, session_id: str) -> Run:
        run = RedisRun(self.bus, session_id, driven_here=True, retain_s=self._retain_s, flusher=self._flusher)
        run.start(self.owner)
        return run

    def _local(self, session_id: str) -> Run | None:
        with self._lock:
            return self._runs.get(session_id)

    def get(self, session_id: str) -> Run | None:
        local = self._local(session_id)
        if local is not None:
            return local
        if self.bus.redis.sismember(ACTIVE, session_id):
            return RedisRun(self.bus, session_id, driven_here=False)
        return None

    def recent(self, session_id: str) -> Run | None:
        local = self._local(session_id)
        if local is not None:
            return local
        if self.bus.redis.exists(_meta_key(session_id)):
            return RedisRun(self.bus, session_id, driven_here=False)
        return None

    def active(self) -> list[Run]:
        with self._lock:
            local = dict(self._runs)
        ids = self.bus.redis.smembers(ACTIVE)
        return [local.get(sid) or RedisRun(self.bus, sid, driven_here=False) for sid in sorted(ids | set(local))]

    def end_abandoned(self, session_id: str, message: str) -> None:
        """End the chunk stream of a run whose process died (its session was just recovered)."""
        if self._local(session_id) is not None:
            return
        self.bus.redis.rpush(_chunks_key(session_id), _sealed_chunk(self.bus, session_id, chunks.error(message).to_json()))
        mark_done(self.bus, session_id, self._retain_s)

    def _on_signal(self, key: str) -> None:
        if key.startswith("cancel:"):
            run = self._local(key[len("cancel:"):])
            if run is not None:
                run.cancel.set()

    def close(self) -> None:
        super().close()
        self._flusher.wake()
        self._flusher.thread.join(5)  # what the runs published goes out before the bus closes
        self.bus.close()

    def _poll_cancels(self) -> None:
        """The fallback for a cancel whose wake-up was lost (pub/sub is at most once): every run driven
        here, in one round trip."""
        while not self.stopped.wait(POLL_S):
            with self._lock:
                runs = [run for run in self._runs.values() if not run.cancel.is_set()]
            if not runs:
                continue
            try:
                marks = self.bus.redis.mget([_cancel_key(run.session_id) for run in runs])
            except redis.RedisError:
                continue
            for run, raw in zip(runs, marks, strict=True):
                if raw is not None and self.bus.unseal(raw, _cancel_key(run.session_id), RETAIN_S) == "1":
                    run.cancel.set()
