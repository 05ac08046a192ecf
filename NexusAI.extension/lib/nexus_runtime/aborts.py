"""Aborts of running scripts: the cloud's `abort` (the run was cancelled) reaching a script that runs on
Revit's main thread. The script cannot be killed there; it stops at its next checkpoint instead: the same
checks that enforce its deadline (deadline.py: every line of the script's own code, the head of every loop
body, handler and function) raise ScriptCancelled once its flag is set, and the executor rolls the
transaction back. A script inside one long Revit API call stops when that call returns. Plain Python."""
import threading


class AbortFlag(object):
    """Set once, from any thread, when the run behind one request was cancelled."""

    def __init__(self):
        self._event = threading.Event()

    def set(self):
        self._event.set()

    def is_set(self):
        return self._event.is_set()


class AbortBoard(object):
    """The flags of the scripts running now, by request id."""

    def __init__(self):
        self._flags = {}
        self._lock = threading.Lock()

    def start(self, request_id):
        """Main thread, as a script starts: its flag (an abort from now on sets it)."""
        flag = AbortFlag()
        with self._lock:
            self._flags[request_id] = flag
        return flag

    def finish(self, request_id):
        with self._lock:
            self._flags.pop(request_id, None)

    def abort(self, request_id):
        """Connection thread: stop the script of `request_id` at its next checkpoint; False if none runs."""
        with self._lock:
            flag = self._flags.get(request_id)
        if flag is None:
            return False
        flag.set()
        return True
