"""Host connections across processes: which process holds a host's websocket, and commands routed to it.

Same methods as cloud.hostlink.HostDirectory. A process that accepts a host's websocket records itself
as the host's owner in Redis under a key that expires unless heartbeats refresh it, so a dead process's
hosts vanish within HOST_TTL_S and the host reconnects to any process. A command for a host held
elsewhere is published to the owner's inbox; no subscriber (the owner is gone) fails fast.

A host that reconnects to another process takes its id over there: the new owner tells the previous one,
which forgets its stale connection (its socket loop then sees the id held elsewhere and closes it), and a
heartbeat never re-advertises a connection whose id another process now owns.

A host whose websocket closes is signalled to every process (`host_signal`): the calls waiting for its
answers look at once (see cloud.distributed.redis_rendezvous), so none of them needs to check every second.

A host's record and its queued on-connect messages are sealed with the deployment's secret
(cloud.distributed.signing), the record naming its owner: a record this deployment did not write, or one
that names another owner than the owner key, is no host (commands are never routed by it).
"""
from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import redis

from cloud.distributed.bus import PREFIX, Bus
from cloud.distributed.unanswered import UnansweredWrites
from cloud.hostlink import IDLE, HostActivity, HostConnection, HostDirectory, HostUnavailable
from cloud.hosts.hello import Hello

log = logging.getLogger(__name__)

HOST_TTL_S = 30
LOOKUP_CACHE_S = 0.5  # a remote host's record is re-read at most this often (waiting calls ask often)
ALL_HOSTS = PREFIX + "hosts"
ON_CONNECT_KEEP_S = 7 * 86400
ACTIVITY_KEEP_S = 7 * 86400

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1], KEYS[2]) end
return 0
"""

# KEYS: owner key. ARGV: this process, ttl. Refresh the ownership only if nobody else took the host over.
_REFRESH = """
local owner = redis.call('GET', KEYS[1])
if owner == false or owner == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
return 0
"""


# KEYS: activity key. ARGV: the request whose activity may be replaced, the new record ('' clears it), ttl.
_REPLACE_ACTIVITY = """
local current = redis.call('GET', KEYS[1])
if not current or cjson.decode(current)['request_id'] ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3]) end
return 1
"""


def host_signal(host_id: str) -> str:
    """The wake-up sent when the host's websocket closes on the process that held it."""
    return f"host:{host_id}"


def _owner_key(host_id: str) -> str:
    return f"{PREFIX}host:{host_id}:owner"


def _info_key(host_id: str) -> str:
    return f"{PREFIX}host:{host_id}:info"


def _user_key(user_name: str) -> str:
    return f"{PREFIX}user:{user_name}:hosts"


def _activity_key(host_id: str) -> str:
    return f"{PREFIX}host:{host_id}:activity"


def _on_connect_key(host_id: str) -> str:
    return f"{PREFIX}host:{host_id}:on_connect"


