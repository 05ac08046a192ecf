"""Held automations (preview-and-approve): the state of each held run, and who may decide it.

A held run goes PENDING -> DECIDED -> ANSWERED:
- PENDING: the script's transaction is committed inside a TransactionGroup that is still open, the
  execute_result with `held: true` has been sent, and Revit's main thread waits (serving the cloud's
  export_view meanwhile).
- DECIDED: keep or discard, by exactly one of: the cloud's `decide` message (which only the person's
  approval in the chat page triggers), the person in Revit's review window, or the hold timeout
  (discard). The first decision wins; nothing else (no field of any other message) can decide.
  The main thread then assimilates or rolls back the group and settles the final execute_result.
- ANSWERED: the final execute_result has gone to the cloud. The cloud always sends a `decide` after a
  held result; it is answered with the final result, whoever decided, once both the decide has arrived
  and the result is settled (whichever comes last sends it).

Plain Python: no Revit API, thread-safe (the main thread, the connection thread and the router's
workers all touch it).
"""
import threading

from nexus_runtime.jobs import monotonic

PENDING = "pending"
DECIDED = "decided"
ANSWERED = "answered"

KEEP = "keep"
DISCARD = "discard"
DECISIONS = (KEEP, DISCARD)

BY_CLOUD = "the person in the chat page"
BY_REVIT = "the person in Revit"
BY_TIMEOUT = "the hold timeout"

UNKNOWN = "unknown"  # on_decide: nothing is held under this request id
LATER = "later"  # on_decide: the main thread will answer once the decision is applied
NOW = "now"  # on_decide: here is the final result, send it

SERVED_WHILE_HELD = ("export_view", "context", "show_elements")  # jobs that change no model, served while held
SETTLED_KEPT_S = 3600.0  # how long a settled result waits for the cloud's decide before it is forgotten


class HeldRun(object):
    def __init__(self, request_id, deadline):
        self.request_id = request_id
        self.deadline = deadline
        self.state = PENDING
        self.decision = None
        self.decided_by = None
        self.final = None  # the settled execute_result, once the main thread applied the decision
        self.settled_at = None
        self._cloud_asked = False
        self._lock = threading.Lock()

    def decide(self, decision, by):
        """Record a decision; False when one was already taken (the first one wins)."""
        if decision not in DECISIONS:
            raise ValueError("decision must be keep or discard")
        with self._lock:
            return self._decide_locked(decision, by)

    def _decide_locked(self, decision, by):
        if self.decision is not None:
            return False
        self.decision = decision
        self.decided_by = by
        if self.state == PENDING:
            self.state = DECIDED
        return True

    def shorten(self, deadline):
        """Bring the hold timeout forward to `deadline` (never later than it was)."""
        with self._lock:
            self.deadline = min(self.deadline, deadline)

    def expire(self, now):
        """Main thread: past the hold deadline with no decision, discard."""
        with self._lock:
            if self.decision is None and now >= self.deadline:
                self._decide_locked(DISCARD, BY_TIMEOUT)
            return self.decision is not None

    def cloud_asks(self, decision):
        """Connection thread: the cloud's decide arrived. The final result when it can be sent now, else None."""
        with self._lock:
            self._decide_locked(decision, BY_CLOUD)
            self._cloud_asked = True
            if self.final is not None and self.state == DECIDED:
                self.state = ANSWERED
                return self.final
            return None

    def settle(self, final, now):
        """Main thread, after Assimilate or RollBack: the final result when the cloud already asked, else None."""
        with self._lock:
            self.final = final
            self.settled_at = now
            if self._cloud_asked and self.state == DECIDED:
                self.state = ANSWERED
                return final
            return None

    def is_waiting(self):
        """True while the main thread is still holding the transaction group open."""
        with self._lock:
            return self.final is None


class HoldRegistry(object):
    """The held runs of this Revit session, by request id (the cloud's decide reuses the execute's id)."""

    def __init__(self, clock=monotonic, settled_kept_s=SETTLED_KEPT_S):
        self._clock = clock
        self._settled_kept_s = settled_kept_s
        self._runs = {}
        self._lock = threading.Lock()

    def begin(self, request_id, timeout_s):
        now = self._clock()
        run = HeldRun(request_id, now + float(timeout_s))
        with self._lock:
            self._forget_stale(now)
            self._runs[request_id] = run
        return run

    def waiting(self):
        """True while some held run keeps Revit's main thread in its review loop."""
        with self._lock:
            runs = list(self._runs.values())
        return any(run.is_waiting() for run in runs)

    def current(self):
        """The held run the main thread is waiting on, if any (for the pane's status line)."""
        with self._lock:
            runs = list(self._runs.values())
        return next((run for run in runs if run.is_waiting()), None)

    def on_decide(self, request_id, decision):
        """The cloud's decide: (UNKNOWN, None), (LATER, None) or (NOW, final execute_result)."""
        if decision not in DECISIONS:
            return UNKNOWN, None
        with self._lock:
            run = self._runs.get(request_id)
        if run is None:
            return UNKNOWN, None
        final = run.cloud_asks(decision)
        if final is None:
            return LATER, None
        self._drop(run)
        return NOW, final

    def settle(self, run, final):
        """Main thread: the decision is applied. The final result to send now, or None (sent on decide)."""
        reply = run.settle(final, self._clock())
        if reply is not None:
            self._drop(run)
        return reply

    def _drop(self, run):
        with self._lock:
            if self._runs.get(run.request_id) is run:
                del self._runs[run.request_id]

    def _forget_stale(self, now):
        for request_id, run in list(self._runs.items()):
            if run.settled_at is not None and now - run.settled_at > self._settled_kept_s:
                del self._runs[request_id]


class ReviewPacing(object):
    """When the main thread, waiting on a held run, shows the review window.

    The cloud holds every automation of a host that can hold; under the `auto` policy it asks for the
    preview image and decides `keep` at once. So the window (and the isolate in the active view) only
    appears after `quiet_s` without any request for this run: a person is then expected to decide.
    """

    WAIT = "wait"
    SHOW_WINDOW = "show window"
    DONE = "done"

    def __init__(self, run, quiet_s, clock=monotonic):
        self._run = run
        self._quiet_s = float(quiet_s)
        self._clock = clock
        self._last_activity = clock()
        self.window_shown = False

    def note_activity(self):
        self._last_activity = self._clock()

    def next_step(self):
        now = self._clock()
        if self._run.expire(now):
            return self.DONE
        if not self.window_shown and now - self._last_activity >= self._quiet_s:
            return self.SHOW_WINDOW
        return self.WAIT

    def seconds_left(self):
        return max(0.0, self._run.deadline - self._clock())


def countdown_text(seconds):
    seconds = int(seconds + 0.5)
    return "{0}:{1:02d}".format(seconds // 60, seconds % 60)
