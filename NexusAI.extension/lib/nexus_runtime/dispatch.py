"""Getting a job onto Revit's main thread: one queue, one ExternalEvent, one job at a time.

Background threads call `serve(message)`: it queues the job, raises the event, wakes Revit (while the
person is away Revit raises no Idling, so a raised event would wait), and waits. A Raise() that throws is
retried with a short backoff; `Denied` is not: Revit denies the event of a handler that failed, for good,
so the job is answered at once with what to do (reload), and so is every later one. The main-thread
handler calls `drain(context)`, which runs queued jobs one after another and skips any that were
abandoned. Nothing here touches the Revit API: `raise_event`, `wake` and `run_job` are supplied by the
Revit-facing layer.
"""
import sys
import time
import traceback

from nexus_runtime import protocol
from nexus_runtime.backoff import Backoff
from nexus_runtime.jobs import Job, JobQueue, monotonic

RAISE_OK = ("Accepted", "Pending")  # Pending: already raised, the handler will drain this job too
DENIED = "Denied"
DENIED_MESSAGE = ("Revit refuses to run NexusAI's requests (ExternalEvent.Raise returned Denied: its handler "
                  "failed earlier). Reload pyRevit (pyRevit tab > Reload) or restart Revit, then retry.")


class Dispatcher(object):
    def __init__(self, run_job, log=None, clock=monotonic, sleep=time.sleep,
                 raise_backoff=None, default_pickup_timeout_s=20.0):
        self._run_job = run_job
        self._log = log
        self._clock = clock
        self._sleep = sleep
        self._raise_backoff = raise_backoff or (lambda: Backoff(0.05, 1.0, jitter=0.1))
        self._raise_event = None
        self._wake = None
        self.denied = False  # Revit denied the event: nothing runs until a reload
        self.queue = JobQueue()
        self.default_pickup_timeout_s = float(default_pickup_timeout_s)
        self.raise_results = []  # the last few Raise() outcomes, for the status line and tests

    def attach_event(self, raise_event, wake=None):
        """`raise_event()` raises the ExternalEvent and returns the ExternalEventRequest name; `wake()`
        nudges Revit's main thread so it idles and picks the event up."""
        self._raise_event = raise_event
        self._wake = wake

    def serve(self, message, pickup_timeout_s=None):
        """Background thread: run `message` on the main thread and return its reply (never raises)."""
        job = self.submit(message, pickup_timeout_s)
        return self.wait_for_reply(job)

    def submit(self, message, pickup_timeout_s=None):
        timeout = self.default_pickup_timeout_s if pickup_timeout_s is None else float(pickup_timeout_s)
        created = self._clock()
        job = Job(message, created + timeout, created)
        self.queue.put(job)
        if self._request_pickup(job) == DENIED:
            self.denied = True
            if job.refuse(protocol.failed_reply_for(message, "RevitDenied", DENIED_MESSAGE)):
                self._note("job {0} refused: ExternalEvent.Raise() returned Denied".format(job.request_id))
        return job

    def abandon_queued(self, request_id, reply):
        """Answer `reply` for the job of `request_id` if Revit has not picked it up yet (it then never runs);
        False when there is no such job or it already runs."""
        job = self.queue.find(request_id)
        return job is not None and job.refuse(reply)

    def wait_for_reply(self, job):
        if not job.wait_settled(job.deadline - self._clock()):
            if job.abandon(self._clock()):
                self._note("job {0} abandoned: Revit did not pick it up in time".format(job.request_id))
        job.wait_done()
        return job.reply

    def _request_pickup(self, job):
        backoff = self._raise_backoff()
        while True:
            status = self._raise_once()
            if status in RAISE_OK:
                self.denied = False
                self._wake_revit()
                return status
            if status == DENIED:
                return status
            remaining = job.deadline - self._clock()
            if remaining <= 0:
                return status
            self._note("ExternalEvent.Raise() returned {0}; retrying".format(status))
            self._sleep(min(backoff.next_delay(), remaining))

    def _raise_once(self):
        if self._raise_event is None:
            status = "NoEvent"
        else:
            try:
                status = str(self._raise_event())
            except Exception as exc:  # an exception from Raise() is treated like Denied
                status = "Failed: " + str(exc)
        self.raise_results = (self.raise_results + [status])[-20:]
        return status

    def _wake_revit(self):
        if self._wake is None:
            return
        try:
            self._wake()
        except Exception as exc:
            self._note("could not wake Revit: {0}".format(exc))

    def drain(self, context, kinds=None):
        """Main thread (inside the ExternalEvent handler): run every queued job that is still wanted (only
        those of `kinds` when given: a held run serves export_view while it waits). Returns how many ran."""
        ran = 0
        while True:
            job = self.queue.take(kinds)
            if job is None:
                return ran
            if not job.claim(self._clock()):
                continue
            ran += 1
            try:
                reply = self._run_job(job, context)
            except Exception:
                reply = protocol.failed_reply_for(job.message, "RuntimeFault", _describe_current_exception())
                self._note("job {0} failed inside the runtime".format(job.request_id))
            job.finish(reply)

    def _note(self, text):
        if self._log is not None:
            self._log.write(text)


def _describe_current_exception():
    kind, value = sys.exc_info()[:2]
    return "{0}: {1}\n{2}".format(getattr(kind, "__name__", "Exception"), value, traceback.format_exc())
