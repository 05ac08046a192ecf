"""What a run needs besides the Revit API, shared by the runtime's parts: the held runs, a way to send a
message from the main thread, serving queued jobs while a change is held, the edits made between turns,
the settings, and the ids of the last change kept in each document. Plain Python."""
from contextlib import contextmanager

from nexus_runtime.aborts import AbortBoard
from nexus_runtime.external_changes import ExternalChanges
from nexus_runtime.holds import HoldRegistry
from nexus_runtime.settings import Settings

KEPT_IDS_REMEMBERED = 50


class RunServices(object):
    def __init__(self, log, settings=None, holds=None, send=None, external=None, aborts=None):
        self.log = log
        self.holds = holds or HoldRegistry()
        self.aborts = aborts or AbortBoard()  # the running scripts an abort can stop
        self.external = external or ExternalChanges()
        self._settings = settings or Settings
        self._send = send
        self._pump = None
        self._kept = {}
        self.run_active = False  # DocumentChanged during a run comes from the run, not from the person

    def settings(self):
        return self._settings()

    def send(self, message):
        """Main thread: hand a message to the connection without waiting on the network."""
        if self._send is None:
            raise RuntimeError("this runtime has no connection to send a held result on")
        self._send(message)

    def can_send(self):
        return self._send is not None

    def attach_pump(self, pump):
        """`pump(context)` runs the jobs queued for the main thread that may run during a hold; returns how many."""
        self._pump = pump

    def pump(self, context):
        return self._pump(context) if self._pump is not None else 0

    def remember_kept(self, document_key, element_ids):
        self._kept[document_key] = [int(i) for i in element_ids][:KEPT_IDS_REMEMBERED]

    def kept_ids(self, document_key):
        return list(self._kept.get(document_key, []))

    @contextmanager
    def running(self):
        self.run_active = True
        try:
            yield self
        finally:
            self.run_active = False
