"""The distributed path: Dramatiq on Redis (docs/batch.md says why). `nexus batch` enqueues one message per
file; `nexus batch-worker` processes them on any machine that can read the batch's folder.

A message carries only the batch folder and the file: the manifest and the per-file results there are the
record, so a message delivered twice (a worker lost after finishing, before acknowledging) finds its result
and is not redone. A worker that dies mid-job stops heartbeating; after `heartbeat_timeout` the broker's
maintenance hands its unacknowledged messages to the other workers.

Each message is signed with the deployment's secret (NEXUS_SECRET, cloud.distributed.signing) over its
folder and file: a worker drops (and logs) a message this deployment did not enqueue.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import threading
from typing import Any

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker

from cloud.batch.jobs import load_manifest
from cloud.batch.worker import process_file, wait_for_hosts
from cloud.distributed.signing import signer_from_env
from cloud.store import Store

log = logging.getLogger(__name__)

NAMESPACE = "nexus-batch"
QUEUE = "files"
ACTOR = "nexus_batch_file"
HEARTBEAT_ENV = "NEXUS_BATCH_HEARTBEAT_S"  # how long a silent worker is trusted before its jobs move on
DEFAULT_HEARTBEAT_S = 30.0
MAINTENANCE_EVERY_FETCH = 1_000_000  # the broker's scale: requeue dead workers' messages on every fetch
JOB_TIME_LIMIT_MS = 2 * 60 * 60 * 1000
MAX_RETRIES = 3  # a job that raises (a crash of the worker code, not a failing file) is retried
MESSAGE_MAX_AGE_S = 30 * 86400  # a queued job may wait long for a worker; the signature, not its age, matters


def _job_text(state_dir: str, path: str) -> str:
    return json.dumps([state_dir, path])


def running_key(batch_id: str) -> str:
    return f"{NAMESPACE}:running:{batch_id}"


class BatchQueue:
    def __init__(self, url: str, store: Store | None = None) -> None:
        heartbeat_s = float(os.environ.get(HEARTBEAT_ENV, DEFAULT_HEARTBEAT_S))
        self.signer = signer_from_env()  # no secret, no queue
        self.redis = redis.Redis.from_url(url)
        self.broker = RedisBroker(url=url, namespace=NAMESPACE, heartbeat_timeout=int(heartbeat_s * 1000),
                                  maintenance_chance=MAINTENANCE_EVERY_FETCH)
        self.store = store
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self.actor = dramatiq.actor(self._process, broker=self.broker, actor_name=ACTOR, queue_name=QUEUE,
                                    max_retries=MAX_RETRIES, time_limit=JOB_TIME_LIMIT_MS)

    def ping(self) -> None:
        self.redis.ping()

    def enqueue(self, state_dir: str, paths: list[str]) -> None:
        folder = os.path.abspath(state_dir)
        for path in paths:
            self.actor.send(folder, path, self.signer.seal(_job_text(folder, path), ACTOR))

    def running(self, batch_id: str) -> list[str]:
        return [k.decode() for k in self.redis.hkeys(running_key(batch_id))]

    def _process(self, state_dir: str, path: str, signature: str = "") -> None:
        if self.store is None:
            raise RuntimeError("this queue was opened to enqueue, not to work")
        if self.signer.unseal(signature, ACTOR, MESSAGE_MAX_AGE_S) != _job_text(state_dir, path):
            log.warning("batch queue: dropped a job for %s in %s not enqueued by this deployment", path, state_dir)
            return
        spec = load_manifest(state_dir)
        key = running_key(spec.batch_id)
        self.redis.hset(key, path, self.name)
        try:
            process_file(spec, path, self.store, worker=self.name)
        finally:
            self.redis.hdel(key, path)

    def work(self, threads: int, stop: threading.Event) -> None:
        """Process jobs with `threads` threads until `stop` is set."""
        worker = dramatiq.Worker(self.broker, queues={QUEUE}, worker_threads=threads, worker_timeout=200)
        worker.queue_prefetch = threads  # no more held than can run: a lost worker strands fewer jobs
        worker.start()
        try:
            stop.wait()
        finally:
            worker.stop()
            wait_for_hosts()

    def close(self) -> Any:
        self.broker.close()
