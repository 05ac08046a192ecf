"""A job: one command waiting for Revit's main thread, with a pickup deadline and a race-free abandon.

A job leaves PENDING exactly once: either the main-thread handler claims it (RUNNING, then DONE) or the
waiting side abandons it at its deadline (ABANDONED, answered "Revit is busy"). Both transitions take
the same lock, so a handler that arrives late can never run a job whose caller was already told no.
"""
import threading
import time
from collections import deque

from nexus_runtime import protocol

PENDING = "pending"
RUNNING = "running"
DONE = "done"
ABANDONED = "abandoned"

monotonic = getattr(time, "monotonic", time.time)


class Job(object):
    def __init__(self, message, deadline, created):
        self.message = message
        self.kind = message.get("type")
        self.request_id = message.get("request_id")
        self.deadline = deadline
        self.created = created
        self.state = PENDING
        self.claimed_at = None  # when the main thread took it: the ExternalEvent round trip ends here
        self.reply = None
        self._lock = threading.Lock()
        self._settled = threading.Event()  # left PENDING
        self._done = threading.Event()  # reply available

    def claim(self, now):
        """Main thread: take the job to run it. False when abandoned or already past its deadline."""
        with self._lock:
            if self.state != PENDING:
                return False
            if now > self.deadline:
                self._abandon_locked(now)
                return False
            self.state = RUNNING
            self.claimed_at = now
            self._settled.set()
            return True

    def abandon(self, now):
        """Waiting side: give up on a job Revit has not picked up. False if it is already running."""
        with self._lock:
            if self.state != PENDING:
                return False
            self._abandon_locked(now)
            return True

    def refuse(self, reply):
        """Waiting side: the job can never run (Revit refuses the event); answer `reply`. False if running."""
        with self._lock:
            if self.state != PENDING:
                return False
            self.state = ABANDONED
            self.reply = reply
            self._settled.set()
            self._done.set()
            return True

    def _abandon_locked(self, now):
        self.state = ABANDONED
        self.reply = protocol.busy_reply_for(self.message, (now - self.created) * 1000.0)
        self._settled.set()
        self._done.set()

    def finish(self, reply):
        with self._lock:
            if self.state != RUNNING:
                return
            self.state = DONE
            self.reply = reply
            self._done.set()

    def wait_settled(self, timeout):
        return self._settled.wait(max(0.0, timeout))

    def wait_done(self, timeout=None):
        return self._done.wait(timeout)


class JobQueue(object):
    def __init__(self):
        self._jobs = deque()
        self._lock = threading.Lock()

    def put(self, job):
        with self._lock:
            self._jobs.append(job)

    def find(self, request_id):
        """The queued job of `request_id` (still queued, not yet taken by the main thread), or None."""
        with self._lock:
            for job in self._jobs:
                if job.request_id == request_id:
                    return job
            return None

    def take(self, kinds=None):
        """The oldest job (of one of `kinds`, when given), or None."""
        with self._lock:
            for job in self._jobs:
                if kinds is None or job.kind in kinds:
                    self._jobs.remove(job)
                    return job
            return None

    def __len__(self):
        with self._lock:
            return len(self._jobs)
