"""Issue 23, M5: Redis carries only messages this deployment signed (NEXUS_SECRET).

The two attacks of the issue, made with a plain Redis client and no NexusAI token, are dropped and logged:
a forged `host_cmd` published to a server process's inbox reaches no host, and a tool result written into
a pending request's hash is never accepted (the legitimate answer still is). The legitimate path works, also
through a password-protected Redis and over TLS (`rediss://`). Without NEXUS_SECRET a server with
NEXUS_REDIS_URL refuses to start, in one line."""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import redis as redis_client

from cloud.distributed.bus import Bus
from cloud.distributed.redis_rendezvous import RedisToolResultChannel, wake_key
from cloud.distributed.signing import Signer
from cloud.rendezvous import Delivery
from cloud.store import Store
from tests.conftest import FAST
from tests.scale.servers import free_port, wait_port
from tests.support.client import Client, write_script
from tests.support.server import RunningServer, running_server
from tests.support.spine import collect, say
from tests.support.test_host import TestHost
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "print('forged: this must never run')"


def _dropped(caplog: pytest.LogCaptureFixture, what: str) -> bool:
    return any("dropped a value" in r.getMessage() and what in r.getMessage() for r in caplog.records)


def test_a_forged_host_command_published_to_a_process_inbox_reaches_no_host(instances, redis, caplog):
    a, b = instances
    caplog.set_level(logging.WARNING, logger="cloud.distributed.signing")
    host = TestHost(a.ws_url, a.token("alice")).start()
    try:
        host_id = a.wait_for_host("alice")
        attacker = redis_client.Redis.from_url(redis.url)  # Redis access, no NexusAI token
        command = {"kind": "host_cmd", "host_id": host_id,
                   "message": {"type": "execute", "request_id": "forged-1", "code": SCRIPT, "policy": "auto"}}
        inbox = f"nx:proc:{a.state.runs.owner}"
        assert attacker.publish(inbox, json.dumps(command)) == 1  # A's bus is subscribed: it receives it
        forged_sig = Signer(b"another-secret-" + b"x" * 32).seal(json.dumps(command), inbox)
        assert attacker.publish(inbox, forged_sig) == 1

        def drops() -> list[str]:
            return [r.getMessage() for r in caplog.records if "dropped a value" in r.getMessage()
                    and inbox in r.getMessage()]

        wait_until(lambda: len(drops()) >= 2, timeout=10)
        messages = drops()
        assert any("unsigned" in m for m in messages) and any("bad signature" in m for m in messages), messages
        time.sleep(0.5)
        assert not [m for m in host.received if m.get("request_id") == "forged-1"], "the forged command ran"
        # the legitimate path: a run driven on B reaches the host on A, through A's inbox
        spec = write_script(Path(os.environ["NEXUS_SCRIPTED_DIRS"]) / "count.json",
                            [collect("print(len(doc.by_class('Door')))"), say("Six.")])
        on_b = Client(b.url, b.token("alice"))
        stream = on_b.run(on_b.new_session(host_id, spec), "count")
        assert stream.last == {"type": "Complete", "content": "Six."}
    finally:
        host.stop()


@pytest.fixture
def rendezvous(redis, database_url) -> Iterator[tuple[RedisToolResultChannel, RedisToolResultChannel]]:
    with ExitStack() as stack:
        channels = []
        for name in ("proc-a", "proc-b"):
            bus = Bus(redis.url, process=name)
            stack.callback(bus.close)
            store = Store(database_url)
            stack.callback(store.close)
            channels.append(RedisToolResultChannel(bus, store.deliveries))
        yield channels[0], channels[1]


def test_a_tool_result_written_into_a_pending_hash_is_never_accepted(rendezvous, redis, caplog):
    a, b = rendezvous
    caplog.set_level(logging.WARNING)
    attacker = redis_client.Redis.from_url(redis.url, decode_responses=True)
    a.open("s1", "toolu_1.run", "toolu_1", "h1")
    key = "nx:pending:s1"
    forged = {"ok": True, "committed": True, "output": "forged"}
    attacker.hset(key, "result", json.dumps(forged))  # the attack
    attacker.publish("nx:events", wake_key("s1"))  # and an unsigned wake-up
    answer = a.await_answer("s1", 3, threading.Event())
    assert answer.result is None and answer.missing == "timeout"
    assert _dropped(caplog, f"{key}:result:") and _dropped(caplog, "nx:events")

    a.open("s2", "toolu_2.run", "toolu_2", "h1")
    attacker.hset("nx:pending:s2", "result", json.dumps(forged))
    waited: list = []
    waiter = threading.Thread(target=lambda: waited.append(a.await_answer("s2", 30, threading.Event())))
    waiter.start()
    assert b.deliver_tool_result("s2", "toolu_2", {"ok": True, "output": "real"}) is Delivery.ACCEPTED
    waiter.join(40)
    assert waited[0].result == {"ok": True, "output": "real"}  # the forged copy neither won nor blocked it

    # a pending request rewritten by the attacker (no signature) accepts nothing
    a.open("s3", "toolu_3.run", "toolu_3", "h1")
    attacker.hset("nx:pending:s3", mapping={"host_id": "", "sig": "s1.0.0.forged"})
    assert b.deliver_from_host("toolu_3.run", "attacker-host", {"ok": True}) is Delivery.NOT_PENDING
    assert any("not written by this deployment" in r.getMessage() for r in caplog.records)
    a.close("s3")