class RedisHostDirectory(HostDirectory):
    def __init__(self, bus: Bus) -> None:
        super().__init__()
        self.bus = bus
        self._release = bus.redis.register_script(_RELEASE)
        self._refresh = bus.redis.register_script(_REFRESH)
        self._activity_writes = UnansweredWrites(bus.redis)
        self._cache: dict[str, tuple[float, HostConnection | None]] = {}
        self._refreshing: set[str] = set()  # host ids whose record a call is reading from Redis now
        bus.on("host_cmd", self._deliver_here)
        bus.on("host_taken", self._taken_over)
        bus.watch(self._on_signal)
        threading.Thread(target=self._heartbeat, name="host-heartbeat", daemon=True).start()

    def register(self, user_name: str, hello: dict[str, Any], send_json: Any) -> HostConnection:
        connection = super().register(user_name, hello, send_json)
        self._cache.pop(connection.host_id, None)
        previous = self.bus.redis.set(_owner_key(connection.host_id), self.bus.process, ex=HOST_TTL_S, get=True)
        self._describe([connection])
        if previous and previous != self.bus.process:  # it reconnected here: its old process lets go
            try:
                self.bus.send_to(previous, {"kind": "host_taken", "host_id": connection.host_id,
                                            "by": self.bus.process})
            except redis.RedisError as exc:  # that process's heartbeat finds out by itself
                log.warning("host %s: could not tell its previous process: %s", connection.host_id, exc)
        return connection

    def _describe(self, connections: list[HostConnection]) -> None:
        with self.bus.redis.pipeline() as pipe:
            for c in connections:
                record = json.dumps({"user": c.user_name, "hello": dict(c.hello), "connected_at": c.connected_at,
                                     "last_seen": c.last_seen, "owner": self.bus.process})
                pipe.set(_info_key(c.host_id), self.bus.seal(record, _info_key(c.host_id)), ex=HOST_TTL_S)
                pipe.sadd(_user_key(c.user_name), c.host_id)
                pipe.sadd(ALL_HOSTS, c.host_id)
            pipe.execute()

    def _advertise(self, connections: list[HostConnection]) -> None:
        """Refresh this process's hosts; a host another process took over meanwhile is forgotten here."""
        kept = []
        for c in connections:
            if self._refresh(keys=[_owner_key(c.host_id)], args=[self.bus.process, HOST_TTL_S]):
                kept.append(c)
            else:
                self._forget(c, "another server process holds its connection now")
        if kept:
            self._describe(kept)

    def _taken_over(self, body: dict[str, Any]) -> None:
        connection = self.get_local(body["host_id"])
        if connection is not None:
            self._forget(connection, f"it reconnected to {body.get('by')}")

    def _forget(self, connection: HostConnection, why: str) -> None:
        """Drop a stale local connection without touching Redis (the id is someone else's now). The socket's
        own loop sees the id held elsewhere and closes it."""
        log.info("host %s: its connection here is stale (%s); closing it", connection.host_id, why)
        HostDirectory.unregister(self, connection)
        self._cache.pop(connection.host_id, None)

    def unregister(self, connection: HostConnection) -> None:
        mine = self.get_local(connection.host_id) is connection
        super().unregister(connection)
        if mine:
            try:
                self._release(keys=[_owner_key(connection.host_id), _info_key(connection.host_id)],
                              args=[self.bus.process])
            except redis.RedisError as exc:  # the keys expire on their own
                log.warning("host %s: could not release its Redis record: %s", connection.host_id, exc)
            self.bus.signal(host_signal(connection.host_id))

    def _on_signal(self, key: str) -> None:
        """A host's socket closed on another process: its cached record goes before its waiting calls look."""
        if key.startswith("host:"):
            self._cache.pop(key[len("host:"):], None)

    def get_local(self, host_id: str | None) -> HostConnection | None:
        return super().get(host_id)

    def get(self, host_id: str | None) -> HostConnection | None:
        local = super().get(host_id)
        if local is not None or not host_id:
            return local
        cached = self._cache.get(host_id)
        if cached is not None and (cached[0] > time.monotonic() or host_id in self._refreshing):
            return cached[1]  # fresh, or being re-read by another call: every waiting call asks, one reads
        self._refreshing.add(host_id)
        try:
            remote = self._remote(host_id)
        finally:
            self._refreshing.discard(host_id)
        self._cache[host_id] = (time.monotonic() + LOOKUP_CACHE_S, remote)
        return remote

    def _remote(self, host_id: str) -> HostConnection | None:
        try:
            owner, info = self.bus.redis.mget(_owner_key(host_id), _info_key(host_id))
        except redis.RedisError as exc:
            log.warning("host %s: Redis unreachable for its lookup: %s", host_id, exc)
            return None
        if owner is None or info is None or owner == self.bus.process:
            return None
        text = self.bus.unseal(info, _info_key(host_id))
        record = json.loads(text) if text is not None else None
        if record is None or record.get("owner") != owner:
            if record is not None:
                log.warning("host %s: its owner key names %s, its signed record %s; not routed", host_id, owner,
                            record.get("owner"))
            return None
        connection = HostConnection(host_id, record["user"], Hello.parse(record["hello"]),
                                    lambda message: self._send_remote(owner, host_id, message),
                                    connected_at=record["connected_at"], last_seen=record["last_seen"])
        return connection

    def _send_remote(self, owner: str, host_id: str, message: dict[str, Any]) -> None:
        if self.bus.send_to(owner, {"kind": "host_cmd", "host_id": host_id, "message": message}) == 0:
            self._cache.pop(host_id, None)
            raise HostUnavailable(f"host {host_id}: the server process holding its connection is gone")

    def _deliver_here(self, body: dict[str, Any]) -> None:
        try:
            HostDirectory.send(self, body["host_id"], body["message"])
        except HostUnavailable as exc:
            log.warning("a command routed here for host %s was not delivered: %s", body["host_id"], exc)

    def send(self, host_id: str, message: dict[str, Any]) -> HostConnection:
        local = super().get(host_id)
        if local is not None:
            return super().send(host_id, message)
        connection = self.get(host_id)
        if connection is None:
            raise HostUnavailable(f"host {host_id} is not connected")
        try:
            connection.send_json(message)
        except redis.RedisError as exc:
            raise HostUnavailable(f"host {host_id} could not be reached: {exc}") from exc
        return connection

    def for_user(self, user_name: str) -> list[HostConnection]:
        local = super().for_user(user_name)
        seen = {c.host_id for c in local}
        try:
            ids = self.bus.redis.smembers(_user_key(user_name))
        except redis.RedisError:
            return local
        remote = [c for c in (self.get(h) for h in sorted(ids - seen)) if c is not None and c.user_name == user_name]
        return local + remote

    def all(self) -> list[HostConnection]:
        local = super().all()
        seen = {c.host_id for c in local}
        try:
            ids = self.bus.redis.smembers(ALL_HOSTS)
        except redis.RedisError:
            return local
        return local + [c for c in (self.get(h) for h in sorted(ids - seen)) if c is not None]

    def owner(self, host_id: str) -> str | None:
        local = super().owner(host_id)
        if local is not None:
            return local
        connection = self.get(host_id)
        return connection.user_name if connection else None

    def note_activity(self, host_id: str, activity: HostActivity, replacing: str | None = None) -> None:
        """In Redis too, so every process's host list shows it (the run may be driven by another process): sent
        without waiting for Redis's reply (`UnansweredWrites`), in the order noted."""
        super().note_activity(host_id, activity, replacing)
        key = _activity_key(host_id)
        record = "" if activity.state == IDLE else json.dumps({**activity.as_json(), "request_id": activity.request_id})
        try:
            if replacing is not None:  # compare and replace in Redis
                self._activity_writes.send("EVAL", _REPLACE_ACTIVITY, 1, key, replacing, record, ACTIVITY_KEEP_S)
            elif record:
                self._activity_writes.send("SET", key, record, "EX", ACTIVITY_KEEP_S)
            else:
                self._activity_writes.send("DEL", key)
        except (redis.RedisError, OSError) as exc:  # this process's own copy still says it
            log.warning("host %s: could not record its activity in Redis: %s", host_id, exc)

    def activity(self, host_id: str) -> HostActivity:
        try:
            raw = self.bus.redis.get(_activity_key(host_id))
        except redis.RedisError:
            return super().activity(host_id)
        return HostActivity.from_json(json.loads(raw)).current() if raw else HostActivity()

    def send_on_connect(self, host_id: str, message: dict[str, Any]) -> None:
        self.bus.redis.rpush(_on_connect_key(host_id), self.bus.seal(json.dumps(message), _on_connect_key(host_id)))
        self.bus.redis.expire(_on_connect_key(host_id), ON_CONNECT_KEEP_S)

    def take_on_connect(self, host_id: str) -> list[dict[str, Any]]:
        with self.bus.redis.pipeline() as pipe:
            pipe.lrange(_on_connect_key(host_id), 0, -1)
            pipe.delete(_on_connect_key(host_id))
            raw, _ = pipe.execute()
        opened = (self.bus.unseal(m, _on_connect_key(host_id), ON_CONNECT_KEEP_S) for m in raw)
        return [json.loads(m) for m in opened if m is not None]

    def _heartbeat(self) -> None:
        while not self.bus.closed.wait(HOST_TTL_S / 3):
            try:
                self._advertise(super().all())
            except redis.RedisError as exc:  # next beat retries; the keys outlive two missed beats
                log.warning("host heartbeat to Redis failed: %s", exc)