def test_a_server_with_redis_and_no_secret_refuses_to_start_in_one_line(tmp_path, redis):
    env = {k: v for k, v in os.environ.items() if k != "NEXUS_SECRET"}
    env.update(NEXUS_REDIS_URL=redis.url, NEXUS_DB=str(tmp_path / "n.db"))
    for extra in ([], ["--workers", "2"]):
        done = subprocess.run([sys.executable, "-m", "cloud.cli", "serve", "--port", str(free_port()), *extra],
                              capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert lines[0].startswith("error: NEXUS_REDIS_URL is set but NEXUS_SECRET is not"), lines
    short = subprocess.run([sys.executable, "-m", "cloud.cli", "serve", "--port", str(free_port())],
                           capture_output=True, text=True, cwd=ROOT, env={**env, "NEXUS_SECRET": "short"}, timeout=120)
    assert short.returncode == 2 and "NEXUS_SECRET is 5 characters long" in short.stderr, short.stderr


@contextmanager
def _redis_with(folder: Path, *options: str, port: int) -> Iterator[subprocess.Popen]:
    folder.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([shutil.which("redis-server") or "/usr/bin/redis-server", "--bind", "127.0.0.1",
                                "--save", "", "--appendonly", "no", "--dir", str(folder), *options],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, process, "redis-server")
        yield process
    finally:
        process.terminate()
        process.wait(10)


def _two_instances_complete_a_run(tmp_path: Path, scripts_dir: Path, url: str, database_url: str,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_REDIS_URL", url)
    with ExitStack() as stack:
        a: RunningServer = stack.enter_context(running_server(tmp_path, db_path=database_url, **FAST))
        b: RunningServer = stack.enter_context(running_server(tmp_path, db_path=database_url, **FAST))
        host = TestHost(a.ws_url, a.token("alice")).start()
        stack.callback(host.stop)
        host_id = a.wait_for_host("alice")
        spec = write_script(scripts_dir / "count.json", [collect("print(len(doc.by_class('Door')))"), say("Six.")])
        on_b = Client(b.url, b.token("alice"))
        stream = on_b.run(on_b.new_session(host_id, spec), "count")
        assert stream.last == {"type": "Complete", "content": "Six."}
        assert [h["host_id"] for h in on_b.call("GET", "/api/hosts").json()["hosts"]] == [host_id]


def test_a_password_protected_redis_works(tmp_path, scripts_dir, database_url, monkeypatch):
    port = free_port()
    with _redis_with(tmp_path / "redis-pw", "--port", str(port), "--requirepass", "s3cret-pw", port=port):
        with pytest.raises(redis_client.AuthenticationError):
            redis_client.Redis(port=port).ping()
        _two_instances_complete_a_run(tmp_path, scripts_dir, f"redis://:s3cret-pw@127.0.0.1:{port}/0", database_url,
                                      monkeypatch)


def test_redis_over_tls_works(tmp_path, scripts_dir, database_url, monkeypatch):
    certs = tmp_path / "tls"
    certs.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(certs / "key.pem"),
                    "-out", str(certs / "cert.pem")], check=True, capture_output=True)
    port = free_port()
    with _redis_with(tmp_path / "redis-tls", "--port", "0", "--tls-port", str(port), "--tls-cert-file",
                     str(certs / "cert.pem"), "--tls-key-file", str(certs / "key.pem"), "--tls-ca-cert-file",
                     str(certs / "cert.pem"), "--tls-auth-clients", "no", "--requirepass", "tls-pw", port=port):
        url = f"rediss://:tls-pw@127.0.0.1:{port}/0?ssl_ca_certs={certs / 'cert.pem'}"
        assert redis_client.Redis.from_url(url).ping()
        _two_instances_complete_a_run(tmp_path, scripts_dir, url, database_url, monkeypatch)
